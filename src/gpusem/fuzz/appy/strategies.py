"""Hypothesis strategies for legal APPy programs (issues 7, 17), legal by construction.

A program is one function made of 1-3 *kernels* (top-level loop nests, tensor
statements, or a host loop around kernels), drawn from the families of `kernels.py` and
`kernels_more.py`, which between them reach every construct of `coverage.CONSTRUCTS`
(Sections 3-4 of seed 003 and the forms of its 20 NPBench kernels). Each family keeps
the legality rules of `typing_rules/appy/legality.py` by construction: workers write
only cells indexed by their own iteration, cells another worker may read are never
written in that kernel, reductions go through `#pragma atomic` or `reduction(+:x)`,
simd loops carry scalars only as reductions, index arrays hold in-range indices.

Kernel boundaries are kept (`AppyProgram.kernels`), so that each kernel gets its own
verdict (the target runs them one by one on the state the sequential reading reaches).
`programs(avoid=...)` steers away from known bugs (issue 17): a kernel whose
constructs include a known cause's trigger is drawn again, nine times in ten, the way
CSmith-style fuzzers switch off a feature that keeps crashing the compiler; the tenth
keeps the construct in the coverage table and watches the known bug.

Shrinking: every choice is a local draw whose first alternative is the simplest (fewest
kernels, smallest size, a constant), so hypothesis shrinks toward readable programs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gpusem.calculus.appy import ast as A
from gpusem.fuzz.appy.coverage import features
from gpusem.fuzz.appy.exprs import Ctx
from gpusem.fuzz.appy.kernels import FAMILIES, LAST_ONLY
from hypothesis import strategies as st

SIZES = (1, 2, 3, 7, 16, 31, 100, 127, 128, 129, 255, 256, 257, 300, 511, 513, 1000, 1025)
ROWS = (1, 2, 3, 4, 5)
COLS = (1, 3, 16, 31, 64, 100, 127, 129, 200, 257)
DTYPES = ("float32", "int32", "float64", "int64")
AVOID_RATE = 9  # of 10 kernels that hit a known trigger are drawn again


@dataclass(frozen=True)
class AppyProgram:
    """A generated program with its inputs (arrays are made from `data_seed`)."""

    fn: A.Function
    arrays: tuple[tuple[str, str, tuple[int, ...]], ...]  # name, dtype, shape
    scalars: tuple[tuple[str, int | float], ...]
    data_seed: int = 0
    negative: bool = False
    mutated: str = ""  # the mutator that made it illegal (fuzz/appy/mutators.py)
    fixed: dict | None = None  # explicit arrays (a program read back from a bundle)
    kernels: tuple[int, ...] = ()  # top-level statements per kernel (() = one kernel)
    gens: tuple[tuple[str, str], ...] = ()  # index arrays: name -> "idx:n" | "csr:r"

    def inputs(self) -> tuple[dict[str, np.ndarray], dict[str, int | float]]:
        if self.fixed is not None:
            return ({name: self.fixed[name].copy() for name, _, _ in self.arrays},
                    dict(self.scalars))
        rng = np.random.default_rng(self.data_seed)
        gens = dict(self.gens)
        arrays = {}
        for name, dtype, shape in self.arrays:
            if name in gens:
                arrays[name] = _index_data(gens[name], dtype, shape, rng)
                continue
            lo, hi = (-16, -1) if self.negative else (-8, 9)
            raw = rng.integers(lo, hi, size=shape)
            # Quarter-integers are exact in every float type: sums stay exact, so a
            # reassociated reduction cannot blur a real mismatch.
            vals = raw / 4 if dtype.startswith("float") else raw
            arrays[name] = np.asarray(vals, dtype=dtype)
        return arrays, dict(self.scalars)

    def kernel_slices(self) -> list[tuple[int, int]]:
        """(start, stop) of each kernel in `fn.body`."""
        counts = self.kernels or (len(self.fn.body),)
        out, k = [], 0
        for c in counts:
            out.append((k, k + c))
            k += c
        return out


def _index_data(gen: str, dtype: str, shape: tuple[int, ...],
                rng: np.random.Generator) -> np.ndarray:
    kind, _, arg = gen.partition(":")
    n = int(arg)
    if kind == "csr":  # row starts: nondecreasing, at most n entries per row
        steps = rng.integers(0, n + 1, size=shape[0] - 1)
        return np.concatenate([[0], np.cumsum(steps)]).astype(dtype)
    return rng.integers(0, max(n, 1), size=shape).astype(dtype)  # idx:n in [0, n)


# ------------------------------------------------------------------------ programs


@st.composite
def programs(draw, families: tuple[str, ...] | None = None,
             avoid: tuple[frozenset[str], ...] = ()) -> AppyProgram:
    families = families or tuple(FAMILIES)
    dtype = draw(st.sampled_from(DTYPES))
    two_d = draw(st.booleans())
    n = draw(st.sampled_from(COLS if two_d else SIZES))
    sizes = {"N": n, "M": draw(st.sampled_from(ROWS)), "K": draw(st.sampled_from((2, 3))),
             "T": draw(st.sampled_from((1, 2, 3))), "1": 1}
    ctx = Ctx(dtype, sizes)
    body: list[A.Stmt] = []
    kernels: list[int] = []
    count = draw(st.integers(1, 3))
    for k in range(count):
        allowed = tuple(f for f in families if f not in LAST_ONLY or k == count - 1)
        stmts = draw(_kernel(ctx, allowed, avoid))
        body += stmts
        kernels.append(len(stmts))
    names = {x.id for s in A.walk_stmts(tuple(body)) for e in A.stmt_exprs(s)
             for x in A.walk_expr(e) if isinstance(x, A.Name)}
    used = {x.array for s in A.walk_stmts(tuple(body)) for e in A.stmt_exprs(s)
            for x in A.walk_expr(e) if isinstance(x, A.Subscript)}
    arrays = tuple((name, dt, tuple(sizes[d] if d in sizes else int(d) for d in dims))
                   for name, (dt, dims) in ctx.arrays.items() if name in used)
    scalars = tuple((k, v) for k, v in sizes.items() if k in names and k != "1") + tuple(
        (k, v) for k, v in ctx.params.items() if k in names)
    params = tuple(A.Param(name, True) for name, _, _ in arrays) + tuple(
        A.Param(k, False) for k, _ in scalars)
    fn = A.Function("kernel", params, tuple(body))
    return AppyProgram(fn, arrays, scalars, draw(st.integers(0, 2**16)),
                       negative=draw(st.integers(0, 4)) == 0, kernels=tuple(kernels),
                       gens=tuple((k, v) for k, v in ctx.gens.items() if k in used))


@st.composite
def _kernel(draw, ctx: Ctx, families: tuple[str, ...],
            avoid: tuple[frozenset[str], ...]) -> list[A.Stmt]:
    stmts: list[A.Stmt] = []
    for _ in range(6):
        stmts = draw(FAMILIES[draw(st.sampled_from(families))](ctx))
        if not avoid:
            break
        feats = kernel_features(ctx, tuple(stmts))
        if not any(t <= feats for t in avoid) or draw(st.integers(0, AVOID_RATE)) == 0:
            break
    return stmts


def kernel_features(ctx: Ctx, body: tuple[A.Stmt, ...]) -> set[str]:
    params = tuple(A.Param(k, False) for k in list(ctx.sizes) + list(ctx.params))
    return features(A.Function("k", params, body), ctx.sizes, (ctx.dtype,))
