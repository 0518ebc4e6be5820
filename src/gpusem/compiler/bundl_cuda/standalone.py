"""Standalone CUDA reproducers for compiled Bundl programs (issue 18): the kernel, its
globals' initial values and the interpreter's final memory, through the backends'
generic writer (`compiler/backends/standalone.py`, which says what the file does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from gpusem.compiler.backends.standalone import NVCC_COMMAND
from gpusem.compiler.backends.standalone_cpu import CPU_COMMAND, standalone_cpu_source
from gpusem.compiler.backends.standalone import standalone_source as write_standalone
from gpusem.compiler.bundl_cuda.launch import DTYPES, kernel_spec
from gpusem.compiler.bundl_cuda.pipeline import CompiledKernel

__all__ = ["CPU_COMMAND", "NVCC_COMMAND", "standalone_cpu", "standalone_source"]


def standalone_source(kernel: CompiledKernel, inputs: Mapping[str, np.ndarray],
                      expected: Mapping[str, Sequence[object]] | None,
                      title: str = "") -> str:
    """`inputs` maps `g_NAME` to the initial contents (`launch.initial_globals`);
    `expected` maps NAME to the interpreter's final values, or is None (the program
    then prints its output)."""
    want, inputs = _data(kernel, inputs, expected)
    return write_standalone(kernel.source, [kernel_spec(kernel)], inputs, want, title)


def standalone_cpu(kernel: CompiledKernel, inputs: Mapping[str, np.ndarray],
                   expected: Mapping[str, Sequence[object]] | None, title: str = "",
                   seed: int = 0) -> str:
    """The same reproducer for the cpu harness (`repro_cpu.cpp`: g++ alone), under
    the harness schedule `seed` the finding was seen with."""
    want, inputs = _data(kernel, inputs, expected)
    return standalone_cpu_source([kernel_spec(kernel)], inputs, want, title, seed)


def _data(kernel: CompiledKernel, inputs: Mapping[str, np.ndarray],
          expected: Mapping[str, Sequence[object]] | None
          ) -> tuple[dict[str, np.ndarray] | None, dict[str, np.ndarray]]:
    want = None if expected is None else {
        f"g_{name}": np.asarray(expected[name], dtype=DTYPES[elem])
        for name, elem, _ in kernel.globals}
    inputs = dict(inputs)
    for name, elem, size in kernel.scratch:  # `alloc in Global` arrays start zeroed
        inputs[name] = np.zeros(size, dtype=DTYPES[elem])
    return want, inputs
