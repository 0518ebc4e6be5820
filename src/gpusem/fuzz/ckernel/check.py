"""The `compile` and `emi` properties of the CKernel target, for a whole round at once.

    compile   the emitted CUDA, run on a backend (the cpu harness under several fibre
              schedules, or NVRTC on a GPU), ends in the reference's memory
    emi       so does every EMI variant (emi.py): code no thread reaches rewritten

Every launch of a round goes to the backend in ONE `run` call (one g++ build of a
shared library, or one NVRTC batch), which is most of a campaign's speed.

Comparison is per cell: ints exactly; floats bit for bit, except that any two NaNs
are equal and +0 equals -0. Note: the GPU's canonical NaN (0x7fffffff) is not x86's
(0xffc00000), and `fminf(-0, +0)` may give either zero in C; neither is a
miscompilation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.float32_equality import differing_float32
from gpusem.compiler.backends.kernel import Job, Result
from gpusem.compiler.ckernel_cuda.emit import emit_kernel, kernel_spec
from gpusem.fuzz.ckernel.emi import variants
from gpusem.interpreter.ckernel.inputs import initial_memory
from gpusem.interpreter.ckernel.machine import Run, outputs, run_kernel
from gpusem.typing_rules.ckernel.wellformed import check_kernel

CPU_SEEDS = (0, 1, 2, 3)  # the harness's fibre orders: forward, reverse, random, eager
CUDA_SEEDS = (0,)
LAUNCH_TIMEOUT_S = 10.0


def seeds_for(backend: str) -> tuple[int, ...]:
    return CUDA_SEEDS if backend == "cuda" else CPU_SEEDS


@dataclass
class Reference:
    """The reference's verdict on one kernel: its run and expected outputs, or why
    there is none (`ill_typed`: a generator that made an ill-formed program)."""

    kernel: A.Kernel
    run: Run | None = None
    expected: dict[str, Any] = field(default_factory=dict)
    ill_typed: IllTyped | None = None


def reference(k: A.Kernel) -> Reference:
    try:
        check_kernel(k)
    except IllTyped as err:
        return Reference(k, ill_typed=err)
    run = run_kernel(k)
    return Reference(k, run, outputs(k, run))


def same_cells(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Per cell: does `got` hold what the reference says (see the module note)?"""
    if want.dtype.kind != "f":
        return np.asarray(want == got)
    zeros = (want == 0) & (got == 0)
    return np.asarray(~differing_float32(want, got) | zeros)


def first_difference(expected: dict[str, Any], got: dict[str, Any]) -> str | None:
    for name, want in expected.items():
        have = got.get(name)
        if have is None or have.shape != want.shape:
            return f"{name}: missing"
        bad = np.flatnonzero(~same_cells(want, have))
        if bad.size:
            i = int(bad[0])
            return (f"{name}[{i}] is {have[i]!r}, the reference says {want[i]!r} "
                    f"({bad.size} cells differ)")
    return None


@dataclass
class Verdict:
    """One kernel's outcome: `kind` agree | mismatch | emi-mismatch | a backend
    result kind (build_error, runtime_error, crash, deadlock, timeout, unsupported) |
    ill-typed | emi-reference (the reference disagrees with itself on a variant)."""

    kind: str
    message: str = ""
    kernel: A.Kernel | None = None  # the kernel that failed (a variant for emi)
    mutation: str = ""
    schedule: int = 0
    actual: dict[str, Any] = field(default_factory=dict)

    @property
    def agree(self) -> bool:
        return self.kind == "agree"


def launches(k: A.Kernel, seeds: tuple[int, ...]) -> list[Job]:
    """One launch of `k`'s emitted kernel on its inputs per schedule seed (on a GPU,
    re-runs: the backend ignores the seed)."""
    spec = kernel_spec(k)
    memory = initial_memory(k)
    return [Job(spec, memory, s, LAUNCH_TIMEOUT_S) for s in seeds]


def _judge(k: A.Kernel, expected: dict[str, Any], results: list[Result],
           seeds: tuple[int, ...], mutation: str) -> Verdict | None:
    for seed, res in zip(seeds, results, strict=True):
        if not res.ok:
            return Verdict(res.kind, res.message[:400], k, mutation, seed)
        diff = first_difference(expected, res.outputs)
        if diff is not None:
            kind = "emi-mismatch" if mutation else "mismatch"
            return Verdict(kind, diff, k, mutation, seed,
                           {n: res.outputs[n] for n in expected})
    return None


def check_round(refs: list[Reference], runner: Any, seeds: tuple[int, ...],
                emi: bool) -> list[Verdict]:
    """The verdict of each kernel (with its EMI variants when `emi`), every launch of
    the round in one backend call."""
    plan: list[tuple[int, str, A.Kernel, dict[str, Any]]] = []
    out: list[Verdict | None] = [None] * len(refs)
    for i, ref in enumerate(refs):
        if ref.ill_typed is not None or ref.run is None:
            err = ref.ill_typed
            out[i] = Verdict("ill-typed", err.one_line() if err else "", ref.kernel)
            continue
        plan.append((i, "", ref.kernel, ref.expected))
        if not emi:
            continue
        for name, v in variants(ref.kernel, ref.run.reached):
            mine = outputs(v, run_kernel(v))
            if first_difference(ref.expected, mine) is not None:
                out[i] = Verdict("emi-reference", f"{name}: the reference differs", v,
                                 name)
            plan.append((i, name, v, ref.expected))
    jobs = [j for _, _, k, _ in plan for j in launches(k, seeds)]
    results = runner.run(jobs) if jobs else []
    for n, (i, mutation, k, expected) in enumerate(plan):
        part = results[n * len(seeds):(n + 1) * len(seeds)]
        if out[i] is None:
            out[i] = _judge(k, expected, part, seeds, mutation)
    return [v if v is not None else Verdict("agree") for v in out]


def kernel_text(k: A.Kernel) -> str:
    return emit_kernel(k)
