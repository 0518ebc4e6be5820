"""`gpusem check` and `gpusem run` on lambda-cu files: the exit codes (0 clean, 1
rejected / trap / stuck, 2 bad input or the step budget) and the one-line messages.
The examples' outputs are goldens (tests/golden); these are the failing cases."""

import contextlib
import io
import json
import sys

import pytest
from gpusem.cli.main import main

BAD_SYNTAX = "function main() -> int { let (x) = 1 in }\n"
ILL_FORMED = ("kernel k(xs: [int]) -> [int] {\n  let r = MAP { i => xs[i] } #xs\n"
              "  ret r\n}\nfunction main() -> int { 0 }\n")
TRAPS = ("kernel k(xs: [int]) -> [int] {\n  let r = MAP { i => let z = 0 in div i z "
         "using xs } #xs\n  ret r\n}\nfunction main() -> [int] { run k([1, 2]) }\n")
LOOPS = "function f(x: int) -> int { f(x) }\nfunction main() -> int { f(0) }\n"
GOOD = ("kernel k(xs: [int]) -> [int] {\n  let r = MAP { i => xs[i] using xs } #xs\n"
        "  ret r\n}\nfunction main() -> [int] { run k([4, 5]) }\n")


def invoke(tmp_path, text, verb, *args):
    """`gpusem VERB p.lcu ARGS` in-process, as tests/golden runs it: (exit, output)."""
    path = tmp_path / "p.lcu"
    path.write_text(text)
    out = io.StringIO()
    argv, sys.argv = sys.argv, ["gpusem", verb, str(path), *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    finally:
        sys.argv = argv
    return code, out.getvalue().replace(str(path), "p.lcu")


def test_check_accepts_exit_0(tmp_path):
    assert invoke(tmp_path, GOOD, "check") == \
        (0, "ok: well-formed: 1 kernel, 1 function\n")


def test_check_rejects_exit_1_naming_the_rule(tmp_path):
    code, output = invoke(tmp_path, ILL_FORMED, "check")
    assert code == 1
    assert output == ("p.lcu:2:15: [WF-Using] using: the thunk reads xs, which its "
                      "using list does not capture\n")


@pytest.mark.parametrize("verb", ["check", "run"])
def test_malformed_input_exit_2_one_line(tmp_path, verb):
    code, output = invoke(tmp_path, BAD_SYNTAX, verb)
    assert code == 2
    assert output.startswith("p.lcu:1:41: syntax error: expected one of ")
    assert output.count("\n") == 1 and "Traceback" not in output


def test_run_prints_the_value_exit_0(tmp_path):
    code, output = invoke(tmp_path, GOOD, "run")
    assert code == 0 and output.startswith("main = [4, 5]\nterminated (")
    code, output = invoke(tmp_path, GOOD, "run", "--json")
    assert code == 0 and json.loads(output)["value"] == [4, 5]


def test_run_of_an_ill_formed_program_exit_1(tmp_path):
    code, output = invoke(tmp_path, ILL_FORMED, "run")
    assert code == 1 and "[WF-Using]" in output


def test_run_trap_exit_1_names_rule_span_and_element(tmp_path):
    code, output = invoke(tmp_path, TRAPS, "run")
    assert code == 1
    assert output == ("p.lcu:2:35: [GPU-PRIM] division by zero: div 0 0 "
                      "(element 0 of MAP)\n")


def test_run_paper_rules_stuck_exit_1(tmp_path):
    code, output = invoke(tmp_path, GOOD, "run", "--rules", "paper")
    assert code == 1 and "[IDX-THUNK] stuck:" in output


def test_run_step_budget_exit_2(tmp_path):
    code, output = invoke(tmp_path, LOOPS, "run", "--max-steps", "100")
    assert code == 2 and "step budget exhausted: 100" in output


def test_step_runs_a_script_to_the_end(tmp_path):
    # was refused (exit 2) before `gpusem step` took .lcu files (tests/lambdacu/
    # test_step.py has the session's cases)
    code, output = invoke(tmp_path, GOOD, "step", "--commands", "continue")
    assert code == 0 and "main = [4, 5]" in output
