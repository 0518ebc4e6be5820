"""Cypress (seed 001): the legality rules of Sec. 3.2-3.3 on a program and its mapping.
`variants.py` judges the logical description, `mapping.py` the mapping; both collect
every violation (STYLE 12). The rules that need shapes (the shared-memory bound,
capacities, prange footprints) run on the instantiated tree (interpreter/cypress)."""

from __future__ import annotations

from gpusem.calculus.cypress.ast import Program
from gpusem.calculus.errors import IllTyped
from gpusem.typing_rules.cypress.mapping import check_mapping
from gpusem.typing_rules.cypress.variants import check_variants


def check_program(program: Program) -> list[IllTyped]:
    """Every violation of a static rule, variants first, in source order."""
    errors = check_variants(program)
    errors += check_mapping(program)
    return sorted(errors, key=lambda e: (e.span.line, e.span.column))


__all__ = ["check_program"]
