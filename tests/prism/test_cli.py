"""`gpusem check/run/compile/exec/step` on .prism files (issue 28: the verbs accept
Prism's surface, with surface spans in every error, exit codes as everywhere)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpusem.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "examples/prism/appendix_b/corrected/b2_sgemm_1_naive.prism"


def gpusem(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def test_verbs_accept_prism_files():
    res = gpusem("check", str(NAIVE))
    assert res.exit_code == 0 and res.output.startswith("ok: well-typed"), res.output
    res = gpusem("run", "--big-step", str(NAIVE))
    assert res.exit_code == 0 and "\nC = [13.0, 2.0, 1.0, 2.0, 9.0" in res.output
    res = gpusem("compile", str(NAIVE))
    assert res.exit_code == 0 and "__global__" in res.output
    # the CUDA's comments quote the .prism lines
    assert "line 30: tid : int @ thread[1] = bid * block_size + id()" in res.output
    res = gpusem("exec", "--backend", "cpu", str(NAIVE))
    assert res.exit_code == 0 and res.output.startswith("agree"), res.output
    res = gpusem("step", str(NAIVE), stdin="step\nquit\n")
    assert res.exit_code == 0 and "M : int @ grid[1]," in res.output


@pytest.mark.parametrize(("text", "code", "where"), [
    ("x : int @ grid[1] = (\n", 2, "t.prism:1:21: [Surface-Syntax]"),
    ('@prism("global")\n@requires(grid[1])\ndef k(a: ptr(int) @ grid[1]):\n'
     "    pass\n", 2, "t.prism:1:1: [Launch-Header]"),
    ("# launch: k blocks=1 threads=4\n# arg a = int[4]\n"
     '@prism("global")\n@requires(grid[1])\ndef k(a: ptr(int) @ grid[1]):\n'
     "    x : bool @ grid[1] = 1\n", 1, "t.prism:6:26: [T-Decl]"),
])
def test_errors_are_one_line_at_the_surface_span(tmp_path, text, code, where):
    f = tmp_path / "t.prism"
    f.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    res = subprocess.run([sys.executable, "-c", "from gpusem.cli.main import main; "
                          "main()", "check", "t.prism"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == code, res.stderr
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(where), lines
