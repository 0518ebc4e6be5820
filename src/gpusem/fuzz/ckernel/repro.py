"""A CKernel finding as Csmith leaves one: `repro.cu`, the emitted kernel with its
inputs and the reference's expected output embedded (compiler/backends/standalone.py),
which `nvcc -arch=sm_90a repro.cu` builds alone; and `inputs.json`."""

from __future__ import annotations

import json
from typing import Any

from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.ckernel.printer import print_kernel
from gpusem.compiler.backends.standalone import standalone_source
from gpusem.compiler.ckernel_cuda.emit import kernel_spec
from gpusem.interpreter.ckernel.inputs import initial_memory


def repro_source(k: A.Kernel, expected: dict[str, Any]) -> str:
    """The standalone reproducer, or "" when the reference has no output for `k`."""
    if not expected:
        return ""
    title = "CKernel program " + print_kernel(k).splitlines()[0]
    return standalone_source(kernel_spec(k).source, [kernel_spec(k)],
                             initial_memory(k), expected, title=title)


def inputs_json(k: A.Kernel) -> str:
    """Every parameter's initial contents (also a function of `inputs` alone)."""
    return json.dumps({"inputs_seed": k.inputs, "buffers": {
        n: a.tolist() for n, a in initial_memory(k).items()}}) + "\n"
