"""Hypothesis strategies of well-typed programs, for a team's own property tests
(issue 18). Compose them with your compiler:

    from hypothesis import given
    from gpusem import api, strategies

    @given(strategies.bundl_programs(max_threads=8))
    def test_my_compiler_agrees(program):
        expected = api.run(program)           # the reference semantics
        ...                                   # compile with yours, compare

A failing example prints as the program's text (Bundl), ready for `gpusem run`.

- `bundl_programs`: the general well-typed generator (every statement form of
  Appendix A; may race: `api.exec` proves race-freedom before it compares);
- `bundl_kernels`: kernel-shaped programs, race-free by construction (what the
  `compile` property mostly draws);
- `gpuir_kernels`: GPU IR kernels (`.source()` is the text);
- `appy_programs`: APPy functions with their inputs (`AppyProgram`).
"""

from __future__ import annotations

from typing import Any

from gpusem.fuzz.bundl.pretty import register

register()  # a failing example prints as Bundl text (fuzz/bundl/pretty.py)


def bundl_programs(max_blocks: int = 2, max_threads: int = 4, max_depth: int = 3,
                   max_stmts: int = 3, max_fns: int = 2) -> Any:
    """A strategy of well-typed Bundl `Program`s."""
    from gpusem.fuzz.bundl.strategies.programs import programs

    return programs(max_blocks=max_blocks, max_threads=max_threads,
                    max_depth=max_depth, max_stmts=max_stmts, max_fns=max_fns)


def bundl_kernels(max_blocks: int = 2, max_threads: int = 128,
                  max_cells: int | None = None) -> Any:
    """A strategy of kernel-shaped Bundl `Program`s (race-free by construction);
    `max_cells` bounds their size (None: the campaign's default, README "Kernel
    size")."""
    from gpusem.fuzz.bundl.strategies.kernels import MAX_CELLS, kernels

    return kernels(max_blocks=max_blocks, max_threads=max_threads,
                   max_cells=MAX_CELLS if max_cells is None else max_cells)


def gpuir_kernels(max_phases: int = 3) -> Any:
    """A strategy of GPU IR kernels (`kernel.source()` is the program text)."""
    from gpusem.fuzz.gpuir.strategies import kernels

    return kernels(max_phases=max_phases)


def appy_programs() -> Any:
    """A strategy of APPy programs with inputs (`program.fn`, `program.inputs()`)."""
    from gpusem.fuzz.appy.strategies import programs

    return programs()


__all__ = ["appy_programs", "bundl_kernels", "bundl_programs", "gpuir_kernels"]
