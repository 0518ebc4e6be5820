"""The debugger's rule list (`interpreter/bundl/debug_rules.RULES`, offered by `break
RULE`) is exactly the set of rule names the small-step interpreter can report: derived
here from the string constants of its modules, so a new rule (as S-Claim-Body once was)
cannot be missing from the debugger."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gpusem.interpreter.bundl.debug_rules import RULES

INTERPRETER = Path(__file__).resolve().parents[2] / "src" / "gpusem" / "interpreter" / "bundl"
# the modules of the small-step machine (the big-step evaluator reports the same names)
SMALL_STEP = ("small_step.py", "small_step_data.py", "thread.py", "machine.py",
              "schedulers.py", "explore.py", "config.py", "plug.py")
RULE_NAME = re.compile(r"S-[A-Z][A-Za-z]*(-[A-Z][A-Za-z]*)*")


def rule_names_in(path: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and RULE_NAME.fullmatch(node.value)}


def test_debugger_lists_every_rule_the_interpreter_reports():
    derived = set().union(*(rule_names_in(INTERPRETER / m) for m in SMALL_STEP))
    assert "S-Claim-Body" in derived and "S-Function-Call" in derived  # the scan works
    assert set(RULES) == derived
    assert len(RULES) == len(set(RULES))


def test_big_step_reports_no_rule_the_debugger_does_not_know():
    names = rule_names_in(INTERPRETER / "big_step.py") | rule_names_in(
        INTERPRETER / "big_step_data.py")
    assert names <= set(RULES), names - set(RULES)
