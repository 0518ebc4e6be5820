"""The GPU IR reading (interpreter/gpuir/sequential.py) of a proc text on
`gpusem exec`'s inputs, computed once per text and sizes in a test process.

At N = 256 one reading of a fused GEMM's proc is seconds of interpreted work (297 of
the 313 profiled seconds of test_blocked_prefetch's cpu-harness test, which read
the same two procs five times). The reading is a function of the text, the sizes
and the inputs, and the inputs are `make_inputs`' deterministic draw, so a reading
computed once is the reading every later caller would compute; each caller gets its
own copies of the arrays."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

import numpy as np
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.run import Case, make_inputs
from gpusem.interpreter.gpuir.sequential import run_sequential


@lru_cache(maxsize=16)
def _reading(text: str, file: str, sizes: tuple[tuple[str, int], ...]
             ) -> tuple[A.Proc, dict[str, np.ndarray], dict[str, np.ndarray]]:
    proc = parse_module(text, file).procs[-1]
    inputs = make_inputs(proc, dict(sizes))
    return proc, inputs, run_sequential(proc, dict(sizes), inputs)


def reading_case(text: str, sizes: Mapping[str, int],
                 file: str = "fig5_gemm.gpuir") -> Case:
    """A Case of the last proc of `text` with its inputs and its reading (copies)."""
    proc, inputs, expected = _reading(text, file, tuple(sorted(sizes.items())))
    return Case(proc, dict(sizes), {k: v.copy() for k, v in inputs.items()},
                {k: v.copy() for k, v in expected.items()}, source=text)
