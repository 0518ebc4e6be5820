"""Run compiled GPU IR on a backend and compare with its sequential reading.

The seq = par oracle (DESIGN.md): the kernels of a proc, launched in program order on
the `cpu` harness (under several fibre schedules) or on a GPU, must end with every data
parameter bit-identical to `interpreter/gpuir/sequential.run_sequential` on the same inputs.
`check_batch` runs many (program, schedule) pairs through one backend call per launch
stage (one g++ build / one NVRTC module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gpusem.calculus.float32_equality import differing_float32
from gpusem.calculus.gpuir import ast as A
from gpusem.compiler.backends import Job
from gpusem.compiler.backends.registry import shared_backend
from gpusem.compiler.gpuir_cuda.errors import CompileError
from gpusem.compiler.gpuir_cuda.pipeline import CompiledProc, compile_proc


@dataclass
class Verdict:
    """agree | disagree | kernel-failed | unsupported | compile-error."""

    kind: str
    message: str = ""
    schedule: int | None = None
    difference: tuple | None = None   # (name, index, expected, actual)
    kernel_source: str = ""
    results: list = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return self.kind == "agree"

    def describe(self) -> str:
        if self.kind == "disagree":
            assert self.difference is not None  # a disagreement names its cell
            name, idx, e, a = self.difference
            return (f"disagree: {name}{list(idx)} is {a!r} on the backend (schedule "
                    f"{self.schedule}), the sequential reading says {e!r}")
        if self.message.startswith(self.kind):
            return self.message
        return f"{self.kind}: {self.message}"

    def as_dict(self) -> dict:
        diff = None
        if self.difference is not None:
            name, idx, e, a = self.difference
            diff = {"name": name, "index": list(idx), "expected": e, "actual": a}
        return {"agree": self.agree, "kind": self.kind, "message": self.message,
                "schedule": self.schedule, "difference": diff}


def make_inputs(proc: A.Proc, defines: Mapping[str, int], seed: int = 0
                ) -> dict[str, np.ndarray]:
    """Deterministic inputs: distinct floats with full 24-bit mantissas (so every
    rounding difference, an FMA or a reordered sum, shows) and ints spanning int32
    (so wrap-around happens); a value read from the wrong cell or at the wrong time
    shows too."""
    from gpusem.calculus.gpuir.ctrl import eval_c
    from gpusem.interpreter.gpuir.sequential import DTYPES

    rng = np.random.default_rng(seed)
    out = {}
    for p in proc.data_params:
        shape = tuple(int(eval_c(c, dict(defines))) for c in p.shape)
        dt = DTYPES[p.dtype]
        vals: np.ndarray
        if np.issubdtype(dt, np.floating):
            vals = rng.uniform(-2.0, 2.0, size=shape)
        else:
            vals = rng.integers(-(2**31), 2**31, size=shape)
        out[p.name] = np.asarray(vals).astype(dt)
    return out


def first_difference(expected: Mapping[str, np.ndarray],
                     actual: Mapping[str, np.ndarray]) -> tuple | None:
    """(name, index, expected, actual) of the first cell that differs bit for bit;
    every NaN equals every NaN (calculus/float32_equality.py, errata L13)."""
    for name, e in expected.items():
        a = np.asarray(actual[name]).reshape(e.shape)
        differ = differing_float32(e, a) if e.dtype == np.float32 else e != a
        bad = np.argwhere(differ)
        if len(bad):
            idx = tuple(int(i) for i in bad[0])
            return name, idx, e[idx].item(), a[idx].item()
    return None


@dataclass
class Case:
    """One program to check: a proc, its defines and inputs, and the reference."""

    proc: A.Proc
    defines: dict[str, int]
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray] | None = None
    compiled: CompiledProc | None = None
    verdict: Verdict | None = None
    source: str = ""
    file: str = "<input>"
    seeds: tuple[int, ...] | None = None  # this case's schedules (None: the batch's)

    def ready(self) -> tuple[CompiledProc, dict[str, np.ndarray]]:
        """The compiled proc and the expected outputs of a case `prepare` set up
        (every case without a verdict)."""
        assert self.compiled is not None and self.expected is not None, self.verdict
        return self.compiled, self.expected


def prepare(case: Case, analysis=None) -> None:
    """Compile and compute the sequential reading; sets `verdict` on failure."""
    from gpusem.interpreter.gpuir.sequential import run_sequential

    try:
        case.compiled = compile_proc(case.proc, case.defines, analysis=analysis,
                                     source=case.source, file=case.file)
    except CompileError as err:
        kind = "unsupported" if err.message.startswith("unsupported:") else \
            "compile-error"
        case.verdict = Verdict(kind, err.message)
        return
    case.expected = run_sequential(case.proc, case.defines, case.inputs)


def check_batch(cases: list[Case], backend: str = "cpu", seeds=(0, 1, 2),
                timeout_s: float = 10.0) -> list[Verdict]:
    """Run every prepared case under every seed (its own `Case.seeds`, else `seeds`);
    kernels launch stage by stage, each stage's outputs feeding the next kernel, and
    every stage of the batch is one backend call (one build: one g++ library, one
    NVRTC module), whatever seeds its cases have."""
    be = shared_backend(backend)
    live = [(c, s) for c in cases if c.verdict is None for s in _seeds(c, seeds)]
    state = {(id(c), s): {k: v.copy() for k, v in c.inputs.items()} for c, s in live}
    failed: dict[tuple[int, int], tuple[str, str]] = {}
    stage = 0
    while True:
        todo = [(c, s) for c, s in live if stage < len(c.ready()[0].kernels)
                and (id(c), s) not in failed]
        if not todo:
            break
        jobs = []
        for c, s in todo:
            compiled, _ = c.ready()
            spec = compiled.specs()[stage]
            inputs = {p.name: (np.asarray(state[id(c), s][p.name]).reshape(-1)
                               if p.pointer else c.defines[p.name])
                      for p in spec.params}
            if compiled.kernels[stage].grid == 0:
                continue
            jobs.append((c, s, Job(spec, inputs, s, timeout_s)))
        results = be.run([j for _, _, j in jobs]) if jobs else []
        for (c, s, _), r in zip(jobs, results, strict=True):
            if not r.ok:
                failed[id(c), s] = (r.kind, r.message)
                continue
            for name, arr in r.outputs.items():
                state[id(c), s][name] = arr.reshape(c.inputs[name].shape)
        stage += 1
    verdicts: list[Verdict] = []
    for c in cases:
        if c.verdict is None:
            c.verdict = _verdict(c, _seeds(c, seeds), state, failed)
        verdicts.append(c.verdict)
    return verdicts


def _seeds(c: Case, seeds: Sequence[int]) -> Sequence[int]:
    return seeds if c.seeds is None else c.seeds


def _verdict(c: Case, seeds: Sequence[int],
             state: dict[tuple[int, int], dict[str, np.ndarray]],
             failed: dict[tuple[int, int], tuple[str, str]]) -> Verdict:
    compiled, expected = c.ready()
    src = compiled.source
    for s in seeds:
        if (id(c), s) in failed:
            kind, msg = failed[id(c), s]
            if kind == "unsupported":
                return Verdict("unsupported", msg, s, kernel_source=src)
            return Verdict("kernel-failed", f"{kind}: {msg}", s, kernel_source=src)
        diff = first_difference(expected, state[id(c), s])
        if diff is not None:
            return Verdict("disagree", "", s, diff, src)
    cells = sum(v.size for v in expected.values())
    return Verdict("agree", f"{len(seeds)} schedule(s), {cells} cells", None,
                   kernel_source=src)


def check_proc(proc: A.Proc, defines: Mapping[str, int], backend: str = "cpu",
               seeds=(0, 1, 2), *, source: str = "", file: str = "<input>",
               input_seed: int = 0, analysis=None) -> Verdict:
    from gpusem.typing_rules.gpuir.frontend import check_elements

    check_elements(proc, defines)  # before the inputs and the sequential reading
    case = Case(proc, dict(defines), make_inputs(proc, defines, input_seed),
                source=source, file=file)
    prepare(case, analysis)
    return check_batch([case], backend, seeds)[0]
