"""`gpusem reduce FILE.cu`: shrink a CUDA reproducer (a bundle's `repro.cu`, issue 23)
with `fuzz/cuda_reduce`'s passes while one interestingness test holds. The static PTX
check (`--keep-ptx-check`) is `compiler/backends/ptx_check.py`'s
(`fuzz/cuda_reduce/oracles.PTX_CHECKER`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpusem.fuzz.cuda_reduce.reducer import CudaReduction, Progress


def reduce_cuda(path: str | Path, *, test: Callable[[str], bool] | None = None,
                command: str | None = None, keep_exit: int | None = None,
                keep_ptx: str | None = None, keep_ptx_check: str | None = None,
                keep_attribution: str | None = None, sanitize: bool = False,
                guards: bool = True, engine: str = "own", budget_s: float = 300.0,
                on_progress: Callable[[Progress], None] | None = None
                ) -> CudaReduction:
    """Shrink a CUDA reproducer (`repro.cu`, issue 23) while it stays interesting to
    exactly one test: `test` (a callable on the text), `command` (C-Reduce's shell
    convention: run in a folder holding only the candidate, under the file's name;
    exit 0 = interesting), `keep_exit` (nvcc builds it and it exits with this
    status: needs a GPU), `keep_ptx` (its `nvcc -ptx` still matches this regular
    expression), `keep_ptx_check` (the static PTX checker still fails this check) or
    `keep_attribution` (the attribution still names this component). `guards`: the
    candidate must still build alone with nvcc and keep main's check
    (`fuzz/cuda_reduce/oracles.py` says what is and is not guarded). `engine`: "own"
    (our passes) or "cvise" (C-Vise, when installed, then our passes). A
    `CudaReduction`; BadInput when the file is not interesting to start with."""
    from gpusem.calculus.errors import BadInput
    from gpusem.calculus.source import read_source
    from gpusem.compiler.backends.standalone import RUNTIME
    from gpusem.fuzz.cuda_reduce import cvise, oracles
    from gpusem.fuzz.cuda_reduce.reducer import NotInteresting, default_passes

    name = Path(path).name
    chosen = [x for x in (test, command, keep_exit, keep_ptx, keep_ptx_check,
                          keep_attribution) if x is not None]
    if len(chosen) != 1:
        raise BadInput("reduce: give exactly one interestingness test (a command, "
                       "--keep-exit, --keep-ptx, --keep-ptx-check or "
                       "--keep-attribution)")
    if not oracles.have_nvcc() and (guards or test is None and command is None):
        raise BadInput("reduce: nvcc is not on PATH (the guards and the built-in "
                       "tests build with it)")
    keep: Callable[[str], bool]
    if test is not None:
        keep = test
    elif command is not None:
        keep = oracles.ShellTest(command, name)
    elif keep_exit is not None:
        # the program must keep printing the original's last line (its mismatch)
        line = oracles.KeepExit(keep_exit, sanitize).report_line(read_source(str(path)))
        keep = oracles.KeepExit(keep_exit, sanitize, line)
    elif keep_ptx is not None:
        keep = oracles.KeepPtx(ptx_pattern(keep_ptx))
    elif keep_ptx_check is not None:
        from gpusem.compiler.backends.ptx_check import CHECKS

        known = [name for name, _ in CHECKS]
        if keep_ptx_check not in known:
            raise BadInput(f"reduce: --keep-ptx-check: unknown check {keep_ptx_check!r} "
                           f"(the checks: {', '.join(known)})")
        if oracles.PTX_CHECKER is None:
            raise BadInput("reduce: --keep-ptx-check needs the static PTX checker, "
                           "which this build does not have")
        keep = oracles.KeepPtxCheck(oracles.PTX_CHECKER, keep_ptx_check)
    else:
        if oracles.ATTRIBUTOR is None:
            raise BadInput("reduce: --keep-attribution needs the attribution, which "
                           "this build does not have")
        keep = oracles.KeepAttribution(oracles.ATTRIBUTOR, str(keep_attribution))
    text = read_source(str(path))
    chosen_guards: list[oracles.Guard] = [
        oracles.KeepsMain(), oracles.KeepsMainCheck(), oracles.NoConstantPointers(),
        oracles.BuildsAlone()
    ] if guards else []
    passes = default_passes((Path(path).resolve().parent, RUNTIME.parent))
    try:
        if engine == "cvise":
            return cvise.reduce_with_cvise(text, name, keep, chosen_guards, passes,
                                           budget_s, on_progress, command)
        if engine != "own":
            raise BadInput(f"reduce: unknown engine: {engine} (own, cvise)")
        from gpusem.fuzz.cuda_reduce.reducer import reduce_cuda as run_passes

        return run_passes(text, keep, budget_s=budget_s, guards=chosen_guards,
                          passes=passes, on_progress=on_progress)
    except NotInteresting:
        raise BadInput(f"{path}:1:1: not interesting: the test does not hold on the "
                       "file as given") from None


def ptx_pattern(pattern: str) -> str:
    import re

    from gpusem.calculus.errors import BadInput

    try:
        re.compile(pattern)
    except re.error as e:
        raise BadInput(f"reduce: --keep-ptx: bad regular expression: {e}") from None
    return pattern


__all__ = ["ptx_pattern", "reduce_cuda"]
