"""The compiler-correctness oracle for Bundl: compiled CUDA ends in the memory the
interpreter computes (DESIGN.md, `test_compile_correct`).

One check compiles a well-typed program, runs the kernel on a backend under one or more
schedules, runs the reference interpreter on the same initial globals, and compares the
final global memories cell by cell (floats bit for bit). Programs the interpreter does
not run to termination (a trap, a deadlock, the step budget) are not compared: their
compiled behaviour is undefined, and the verdict says so. A well-typed program the
interpreter gets STUCK on is a finding of its own (kind `stuck`): Theorem 4.1 says no
well-typed program gets stuck, so it is a soundness bug of gpusem, never a skip.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.errors import GpusemError
from gpusem.compiler.bundl_cuda.launch import (
    agrees,
    as_bundl_values,
    first_difference,
    jobs_for,
)
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
from gpusem.interpreter.bundl.reference import Reference, reference


@dataclass
class Verdict:
    agree: bool
    # agree | disagree | kernel-failed | compile-error | stuck (the interpreter is stuck
    # on a well-typed program: a soundness bug of ours) | not-compared (the program
    # traps, deadlocks or runs out of steps: `details["outcome"]` says which) | racy |
    # unsupported
    kind: str
    message: str = ""
    expected: dict | None = None
    actual: dict | None = None
    difference: tuple | None = None
    schedule: int | None = None
    kernel_source: str = ""
    details: dict = field(default_factory=dict)

    def describe(self) -> str:
        if self.kind == "agree":
            return f"agree: {self.message}"
        if self.kind == "disagree":
            assert self.difference is not None  # a disagreement names its cell
            name, i, e, a = self.difference
            return (f"disagree: {name}[{i}] is {a!r} on the backend (schedule "
                    f"{self.schedule}), the interpreter says {e!r}")
        return f"{self.kind}: {self.message}"

    def exit_code(self) -> int:
        """`gpusem exec`'s exit code: 0 agree; 1 disagree, a failed kernel, or a program
        not compared (traps, deadlocks, racy, unsupported); 2 the step budget ran out
        (a budget, like bad input); 3 stuck (an internal error: a soundness bug)."""
        if self.kind == "agree":
            return 0
        if self.kind == "stuck":
            return 3
        if self.kind == "not-compared" and self.details.get("outcome") == "budget":
            return 2
        return 1

    def as_dict(self) -> dict:
        return {"agree": self.agree, "kind": self.kind, "message": self.message,
                "schedule": self.schedule, "difference": self.difference,
                "expected": self.expected, "actual": self.actual}


# The cpu harness's fibre orders: forward, reverse, random, forward with eager wake
# (released threads run first: exposes barriers that release too early).
HARNESS_SEEDS = (0, 1, 2, 3)
# Per-launch watchdog: generated kernels run for microseconds on an H100, so 3 s only
# ever ends a hang (a GPU deadlock), and a hang should cost seconds, not ten; the cpu
# harness interprets every thread as a fibre and keeps the backends' default.
LAUNCH_TIMEOUT_S = {"cuda": 3.0}


def _jobs(prog, kernel, seeds, backend: str, scale: float = 1.0):
    return jobs_for(prog, kernel, seeds, scale * LAUNCH_TIMEOUT_S.get(backend, 10.0))


@functools.cache
def shared_backend(name: str):
    """One backend per process and name, reused across rounds: its worker (a forked
    harness process, or the spawned CUDA worker whose context start costs seconds)
    then starts once per campaign, not once per batch."""
    from gpusem.compiler.backends import get_backend

    return get_backend(name)


# The compiler properties and the barrier placement each compiles with (pipeline.py's
# sync modes): `compile` today's wait motion, `motion` the naive placement (wait motion
# off), `prism-sync` Prism Sec. 5's rules 1 and 2 (compiler/bundl_cuda/sync_prism.py).
SYNC_OF_PROPERTY = {"compile": "motion", "motion": "naive", "prism-sync": "prism"}


def check_program(prog: B.Program, backend: str = "cpu", seeds=HARNESS_SEEDS,
                  sync_motion: bool = True, source: str = "", file: str = "<input>",
                  ref: Reference | None = None, timeout_scale: float = 1.0, runner=None,
                  confirm: Confirm | None = None, sync: str = "") -> Verdict:
    """The verdict on one program. `ref`: the reference if the caller has it; `timeout_scale` stretches the launch watchdog and `runner` replaces the shared
    backend (a timeout's re-check in a fresh worker); `confirm` (see `check_batch`)
    gives the full reference when `ref` came from the fast path; `sync`: the barrier
    placement (pipeline.SYNC_MODES; "" reads sync_motion)."""
    ref = ref if ref is not None else reference(prog)
    if skip := _not_compared(ref):
        return skip
    try:
        options = CompileOptions(sync_motion=sync_motion, sync=sync)
        kernel = compile_program(prog, options, source, file)
    except Exception as err:
        return _confirmed(_compile_failure(err), prog, kernel_source="", results=None,
                          seeds=seeds, full=confirm() if confirm else None)
    runner = runner if runner is not None else shared_backend(backend)
    results = runner.run(_jobs(prog, kernel, seeds, backend, timeout_scale))
    verdict = compare(prog, ref.globals, kernel.source, results, seeds)
    if verdict.kind == "agree" or confirm is None:
        return verdict
    return _confirmed(verdict, prog, kernel.source, results, seeds, confirm())


def _not_compared(ref: Reference) -> Verdict | None:
    """Programs the interpreter does not run to termination are not compared; one it is
    STUCK on is a well-typed program that gets stuck (Theorem 4.1 says none does): a
    soundness bug of ours, never a silent skip."""
    out = ref.outcome
    if out.kind == "stuck" and not out.trap:
        return Verdict(False, "stuck", f"the interpreter is stuck on a well-typed "
                       f"program (a soundness bug of gpusem): [{out.rule}] "
                       f"{out.message}", details={"outcome": "stuck", "rule": out.rule})
    if out.kind != "terminated":
        what = "trap" if out.trap else out.kind
        where = out.error.one_line() if isinstance(out.error, GpusemError) \
            else f"[{out.rule}] {out.message}"
        return Verdict(True, "not-compared", f"the interpreter ends in a {what}: {where}",
                       details={"outcome": what, "rule": out.rule})
    if ref.racy:
        return Verdict(True, "racy", ref.why)
    return None


def not_compared(ref: Reference) -> Verdict | None:
    """The verdict of a program the reference does not compare (see `_not_compared`);
    None when it is compared."""
    return _not_compared(ref)


def _compile_failure(err: Exception) -> Verdict:
    """A documented limitation (`unsupported: ...`) is counted apart; any other
    exception out of the compiler is a finding (a crash on a well-typed program)."""
    from gpusem.compiler.bundl_cuda.errors import CompileError

    if isinstance(err, CompileError) and err.message.startswith("unsupported:"):
        return Verdict(True, "unsupported", err.message)
    from gpusem.fuzz.bundl.signature import compile_pass

    return Verdict(False, "compile-error", f"{type(err).__name__}: {err}",
                   details={"pass": compile_pass(err)})


def compare(prog, expected: dict, source: str, results, seeds) -> Verdict:
    arrays: dict = {}  # the expected cells as arrays, made once for every schedule
    for seed, result in zip(seeds, results, strict=True):
        if not result.ok:
            return Verdict(False, "kernel-failed", f"{result.kind}: {result.message}",
                           expected, None, None, seed, source)
        if agrees(prog, expected, result.outputs, arrays):
            continue  # (no Python value a cell: seconds over millions of cells)
        actual = as_bundl_values(prog, result.outputs)
        diff = first_difference(prog, expected, actual)
        if diff is not None:
            return Verdict(False, "disagree", "", expected, actual, diff, seed, source)
    return Verdict(True, "agree", f"{len(seeds)} schedule(s), "
                   f"{sum(len(v) for v in expected.values())} cells", expected,
                   None, None, None, source)


def check_file(path: str, backend: str = "cpu", seeds=HARNESS_SEEDS,
               sync_motion: bool = True, prove_race_free: bool = True) -> Verdict:
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.calculus.source import read_source
    from gpusem.typing_rules.bundl.stmt import check_program as typecheck

    source = read_source(path)
    prog = parse_program(source, path)
    typecheck(prog)
    ref = reference(prog, prove_race_free=prove_race_free)
    return check_program(prog, backend, seeds, sync_motion, source, Path(path).name,
                         ref)


@dataclass(frozen=True)
class Unconfirmed:
    """A batch's verdict that is not "agree", decided against a fast reference
    outcome, whose confirmation against the full reference (`_confirmed`) waits
    until someone asks for it (`check_batch(defer=True)`): a shrink step reads a
    batch's verdicts only up to the first candidate that still fails, and confirming
    every failing one (four small-step runs each, 0.65 s on a 400-statement kernel)
    was most of a step's time."""

    decide: Callable[[], Verdict]


def check_batch(progs: list[B.Program], backend: str = "cpu", seeds=HARNESS_SEEDS,
                sync_motion: bool = True, refs: list[Reference] | None = None,
                confirm: Callable[[int], Reference | None] | None = None,
                sync: str = "", deadline: float | None = None, defer: bool = False,
                ) -> list[Verdict | Unconfirmed | None]:
    """`check_program` for many programs with one backend call (one g++ build, one
    NVRTC module): the throughput path of the fuzzer.

    `confirm(i)`: the full reference of program i when `refs[i]` came from
    the fast path (`interpreter/bundl/reference.py`), else None. A verdict that is a
    finding is then decided again against the full reference, from the same backend
    results, so the fast path never reports a finding the full reference would not
    (and says racy or not-compared where the full reference does). Only "agree" is
    taken from the fast outcome unconfirmed (see `interpreter/bundl/reference.py` for
    why that is sound).

    `deadline` (time.monotonic()): no confirmation begins past it; a verdict that
    would need one is None (not decided: a campaign then checks no further, issue
    31.1: a round with nine findings spent 6.8 s confirming them past its budget).
    `defer`: such a verdict is `Unconfirmed`, confirmed when its caller asks."""
    def confirmed(i: int, verdict: Verdict, source: str,
                  rs) -> Verdict | Unconfirmed | None:
        if confirm is None:
            return verdict
        if defer:
            return _later(verdict, progs[i], source, rs, seeds,
                          functools.partial(confirm, i))
        if deadline is not None and time.monotonic() >= deadline:
            return None
        return _confirmed(verdict, progs[i], source, rs, seeds, confirm(i))

    refs = refs or [reference(p) for p in progs]
    verdicts: list[Verdict | Unconfirmed | None] = [None] * len(progs)
    jobs, owners, kernels = [], [], {}
    for i, (prog, ref) in enumerate(zip(progs, refs, strict=True)):
        if skip := _not_compared(ref):
            verdicts[i] = skip
            continue
        try:
            options = CompileOptions(sync_motion=sync_motion, sync=sync)
            kernel = compile_program(prog, options)
        except Exception as err:
            verdicts[i] = confirmed(i, _compile_failure(err), "", None)
            continue
        kernels[i] = kernel
        for job in _jobs(prog, kernel, seeds, backend):
            jobs.append(job)
            owners.append(i)
    results = shared_backend(backend).run(jobs) if jobs else []
    by_program: dict[int, list] = {}
    for i, result in zip(owners, results, strict=True):
        by_program.setdefault(i, []).append(result)
    for i, rs in by_program.items():
        verdict = compare(progs[i], refs[i].globals, kernels[i].source, rs, seeds)
        verdicts[i] = (verdict if verdict.kind == "agree"
                       else confirmed(i, verdict, kernels[i].source, rs))
    return verdicts


Confirm = Callable[[], "Reference | None"]


def _later(verdict: Verdict, prog: B.Program, kernel_source: str, results, seeds,
           full: Confirm) -> Unconfirmed:
    return Unconfirmed(lambda: _confirmed(verdict, prog, kernel_source, results,
                                          seeds, full()))


def _confirmed(verdict: Verdict, prog: B.Program, kernel_source: str, results,
               seeds, full) -> Verdict:
    """`verdict` (not "agree": decided against a fast reference outcome) decided again
    against `full`, the full reference (None: the reference was the full one).
    The order is the full pipeline's: not compared first, then the compile failure,
    then the comparison of the same results."""
    if full is None:
        return verdict
    if skip := _not_compared(full):
        return skip
    if results is None:  # the compiler failed: that does not depend on the outcome
        return verdict
    return compare(prog, full.globals, kernel_source, results, seeds)
