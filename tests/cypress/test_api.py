"""`gpusem check` and `gpusem run` on `.cyp` files (api/cypress.py): exit 0 legal /
terminated, 1 illegal or a trap (one line per error, naming its rule), 2 bad input in
one `file:line:col` line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import contextlib
import io
import json
import sys

import pytest
from gpusem.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples/cypress"
GEMM = (EXAMPLES / "gemm.cyp").read_text()


def _gpusem(*argv: str) -> tuple[int, str, str]:
    """`gpusem ARGV` in-process, through main() (which turns errors into exit codes)."""
    out, err = io.StringIO(), io.StringIO()
    saved, sys.argv = sys.argv, ["gpusem", *argv]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    finally:
        sys.argv = saved
    return code, out.getvalue(), err.getvalue()


def test_check_prints_the_task_tree(tmp_path: Path) -> None:
    code, out, _ = _gpusem("check", str(EXAMPLES / "gemm.cyp"))
    assert code == 0
    assert out.startswith("ok: legal: 11 variants, 14 instances")
    assert "gemm_thread = gemm_thread<gemm, Leaf> @ THREAD" in out


def test_run_is_the_sequential_reading() -> None:
    code, out, _ = _gpusem("run", "--json", str(EXAMPLES / "gemm_reduction.cyp"))
    assert code == 0
    assert '"outcome": "terminated"' in out


def test_an_illegal_mapping_exits_1_naming_each_rule(tmp_path: Path) -> None:
    bad = tmp_path / "bad.cyp"
    bad.write_text(GEMM.replace("mems=[REGISTER, SHARED, SHARED]",
                                "mems=[NONE, SHARED, SHARED]"))
    for verb in ("check", "run"):
        code, out, err = _gpusem(verb, str(bad))
        assert code == 1 and out == ""
        (line,) = err.splitlines()
        assert line.startswith(f"{bad}:") and "[Mapping-None] none memory:" in line


def test_call_external_stops_the_reading(tmp_path: Path) -> None:
    ext = tmp_path / "ext.cyp"
    ext.write_text(GEMM.replace("    mma(C, A, B)\n",
                                '    call_external("CuTe_warpgroup_gemm", C, A, B)\n'))
    assert _gpusem("check", str(ext))[0] == 0  # legal: a leaf may call C++ (l.180)
    code, _, err = _gpusem("run", str(ext))
    assert code == 1 and "[Seq-CallExternal] no reference meaning:" in err


@pytest.mark.parametrize("text, prefix", [
    ("def (\n", "syntax error"),
    (GEMM.replace("proc=THREAD,\n                mems=[REGISTER, SHARED, SHARED]",
                  "proc=LANE,\n                mems=[REGISTER, SHARED, SHARED]"),
     "unknown processor"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, text: str,
                                          prefix: str) -> None:
    f = tmp_path / "bad.cyp"
    f.write_text(text)
    for verb in ("check", "run"):
        code, out, err = _gpusem(verb, str(f))
        assert code == 2 and out == ""
        (line,) = err.splitlines()
        assert line.startswith(f"{f}:") and prefix in line and "Traceback" not in err


def test_run_needs_inputs(tmp_path: Path) -> None:
    f = tmp_path / "noin.cyp"
    f.write_text(GEMM.replace("# inputs:", "# no inputs:"))
    code, _, err = _gpusem("run", str(f))
    assert code == 2 and "no inputs" in err
    code, out, _ = _gpusem("check", str(f))
    assert code == 0 and "rules on the task tree not run" in out


def test_run_with_a_schedule_is_the_event_machine(tmp_path: Path) -> None:
    """`--schedule` runs the event IR of our dependence analysis: the same tensors as
    the sequential reading, or a race (exit 1), or a bad schedule (exit 2)."""
    plain = _gpusem("run", "--json", str(EXAMPLES / "gemm_reduction.cyp"))[1]
    code, out, _ = _gpusem("run", "--json", "--schedule", "random:7",
                           str(EXAMPLES / "gemm_reduction.cyp"))
    assert code == 0
    assert json.loads(out)["arrays"] == json.loads(plain)["arrays"]
    assert json.loads(out)["schedule"] == "random:7"
    code, _, err = _gpusem("run", "--schedule", "sideways",
                           str(EXAMPLES / "gemm_reduction.cyp"))
    assert code == 2 and "unknown schedule: sideways" in err


def test_run_exhaustive_on_a_tiny_program(tmp_path: Path) -> None:
    f = tmp_path / "tiny.cyp"
    f.write_text('# inputs: X=float32[2] Y=float32[2]\n' + '''
@task("t", Inner, reads=["X"], writes=["Y"])
def top(X: tensor[1, f32], Y: tensor[1, f32]):
    Xp = partition_by_blocks(X, (1,))
    Yp = partition_by_blocks(Y, (1,))
    for i in prange(2):
        launch("t", Xp[i], Yp[i])

@task("t", Leaf, reads=["X"], writes=["Y"])
def leaf(X: tensor[1, f32], Y: tensor[1, f32]):
    copy(X, Y)

TaskMapping(instance="top", variant="top", proc=BLOCK, mems=[GLOBAL, GLOBAL],
            entrypoint=True, calls=["leaf"])
TaskMapping(instance="leaf", variant="leaf", proc=THREAD, mems=[REGISTER, REGISTER])
''')
    code, out, _ = _gpusem("run", "--schedule", "exhaustive", str(f))
    assert code == 0 and "all 20 orders agree" in out
