"""From a compiled Bundl program to backend jobs, and back to Bundl global memory.

The kernel's parameters are the program's globals in declaration order, each a pointer
to its elements (int -> int32, float -> float32, bool -> bool, one byte each side), then
the zero-filled scratch arrays of `alloc ... in Global` (galloc.py). Initial contents
follow the `global` declarations: zeros, `iota`, or the literal list.
"""

from __future__ import annotations

import numpy as np
from gpusem.calculus.bundl import ast as B
from gpusem.calculus.float32_equality import differing_float32, same_float32
from gpusem.compiler.backends.kernel import Job, KernelSpec, ptr
from gpusem.compiler.bundl_cuda.pipeline import CompiledKernel

DTYPES = {B.BaseType.INT: "int32", B.BaseType.FLOAT: "float32", B.BaseType.BOOL: "bool"}


def initial_globals(prog: B.Program) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for g in prog.globals:
        dtype = DTYPES[g.elem]
        match g.init:
            case None:
                values = np.zeros(g.size, dtype=dtype)
            case B.Iota():
                values = np.arange(g.size).astype(dtype)
            case literals:
                values = np.array([lit.value for lit in literals], dtype=dtype)
        out[f"g_{g.name}"] = values
    return out


def kernel_spec(kernel: CompiledKernel) -> KernelSpec:
    params = tuple(ptr(f"g_{name}", DTYPES[elem], size)
                   for name, elem, size in kernel.globals)
    params += tuple(ptr(name, DTYPES[elem], size)
                    for name, elem, size in kernel.scratch)
    return KernelSpec(kernel.name, kernel.source, kernel.blocks, kernel.threads,
                      kernel.smem_bytes, params)


def jobs_for(prog: B.Program, kernel: CompiledKernel, seeds=(0,),
             timeout_s: float = 10.0) -> list[Job]:
    spec = kernel_spec(kernel)
    inputs = initial_globals(prog)
    for name, elem, size in kernel.scratch:  # `alloc in Global` arrays start zeroed
        inputs[name] = np.zeros(size, dtype=DTYPES[elem])
    return [Job(spec, inputs, seed, timeout_s) for seed in seeds]


def as_bundl_values(prog: B.Program, outputs: dict[str, np.ndarray]) -> dict[str, list]:
    """Backend outputs -> {global name: [Python values]} as the interpreter reports.
    A whole array at a time (`tolist` gives what `bool(v)`, `int(v)` and `float(v)`
    of each cell give): one call a cell took seconds over arrays of millions of
    cells (the robustness sample's `exec` of a `bool[7906612]`, tests/robust)."""
    values: dict[str, list] = {}
    for g in prog.globals:
        arr = outputs[f"g_{g.name}"]
        match g.elem:
            case B.BaseType.BOOL:
                values[g.name] = arr.astype(bool).tolist()
            case B.BaseType.INT if arr.dtype.kind in "iu":
                values[g.name] = arr.tolist()
            case B.BaseType.INT:
                values[g.name] = [int(v) for v in arr]
            case B.BaseType.FLOAT:
                values[g.name] = arr.astype(np.float32).tolist()
    return values


def first_difference(prog: B.Program, expected: dict[str, list],
                     actual: dict[str, list]) -> tuple[str, int, object, object] | None:
    """The first cell where two memories differ: floats bit for bit, every NaN equal
    to every NaN (calculus/float32_equality.py, errata L13)."""
    for g in prog.globals:
        want, got = expected[g.name], actual[g.name]
        if len(want) != len(got):
            raise ValueError(f"{g.name}: {len(want)} cells expected, {len(got)} given")
        i = _first_differing(g.elem, want, got)
        if i is not None:
            return g.name, i, want[i], got[i]
    return None


def agrees(prog: B.Program, expected: dict[str, list],
           outputs: dict[str, np.ndarray], arrays: dict[str, np.ndarray]) -> bool:
    """True only where `first_difference(prog, expected, as_bundl_values(prog,
    outputs))` is None, decided on the backend's arrays themselves (no Python value a
    cell); False where it may not be (the caller then asks `first_difference`).
    `arrays`: the expected lists as arrays, filled on first use, for the caller to
    keep across schedules."""
    for g in prog.globals:
        want = arrays.get(g.name)
        if want is None:
            want = arrays[g.name] = _as_array(g.elem, expected[g.name])
        got = outputs[f"g_{g.name}"]
        if want.dtype == object or want.shape != got.shape:
            return False
        with np.errstate(all="ignore"):
            if g.elem == B.BaseType.FLOAT:
                if differing_float32(want, got.astype(np.float32)).any():
                    return False
            elif g.elem == B.BaseType.BOOL:
                if (want != got.astype(bool).astype(np.int64)).any():
                    return False
            elif got.dtype.kind not in "iu" or (want != got.astype(np.int64)).any():
                return False
    return True


def _as_array(elem: B.BaseType, cells: list) -> np.ndarray:
    """The interpreter's cells as float32 or int64 (bools as 0/1: Python's
    `True == 1`); an object array where they are of other types or past int64 (no
    array comparison is exact for them)."""
    kinds = set(map(type, cells))
    try:
        if elem == B.BaseType.FLOAT and kinds <= {float}:
            with np.errstate(all="ignore"):
                return np.array(cells, dtype=np.float32)
        if elem != B.BaseType.FLOAT and kinds <= {int, bool}:
            return np.array(cells, dtype=np.int64)
    except OverflowError:
        pass
    return np.array([None], dtype=object)


def _first_differing(elem: B.BaseType, want: list, got: list) -> int | None:
    """The first index where `_same` fails, NumPy over the whole array where both
    lists hold only the Python types the interpreter and `as_bundl_values` give (a
    loop a cell was ~25 s of a 7.9M-cell `exec`); else that loop."""
    a, b = _as_array(elem, want), _as_array(elem, got)  # object: not exact in NumPy
    if a.dtype == object or b.dtype == object:
        return next((i for i, (e, g) in enumerate(zip(want, got))
                     if not _same(elem, e, g)), None)
    with np.errstate(all="ignore"):
        mask = differing_float32(a, b) if elem == B.BaseType.FLOAT else a != b
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _same(elem: B.BaseType, e, a) -> bool:
    if elem != B.BaseType.FLOAT:
        return e == a
    return same_float32(e, a)
