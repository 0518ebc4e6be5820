"""Standalone CUDA reproducers for compiled GPU IR (issue 18): the proc's kernels in
launch order, its data parameters' deterministic inputs (`run.make_inputs`) and their
sequential reading (`interpreter/gpuir/sequential`) as the expected output, through the
backends' generic writer (`compiler/backends/standalone.py`, which says what the file
does)."""

from __future__ import annotations

from collections.abc import Mapping

from gpusem.compiler.backends.standalone import standalone_source
from gpusem.compiler.backends.standalone_cpu import standalone_cpu_source
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from gpusem.compiler.gpuir_cuda.run import make_inputs


def standalone_proc(source: str, file: str, defines: Mapping[str, int],
                    proc_name: str | None = None, input_seed: int = 0,
                    title: str = "", cpu_seed: int | None = None) -> str:
    """The reproducer of the last proc of `source` (or `proc_name`) under `defines`,
    with the inputs the seq = par property uses (`input_seed`); `cpu_seed` given:
    `repro_cpu.cpp` for the cpu harness under that schedule seed, not `repro.cu`."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.interpreter.gpuir.sequential import run_sequential

    module = parse_module(source, file)
    procs = [p for p in module.procs if proc_name in (None, p.name)]
    proc = procs[-1] if procs else module.procs[-1]
    env = dict(defines)
    compiled = compile_proc(proc, env, source=source, file=file)
    inputs = make_inputs(proc, env, input_seed)
    expected = run_sequential(proc, env, inputs)
    launches = [spec for spec, k in zip(compiled.specs(), compiled.kernels, strict=True)
                if k.grid != 0]
    values: dict[str, object] = {**env, **inputs}
    if cpu_seed is not None:
        return standalone_cpu_source(launches, values, expected,
                                     title or f"{file}, proc {proc.name}", cpu_seed)
    return standalone_source(compiled.source, launches, values, expected,
                             title or f"{file}, proc {proc.name}")
