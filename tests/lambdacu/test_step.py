"""`gpusem step FILE.lcu` (issue 29): the rule-by-rule debugger on lambda-cu's rules
of Sec 6.2 (interpreter/lambdacu/debug*.py). Each step names its rule; the steps are
the interpreter's rule applications (their counts are `run`'s); a scripted session
exits 0 (a value, or stopped early), 1 (a trap, a stuck state, ill-formed), 2 (a bad
command, the step budget), with one line on stderr saying why."""

import re
from collections import Counter

from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.interpreter.lambdacu.debug_commands import open_session
from gpusem.interpreter.lambdacu.machine import evaluate
from gpusem.interpreter.lambdacu.rules import RULES
from gpusem.typing_rules.lambdacu.wellformed import check_program
from tests.lambdacu.test_cli import GOOD, ILL_FORMED, LOOPS, TRAPS, invoke

PRINTS = ("kernel k(xs: [int]) -> [int] {\n"
          "  let r = MAP { i => let x = xs[i] in add x 1 using xs } #xs\n"
          "  ret r\n}\n"
          "kernel s(xs: [int]) -> int {\n"
          "  let t = REDUCE { i => xs[i] using xs } (iadd) #xs\n"
          "  ret t\n}\n"
          "function main() -> int {\n"
          "  let (a) = run k([4, 5]) in let () = print(a) in\n"
          "  let (t) = run s(a) in let (c) = gt t 10 in if c then t else 0\n}\n")


def steps(output):
    """(n, rule) of every step shown."""
    return [(int(n), rule) for n, rule in re.findall(r"^step (\d+)  (\S+)  ", output,
                                                     re.MULTILINE)]


def test_each_step_names_its_rule_in_the_interpreters_order(tmp_path):
    code, output = invoke(tmp_path, PRINTS, "step", "--commands",
                          "step 3; step 15; continue")
    assert code == 0, output
    shown = steps(output)
    assert shown[:3] == [(1, "KERN-DEF"), (2, "KERN-DEF"), (3, "FUNC-DEF")]
    assert [n for n, _ in shown[:18]] == list(range(1, 19))
    # the whole run, as `run` counts it: same rules, same number of times
    checked = check_program(parse_program(PRINTS, "p.lcu"))
    want = evaluate(checked.program, elems=checked.elems)
    session = open_session(PRINTS, "p.lcu")
    assert Counter(e.rule for e in session.events) == want.seen
    assert len(session.events) == want.steps
    assert shown[:18] == [(e.n, e.rule) for e in session.events[:18]]
    assert "printed: [5, 6]" in output and "main = 11" in output
    # big-step premises first: the MAP's threads before SOAC-MAP, then KERN-LET
    rules = [e.rule for e in session.events]
    first_map = rules.index("SOAC-MAP")
    assert rules[first_map - 4:first_map].count("GPU-PRIM") >= 1
    assert rules[first_map + 1] == "KERN-LET"


def test_breakpoints_back_and_the_end(tmp_path):
    code, output = invoke(tmp_path, PRINTS, "step", "--commands",
                          "break SOAC-REDUCE; continue; where; back 3; step; "
                          "delete; break 11; continue; rules")
    assert code == 0, output
    stops = re.findall(r"breakpoint at step (\d+)", output)
    reduce_at = int(stops[0])
    assert steps(output)[0] == (reduce_at, "SOAC-REDUCE")
    assert f"back 3 step(s): now at step {reduce_at - 3}" in output
    assert (reduce_at - 2, steps(output)[1][1]) == steps(output)[1]
    # line 11: the first rule whose redex starts there after step reduce_at - 2
    assert re.search(r"step \d+  \S+  \S+:11:\d+", output)
    assert re.search(r"SOAC-REDUCE\s*│ 1", output)


def test_exit_codes_of_scripted_sessions(tmp_path):
    code, output = invoke(tmp_path, GOOD, "step", "--commands", "step 2")
    assert code == 0 and "terminated" not in output       # stopped early
    code, output = invoke(tmp_path, TRAPS, "step", "--commands", "continue")
    assert code == 1 and "trap after" in output and "[GPU-PRIM]" in output
    assert output.strip().splitlines()[-1].startswith("p.lcu:2:")
    code, output = invoke(tmp_path, GOOD, "step", "--rules", "paper", "--commands",
                          "continue")
    assert code == 1 and "[IDX-THUNK] stuck:" in output
    code, output = invoke(tmp_path, LOOPS, "step", "--max-steps", "100",
                          "--commands", "continue")
    assert code == 2 and "step budget exhausted: 100" in output
    code, output = invoke(tmp_path, GOOD, "step", "--commands", "step 1; frobnicate")
    assert code == 2 and output.strip().splitlines()[-1] == \
        "p.lcu: --commands: unknown command: frobnicate"
    code, output = invoke(tmp_path, GOOD, "step", "--commands", "break NO-RULE")
    assert code == 2 and "usage: break RULE | LINE" in output
    code, output = invoke(tmp_path, ILL_FORMED, "step", "--commands", "continue")
    assert code == 1 and output.count("\n") == 1 and "WF-" in output


def test_malformed_file_is_one_line_exit_2(tmp_path):
    code, output = invoke(tmp_path, "function main( -> int { 0 }\n", "step",
                          "--commands", "continue")
    assert code == 2 and output.count("\n") == 1
    assert re.match(r"p\.lcu:1:\d+: ", output)


def test_trace_file_has_one_line_per_rule(tmp_path):
    trace = tmp_path / "trace.txt"
    code, _ = invoke(tmp_path, PRINTS, "step", "--trace", str(trace), "--commands",
                     "continue")
    lines = trace.read_text().splitlines()
    assert code == 0 and len(lines) == len(open_session(PRINTS, "p.lcu").events)
    assert {line.split()[1] for line in lines} <= set(RULES) | {"CPU-CMD"}
    assert lines[0].startswith("1 KERN-DEF ")
