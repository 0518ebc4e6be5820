"""A generated Bundl program with what its generator knows about it (issue 5).

The compiler oracle (`compile_property`) compares only race-free programs. Kernel-shaped
programs (`strategies/kernels.py`) are race-free by construction (each thread writes
only its own partition piece; staged shared data is read after the barrier that ends
the partition which wrote it), so the conservative z3 race analysis (`race.py`) need not
prove it; the general generator's programs (`strategies/programs.py`) must be proved
race-free first. The fact travels with the program as data: the Bundl target's strategy
yields `Generated` values for the compiler properties, its checks read the flag, and
the AST reducer (`shrink.py`) keeps it on race-safe edits only. A program that comes
from anywhere else (a replayed bundle, a file) is not race-free by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusem.calculus.bundl import ast as A


@dataclass(frozen=True, slots=True)
class Generated:
    program: A.Program
    race_free_by_construction: bool


def as_generated(program: A.Program | Generated) -> Generated:
    """`program` itself, or a plain program as one not race-free by construction."""
    if isinstance(program, Generated):
        return program
    return Generated(program, race_free_by_construction=False)
