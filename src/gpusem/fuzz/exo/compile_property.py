"""The compile property of the Exo target (issue 16, item 4): a program that Exo-GPU's
checker and gpusem's (under both rule sets) accept is compiled by Exo to CUDA, built
with nvcc for sm_90a and run; every data parameter must end bit for bit as gpusem's
sequential reading of the same GPU IR program says (seq = par, Section 2.3).

Batches: the procs of many programs are compiled by one `ext_compile_procs` (each
renamed `k<i>`), built by one nvcc command and run by one process
(`compiler/gpuir_exo/harness.py`). Outcomes per program:
  agree       outputs equal the sequential reading
  wrong       a cell differs (the finding names the first)
  hang        the kernel did not finish (killed; the batch goes on)
  runtime     a CUDA error, or the runner died
  exo-compile Exo's code generation failed on the batch and on the program alone
  nvcc        Exo's CUDA does not build
  built       backend `cpu`: built for sm_90a, not run (no GPU)
  uninitialised  not compared: an output depends on memory the program reads before
              writing it (the sequential reading run with fresh allocations poisoned
              differs from the zero-filled one); CUDA leaves that memory undefined.
              The first H100 compile census reported 76 such kernels as `wrong`
              (results/exo/FINDINGS.md, "not findings").

Inputs: `make_inputs`' floats (full 24-bit mantissas), except for programs with a
wgmma, whose floats are integers in [-8, 8] (`exact_mma_inputs`): Exo's wgmma rounds
its operands to tf32 and sums in the tensor core's order, the reading in float32 one
k at a time, and the two agree bit for bit exactly when every operand, product and
partial sum is an integer well inside both formats (compiler/gpuir_exo/
emit_wgmma.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.walk import walk
from gpusem.compiler.gpuir_cuda.run import first_difference, make_inputs
from gpusem.compiler.gpuir_exo.driver import ExoDriver
from gpusem.compiler.gpuir_exo.emit import emit_proc
from gpusem.compiler.gpuir_exo.emit_wgmma import MMA
from gpusem.compiler.gpuir_exo.features import kernel_features
from gpusem.compiler.gpuir_exo.harness import Harness, HarnessCase, main_source
from gpusem.fuzz.exo.checking import Checked
from gpusem.fuzz.targets import CheckResult


@dataclass
class Compiled:
    checked: Checked
    outcome: str
    detail: str = ""
    expected: dict | None = None
    actual: dict | None = None
    inputs: dict | None = None
    code: dict | None = None
    main: str = ""
    features: frozenset[str] = frozenset()  # compiler/gpuir_exo/features.py

    def result(self) -> CheckResult:
        if self.outcome == "agree":
            return CheckResult("pass")
        if self.outcome == "uninitialised":
            return CheckResult("invalid", kind="uninitialised", detail=self.detail)
        if self.outcome == "built":
            return CheckResult("skip", kind="built", detail="built for sm_90a by nvcc; "
                               "no GPU to run it (backend cpu)")
        c = self.checked
        var = self.detail.split("[")[0] if self.outcome == "wrong" else ""
        sig = f"compile:{self.outcome}:{var or _norm(self.detail)}"
        files = {"program.gpuir": "".join(f"# defines: {k}={v}\n"
                                          for k, v in c.defines.items()) + c.source,
                 "defines.json": json.dumps(c.defines) + "\n",
                 "trace.txt": f"outcome: {self.outcome}\n{self.detail}\n"}
        if c.exo_source is not None:
            files["program_exo.py"] = c.exo_source.standalone()
        if self.code:
            files["kernel.cu"] = "\n".join(
                f"// ===== {ext} =====\n{text}" for ext, text in sorted(self.code.items())
                if ext in ("h", "c", "cuh", "cu"))
            files["main.cu"] = self.main
        for name, arrays in (("inputs.json", self.inputs), ("expected.json",
                             self.expected), ("actual.json", self.actual)):
            if arrays is not None:
                files[name] = json.dumps({k: np.asarray(v).tolist()
                                          for k, v in arrays.items()}) + "\n"
        return CheckResult("finding", sig, f"compile-{self.outcome}",
                           self.detail[:200], files, c.source.count("\n"))


def _norm(text: str) -> str:
    from gpusem.compiler.gpuir_exo.verdict import normalise

    return normalise(text, 80)


def exact_mma_inputs(proc: A.Proc, defines: dict[str, int], seed: int = 0
                     ) -> dict[str, np.ndarray]:
    """`make_inputs`, with the floats of a program that uses wgmma rounded to
    integers in [-8, 8] (see the module docstring)."""
    inputs = make_inputs(proc, defines, seed=seed)
    if not any(isinstance(s, A.InstrCall) and s.instr == MMA for s in walk(proc.body)):
        return inputs
    return {k: np.round(v * 4).astype(v.dtype) if v.dtype.kind == "f" else v
            for k, v in inputs.items()}


def compile_batch(driver: ExoDriver, harness: Harness, batch: list[Checked],
                  seed: int = 0) -> list[Compiled]:
    """Compile, build, run and compare a batch of programs both checkers accept; each
    result carries the async features of its kernel's CUDA."""
    items, cases = [], []
    for i, c in enumerate(batch):
        assert c.proc is not None
        proc = replace(c.proc, name=f"k{i}")
        es = emit_proc(proc, c.defines, driver.install.dialect)
        items.append((es.text, es.proc))
        inputs = exact_mma_inputs(proc, c.defines, seed=seed + i)
        cases.append(HarnessCase(es.proc, proc, c.defines, inputs))
    code, why = driver.compile_batch(items)
    if code is None:
        if len(batch) == 1:
            return [Compiled(batch[0], "exo-compile", why)]
        return [r for c in batch for r in compile_batch(driver, harness, [c], seed)]
    feats = kernel_features(code)
    out = _compile_run(harness, batch, cases, code, seed, driver)
    for i, res in enumerate(out):  # one result per program, in batch order
        if not res.features:  # (a rebuilt single kernel has its own)
            res.features = feats.get(f"k{i}", frozenset())
    return out


def _compile_run(harness: Harness, batch: list[Checked], cases: list[HarnessCase],
                 code: dict, seed: int, driver: ExoDriver) -> list[Compiled]:
    from gpusem.interpreter.gpuir.sequential import (
        reads_uninitialised,
        run_sequential,
    )

    build = harness.build(cases, code)
    main = main_source(cases, "batch.h")
    if not build.ok:
        if len(batch) == 1:
            return [Compiled(batch[0], "nvcc", build.log, code=code, main=main)]
        return [r for c in batch for r in compile_batch(driver, harness, [c], seed)]
    if harness.backend != "cuda":
        return [Compiled(c, "built") for c in batch]
    runs = harness.run(build, cases)
    out = []
    for c, case, run in zip(batch, cases, runs, strict=True):
        assert c.proc is not None
        expected = run_sequential(c.proc, c.defines, case.inputs)
        if (cell := reads_uninitialised(c.proc, c.defines, case.inputs,
                                        expected)) is not None:
            # not a finding: CUDA leaves fresh memory undefined, we zero it
            out.append(Compiled(c, "uninitialised", f"{cell} depends on memory the "
                                "program reads before writing it"))
            continue
        if run.status != "ok":
            kind = "hang" if run.status == "hang" else "runtime"
            out.append(Compiled(c, kind, run.detail, expected, None, case.inputs,
                                code, main))
            continue
        diff = first_difference(expected, run.outputs)
        if diff is None:
            out.append(Compiled(c, "agree"))
        else:
            name, idx, e, a = diff
            out.append(Compiled(c, "wrong", f"{name}{list(idx)}: the sequential "
                                f"reading says {e!r}, Exo's CUDA gives {a!r}",
                                expected, run.outputs, case.inputs, code, main))
    return out


def check_compiled(driver: ExoDriver, harness: Harness, c: Checked) -> CheckResult:
    return compile_batch(driver, harness, [c])[0].result()
