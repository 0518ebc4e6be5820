"""Meta-tests (ARCHITECTURE.md, "Rules are code"; STYLE 9): every lambda-cu AST class
is produced by the generator, and every one the printer prints comes back from the
parser; every rule the interpreter names is one of Sec 6.2's (or CPU-CMD, ours)."""

import dataclasses
import inspect
import re
from pathlib import Path

from gpusem.calculus.lambdacu import ast
from gpusem.fuzz.bundl.sample import draw
from gpusem.fuzz.lambdacu.programs import programs
from gpusem.interpreter.lambdacu.rules import OURS, RULES

INTERPRETER = Path(__file__).resolve().parents[2] / "src/gpusem/interpreter/lambdacu"
AST_CLASSES = {name for name, obj in inspect.getmembers(ast, inspect.isclass)
               if dataclasses.is_dataclass(obj) and obj.__module__ == ast.__name__}


def classes_in(node, seen):
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        if type(node).__module__ == ast.__name__:
            seen.add(type(node).__name__)
        for f in dataclasses.fields(node):
            classes_in(getattr(node, f.name), seen)
    elif isinstance(node, tuple):
        for x in node:
            classes_in(x, seen)
    return seen


def test_the_generator_produces_every_ast_class():
    seen = set()
    for p in draw(programs(), 150, seed=9):
        classes_in(p, seen)
    assert AST_CLASSES - seen == set()


def test_the_interpreter_names_only_rules_of_the_paper():
    named = set()
    for path in INTERPRETER.glob("*.py"):
        named |= set(re.findall(r'"((?:CPU|GPU|KERN|SOAC|IDX|FUNC|EVAL)-[A-Z-]+)"',
                                path.read_text()))
    assert named - set(RULES) - set(OURS) == set()
    assert len(RULES) == 28 and len(set(RULES)) == 28
