"""`gpusem check FILE.gpuir -D N=...`: exit 0 when the analyses pass, 1 when they
reject (one line naming file:line:col, the rule and the message), 2 for bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
EX = ROOT / "examples" / "gpuir"
CONF = Path(__file__).parent / "conformance"


def gpusem(*args: str) -> tuple[int, str]:
    """Run the installed entry point in a subprocess (exit code, stdout + stderr)."""
    exe = Path(sys.executable).parent / "gpusem"
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("args,code,needle", [
    ((str(EX / "fence_broadcast.gpuir"),), 0, "ok:"),
    ((str(EX / "fence_broadcast.gpuir"), "-D", "N=4096"), 0, "N=4096"),
    ((str(EX / "tmp_broadcast.gpuir"),), 1, "[DistributedMemory] cross-thread register"),
    ((str(CONF / "syntax_error.gpuir"),), 2, "syntax_error.gpuir:4:37: syntax error"),
    ((str(EX / "fence_broadcast.gpuir"), "-D", "N=-1"), 2, "bad definition"),
    ((str(EX / "missing.gpuir"),), 2, "no such file"),
])
def test_exit_codes(args, code, needle) -> None:
    got, out = gpusem("check", *args)
    assert got == code, out
    assert needle in out
    assert "Traceback" not in out
