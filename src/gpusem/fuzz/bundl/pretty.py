"""Bundl programs as hypothesis shows them: the program's text, not an AST repr
(issue 18). A failing property test prints "Falsifying example: ...(program=...)"
through hypothesis's pretty printer; `register` teaches it to print a `Program` (and a
`Generated` one) with `calculus/bundl/printer.print_program`, so the example can be
pasted into a file and run with `gpusem`."""

from __future__ import annotations

from typing import Any

from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.printer import print_program
from gpusem.fuzz.bundl.generated import Generated


def _program(obj: A.Program, p: Any, cycle: bool) -> None:
    _text(p, print_program(obj))


def _generated(obj: Generated, p: Any, cycle: bool) -> None:
    note = "race-free by construction" if obj.race_free_by_construction else \
        "to be proved race-free"
    _text(p, f"// Generated ({note})\n{print_program(obj.program)}")


def _text(p: Any, text: str) -> None:
    p.text(text.rstrip("\n"))


def register() -> None:
    from hypothesis.vendor.pretty import for_type_by_name

    for_type_by_name(A.Program.__module__, "Program", _program)
    for_type_by_name(Generated.__module__, "Generated", _generated)
