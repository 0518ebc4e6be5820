"""`# defines: N=256 M=64` header lines of a GPU IR file: the defaults of its control
values (`-D` overrides them)."""

from __future__ import annotations

import re

from gpusem.calculus.budgets import check_int_literal
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import Span


def header_defines(source: str, file: str = "<input>") -> dict[str, int]:
    """`# defines: N=256 M=64` header lines (defaults; -D overrides them). A value
    must be a 32-bit int, as a control value of the generated code."""
    out: dict[str, int] = {}
    for m in re.finditer(r"^#\s*defines:\s*(.*)$", source, re.MULTILINE):
        for item in m.group(1).replace(",", " ").split():
            name, _, value = item.partition("=")
            number = re.fullmatch(r"(-?)([0-9]+)", value)
            if not name.isidentifier() or number is None:
                continue
            line = source.count("\n", 0, m.start()) + 1
            span = Span(file, line, 1, line, 1)
            n = check_int_literal(number.group(2), span)
            out[name] = -n if number.group(1) else n
            if not -(2**31) <= out[name] < 2**31:
                raise BadInput(f"bad definition: {name} = {value} is out of range "
                               "(control values are 32-bit ints)", span=span)
    return out
