"""`gpusem reduce`: shrink a user's own Bundl program with the fuzzer's passes
(`shrink.py`) while it stays interesting (issue 18), as C-Reduce does: interesting is
a property of this target failing with the same signature, or a shell command (the
interestingness test) exiting 0 in a scratch folder that holds the candidate."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpusem.calculus.bundl.ast import Program
from gpusem.calculus.bundl.printer import print_program
from gpusem.calculus.bundl.walk import statement_count
from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends.lifetime import run_killing_tree
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.shrink import Prefetch, shrink
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.fuzz.reduce import ReduceProgress
from gpusem.fuzz.targets import CheckResult, checked


@dataclass(frozen=True)
class Reduced:
    text: str  # the reduced program
    before: int  # statements
    after: int
    signature: str  # what was kept ("interesting" for a command)
    tried: int
    seconds: float


def reduce(program: Program, prop: str | None = None, command: str | None = None,
           backend: str = "cpu", budget_s: float = 300.0, max_tried: int = 5000,
           file_name: str = "program.bundl",
           on_progress: Callable[[ReduceProgress], None] | None = None) -> Reduced:
    """Shrink `program` while `prop` (a bundl property) fails with the same signature,
    or while `command` (run in a scratch folder holding the candidate as `file_name`)
    exits 0. BadInput when neither or both are given, or the program as given is not
    interesting."""
    if (prop is None) == (command is None):
        raise BadInput("reduce: give a property or an interestingness command (one)")
    start = Generated(program, race_free_by_construction=False)
    target = BundlTarget(backend) if prop is not None else None
    scratch = Path(tempfile.mkdtemp(prefix="gpusem-reduce-"))
    try:
        test: Callable[[Generated], CheckResult]
        prefetch: Prefetch | None = None
        if target is not None:
            if prop not in target.properties:
                raise BadInput(f"unknown property: {prop} (bundl: "
                               f"{', '.join(target.properties)})")
            test, prefetch = _property_test(target, str(prop))
        else:
            test = _command_test(str(command), scratch / file_name)
        first = test(start)
        if on_progress is not None:
            test = _reporting(test, first, statement_count(program), on_progress)
        if first.status != "finding":
            what = f"property {prop} holds" if prop else f"`{command}` exits nonzero"
            raise BadInput(f"not interesting: {what} on the program as given")
        best, _, stats = shrink(start, first.signature, test, prefetch, budget_s,
                                max_tried)
    finally:
        if target is not None:
            target.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return Reduced(print_program(best.program), statement_count(program),
                   statement_count(best.program), first.signature, stats.tried,
                   stats.seconds)


def _reporting(test: Callable[[Generated], CheckResult], first: CheckResult,
               size: int, on_progress: Callable[[ReduceProgress], None],
               ) -> Callable[[Generated], CheckResult]:
    """`test`, telling `on_progress` after each candidate how the reduction goes."""
    t0, best, checks = time.monotonic(), [size], [0]

    def counted(g: Generated) -> CheckResult:
        res = test(g)
        checks[0] += 1
        if res.status == "finding" and res.signature == first.signature:
            best[0] = min(best[0], statement_count(g.program))
        on_progress(ReduceProgress(checks[0], best[0], size, time.monotonic() - t0))
        return res

    return counted


def _property_test(target: BundlTarget, prop: str) -> tuple[
        Callable[[Generated], CheckResult], Prefetch]:
    def test(g: Generated) -> CheckResult:
        return checked(target, g, prop)

    def batch(gs: list[Generated], deadline: float) -> int | None:
        return target.prefetch_until(gs, prop, deadline, defer=True)

    return test, batch


def _command_test(shell: str, candidate: Path) -> Callable[[Generated], CheckResult]:
    def test(g: Generated) -> CheckResult:
        candidate.write_text(print_program(g.program))
        try:
            rc = run_killing_tree(shell, shell=True, cwd=candidate.parent,
                                  capture_output=True, timeout=600).returncode
        except subprocess.TimeoutExpired:
            rc = 1
        return CheckResult("finding", signature="interesting") if rc == 0 \
            else CheckResult("pass")

    return test


__all__ = ["Reduced", "reduce"]
