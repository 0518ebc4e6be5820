"""Collective tilings ω and thread mappings f_ω: Exo-GPU Section 4, Definition 4.2 and
derive_ω, for every collective unit of Figure 11.

A tiling is a tuple of dimensions D_m = (D_m extent, P_m thread pitch) over the
threads of one cluster (natural thread index, Definition 4.1), and the current
collective is a box in it: on dimension m the `box` elements from offset o_m(σ), where
o_m is affine in the enclosing cuda_threads iterators (its dimension operators O_m:
each one iterator y over [lo, lo + count) with a stride). The threads of the
collective are { Σ_m (o_m(σ) + k_m) * P_m | 0 <= k_m < box_m }.

derive_ω (a cuda_threads loop of unit δ = (domain, box)):
  (1) shape alignment: the tiling's dimensions and δ's domain are split at every
      thread pitch either has (their common refinement; each split must divide, and
      the current collective must not straddle a split), after δ's domain is completed
      to the cluster by a leading dimension δ does not restrict;
  (2) single-dimension refinement: exactly one dimension has a unit box different
      from both the current box and the extent: it is tiled, iteration y taking the
      (y - lo)-th tile of δ's box there; on every other dimension the collective keeps
      its box. No such dimension is a trivial tiling (one iteration).
CudaWarps restricts the CTA dimension to a range of warps. A collective *is* a unit
(an instruction's τ_u-scope) when its thread set is one box-aligned tile of the unit
(checked on the concrete iterations, as the memory analysis is); the agnostic units'
wildcard `_` boxes match any extent.

Conventions (paper -> Python):
  ω                           -> `ThreadMapping` (launch, dims)
  D_m, P_m, O_m               -> `TDim.extent`, `TDim.pitch`, `TDim.terms`
  derive_ω(ω, δ, y, lo, hi)   -> `derive(parent, unit, var, lo, lo_value, n_iter, span)`
  f_ω(σ)                      -> `ThreadMapping.threads(env)`

Note: the paper gives derive_ω in prose only; this follows its two steps and the
authors' implementation's reading of them (Exo-GPU `coll_algebra.py`, read, not
copied), except that iteration y of cuda_threads(lo, hi) is the (y - lo)-th tile (as
before; errata "Collective tilings").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from math import gcd, prod

from gpusem.calculus.errors import IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import eval_c
from gpusem.calculus.gpuir.units import WARP, WARPGROUP, Launch, coll_type, unit_def
from gpusem.calculus.span import Span

RULE = "CollectiveAnalysis"
AGNOSTIC_UNITS = ("cuda_agnostic_sub_cta", "cuda_agnostic_intact_cta")


@dataclass(frozen=True, slots=True)
class Term:
    """One dimension operator: iterator `var` over [lo, lo + count), advancing the
    offset by `stride` elements of its dimension per iteration; `order` is its loop's
    nesting depth (the flattened offset lists terms outermost loop first)."""

    var: str
    lo: A.CExpr
    lo_value: int
    stride: int
    count: int
    order: int = 0


@dataclass(frozen=True, slots=True)
class TDim:
    """One dimension of a tiling and the current collective's box on it."""

    extent: int
    pitch: int
    box: int
    base: int = 0
    terms: tuple[Term, ...] = ()

    def offset(self, env: Mapping[str, int]) -> int:
        return self.base + sum((env[t.var] - t.lo_value) * t.stride
                               for t in self.terms)

    @property
    def reach(self) -> int:
        """One past the largest element any iteration's box touches."""
        return self.base + sum((t.count - 1) * t.stride for t in self.terms) + self.box


def _bad(span: Span, msg: str) -> IllTyped:
    return IllTyped(f"bad tiling: {msg}", rule=RULE, span=span)


@dataclass(frozen=True, slots=True)
class ThreadMapping:
    """f_ω: the current collective as a box in the cluster's thread dimensions."""

    launch: Launch
    dims: tuple[TDim, ...]
    poisoned: bool = False  # derived from a failed tiling (its error is reported)

    @staticmethod
    def run(launch: Launch, ctas: int, length: int, base: int,
            terms: tuple[tuple[str, A.CExpr, int], ...] = ()) -> ThreadMapping:
        """The common shape: `ctas` runs of `length` threads, blockDim apart, the first
        at base + Σ (y - lo) * stride (each iterator taken over one iteration)."""
        ts = tuple(Term(y, lo, int(eval_c(lo, {})) if isinstance(lo, A.CInt) else 0,
                        s, 1, k) for k, (y, lo, s) in enumerate(terms))
        b, c = launch.block_dim, launch.cluster_dim
        if ctas == 1:
            return ThreadMapping(launch, (TDim(c * b, 1, length, base, ts),))
        return ThreadMapping(launch, (TDim(c, b, ctas), TDim(b, 1, length, base, ts)))

    # -------------------------------------------------------------- the thread set
    @property
    def size(self) -> int:
        return prod(d.box for d in self.dims)

    def offset(self, env: Mapping[str, int]) -> int:
        """The first thread of the collective under σ."""
        return sum(d.offset(env) * d.pitch for d in self.dims)

    def threads(self, env: Mapping[str, int]) -> tuple[int, ...]:
        starts = [(d.offset(env), d.box, d.pitch) for d in self.dims]
        return tuple(sorted(sum((o + k) * p for (o, _, p), k in zip(starts, ks))
                            for ks in itertools.product(*(range(n) for _, n, _ in
                                                          starts))))

    def iterations(self) -> Iterator[dict[str, int]]:
        """Every assignment of the iterators the mapping depends on."""
        terms = {t.var: t for d in self.dims for t in d.terms}
        for values in itertools.product(*(range(t.lo_value, t.lo_value + t.count)
                                          for t in terms.values())):
            yield dict(zip(terms, values))

    # ------------------------------------------- the flattened (legacy) view
    @property
    def base(self) -> int:
        return sum(d.base * d.pitch for d in self.dims)

    @property
    def terms(self) -> tuple[tuple[str, A.CExpr, int], ...]:
        """offset(σ) = base + Σ (σ[y] - lo) * stride, strides in threads, outermost
        loop first."""
        flat = sorted(((t.order, t.var, t.lo, t.stride * d.pitch)
                       for d in self.dims for t in d.terms), key=lambda x: x[0])
        return tuple((y, lo, s) for _, y, lo, s in flat)

    @property
    def depth(self) -> int:
        return sum(len(d.terms) for d in self.dims)

    @property
    def simple(self) -> bool:
        return self._runs() is not None

    @property
    def ctas(self) -> int:
        runs = self._runs()
        assert runs is not None, "a strided collective has no (ctas, length) form"
        return runs[0]

    @property
    def length(self) -> int:
        runs = self._runs()
        assert runs is not None, "a strided collective has no (ctas, length) form"
        return runs[1]

    def _runs(self) -> tuple[int, int] | None:
        """(ctas, length) when the collective is `ctas` runs of `length` contiguous
        threads, blockDim apart; None for a strided one."""
        dims = sorted((d for d in self.dims if d.box > 1), key=lambda d: d.pitch)
        length, reach, i = 1, 1, 0
        while i < len(dims) and dims[i].pitch == reach and \
                (i == 0 or dims[i - 1].box == dims[i - 1].extent):
            length *= dims[i].box
            reach = dims[i].pitch * dims[i].extent
            i += 1
        rest = dims[i:]
        if not rest:
            return 1, length
        b = self.launch.block_dim
        if len(rest) == 1 and rest[0].pitch == b and length <= b:
            return rest[0].box, length
        return None

    @property
    def alignment(self) -> int:
        """The largest a with offset(σ) ≡ 0 (mod a) for every σ."""
        a = self.base
        for _, _, s in self.terms:
            a = gcd(a, s)
        return a if a else 1 << 30

    def aligned(self, a: int) -> bool:
        return self.base % a == 0 and all(s % a == 0 for _, _, s in self.terms)

    @property
    def vars(self) -> tuple[str, ...]:
        return tuple(y for y, _, _ in self.terms)

    # ----------------------------------------------------------------- units
    def is_unit(self, u: A.UnitExpr) -> bool:
        """Is this a τ_u-scope: on every iteration exactly one tile of unit `u`?"""
        if self.poisoned:
            return False
        try:
            dom, box = _unit_shape(u, self.launch, partial_box=1)
        except IllTyped:
            return False
        return all(_is_tile(self.threads(env), dom, box) for env in self.iterations())

    def describe(self) -> str:
        """The unit this collective is, in the syntax of Figure 11, or its shape."""
        launch = self.launch
        if self.size == 1:
            return "cuda_thread"
        runs = self._runs()
        if runs is None:
            if self.is_unit(A.UnitExpr("cuda_quadpair")):
                return "cuda_quadpair"
            shape = " x ".join(f"{d.box} (pitch {d.pitch})"
                               for d in sorted(self.dims, key=lambda d: -d.pitch)
                               if d.box > 1)
            return f"{self.size} threads: {shape}"
        ctas, n = runs
        b = launch.block_dim
        if ctas == 1 and n % b == 0 and self.aligned(b):
            k = n // launch.block_dim
            if k == 1:
                return "cuda_cta_in_cluster"
            if k == launch.cluster_dim:
                return "cuda_cluster"
            return f"{k} * cuda_cta_in_cluster"
        if ctas == 1 and n == WARPGROUP and self.aligned(WARPGROUP):
            return "cuda_warpgroup"
        if ctas == 1 and n % WARP == 0 and self.aligned(WARP):
            return "cuda_warp" if n == WARP else f"{n // WARP} * cuda_warp"
        if ctas > 1:
            return f"{ctas} x {n} threads (one run per CTA)"
        return f"{n} threads"


def root_mapping(launch: Launch) -> ThreadMapping:
    """CudaDeviceFunction: the whole cluster; its domain is (blockDim,) or (clusterDim,
    blockDim) (Section 4), every operator list empty."""
    b, c = launch.block_dim, launch.cluster_dim
    if c == 1:
        return ThreadMapping(launch, (TDim(b, 1, b),))
    return ThreadMapping(launch, (TDim(c, b, c), TDim(b, 1, b)))


# ------------------------------------------------------------ shape alignment


Box = tuple[int | None, ...]


def _unit_shape(u: A.UnitExpr, launch: Launch,
                partial_box: int | None) -> tuple[tuple[int, ...], Box]:
    """δ's (domain, box), completed to the whole cluster by a leading dimension whose
    box is `partial_box` (None: unrestricted, for tiling; 1: one copy, for matching),
    dimensions of extent 1 dropped."""
    t = coll_type(u, launch)
    dom, box = list(t.domain), list(t.box)
    total, have = launch.cluster_threads, prod(dom)
    if have not in (1, launch.block_dim, total):
        raise IllTyped(f"bad tiling: unit {u.name}'s domain {tuple(dom)} does not "
                       f"divide the cluster's {total} threads", rule=RULE, span=u.span)
    if have != total:
        dom, box = [total // have] + dom, [partial_box] + box
    keep = [i for i, n in enumerate(dom) if n != 1]
    return tuple(dom[i] for i in keep), tuple(box[i] for i in keep)


def _pitches(extents: tuple[int, ...]) -> list[int]:
    out, p = [], 1
    for n in reversed(extents):
        out.append(p)
        p *= n
    return out[::-1]


def _boundaries(extents: tuple[int, ...]) -> set[int]:
    return {p * n for p, n in zip(_pitches(extents), extents)} | set(_pitches(extents))


def _split(d: TDim, f: int, span: Span) -> tuple[TDim, TDim]:
    """Split dimension d into (outer, inner) with `f` inner elements; the collective's
    box and every iteration's offset must respect the split."""
    # a one-iteration operator never moves the offset: it goes, inert and with its
    # stride in threads unchanged, to the inner dimension
    fixed = tuple(t for t in d.terms if t.count == 1)
    moving = [t for t in d.terms if t.count > 1]
    big = [t for t in moving if t.stride >= f]
    small = [t for t in moving if t.stride < f]
    if any(t.stride % f for t in big):
        raise _bad(span, f"a collective steps across the unit's {f}-element "
                   "boundaries")
    outer_terms = tuple(replace(t, stride=t.stride // f) for t in big)
    if d.box >= f:
        if d.box % f or d.base % f or small:
            raise _bad(span, f"the enclosing collective ({d.box} elements at "
                       f"{d.base}) is not aligned to the unit's {f}-element blocks")
        return (TDim(d.extent // f, d.pitch * f, d.box // f, d.base // f, outer_terms),
                TDim(f, d.pitch, f, 0, fixed))
    inner = TDim(f, d.pitch, d.box, d.base % f, tuple(small) + fixed)
    if inner.reach > f:
        raise _bad(span, f"the enclosing collective straddles the unit's {f}-element "
                   "blocks")
    return TDim(d.extent // f, d.pitch * f, 1, d.base // f, outer_terms), inner


def _refine(dims: tuple[TDim, ...], cuts: set[int], span: Span) -> tuple[TDim, ...]:
    out: list[TDim] = []
    for d in dims:
        inner: list[TDim] = []
        for b in sorted(c for c in cuts if d.pitch < c < d.pitch * d.extent):
            outer, low = _split(d, b // d.pitch, span)
            inner.insert(0, low)
            d = outer
        out += [d] + inner
    return tuple(out)


def _refine_box(dom: tuple[int, ...], box: Box, cuts: set[int],
                span: Span) -> Box:
    out: list[int | None] = []
    for q, n, c in zip(_pitches(dom), dom, box):
        parts: list[int | None] = []
        for b in sorted(x for x in cuts if q < x < q * n):
            f = b // q
            if c is not None and (c % f if c >= f else f % c):
                raise _bad(span, f"the unit's box {c} does not align with "
                           f"{f}-element blocks")
            parts.insert(0, None if c is None else min(c, f))
            c = None if c is None else (1 if c < f else c // f)
            q, n = b, n // f
        out += [c] + parts
    return tuple(out)


def align(m: ThreadMapping, dom: tuple[int, ...], box: Box,
          span: Span) -> tuple[tuple[TDim, ...], Box]:
    """Step (1): the common refinement of the tiling's and the unit's dimensions."""
    keep = [i for i, n in enumerate(dom) if n != 1]
    dom, box = tuple(dom[i] for i in keep), tuple(box[i] for i in keep)
    if not dom and all(d.extent == 1 for d in m.dims):
        # one thread on both sides (a launch of blockDim=1): nothing to refine; the
        # unit's box is that one element in every dimension
        return m.dims, tuple(1 for _ in m.dims)
    cuts = _boundaries(tuple(d.extent for d in m.dims)) | _boundaries(dom)
    chain = sorted(cuts)
    if any(b % a for a, b in itertools.pairwise(chain)):
        raise _bad(span, f"the unit's domain {dom} and the enclosing tiling's "
                   f"{tuple(d.extent for d in m.dims)} have no common refinement")
    dims = _refine(m.dims, cuts, span)
    ubox = _refine_box(dom, box, cuts, span)
    if len(dims) != len(ubox):
        # the tiling has one-element dimensions the unit's domain lacks (one-thread
        # CTAs of a cluster: tiling (2, 1), domain (2,)): the unit takes one element of
        # each; the other dimensions pair up in order
        ubox = _with_unit_dims(m.dims, cuts, ubox, span)
    assert len(dims) == len(ubox), (dims, ubox)
    return dims, ubox


def _with_unit_dims(dims: tuple[TDim, ...], cuts: set[int], ubox: Box,
                    span: Span) -> Box:
    rest, out = list(ubox), list[int | None]()
    for d in dims:  # a one-element tiling dimension takes one element of the unit
        k = 0 if d.extent == 1 else len(_refine((d,), cuts, span))
        out += rest[:k] if k else [1]
        rest = rest[k:]
    if rest:
        raise _bad(span, "the unit's domain and the tiling differ in rank")
    return tuple(out)


# ------------------------------------------------------------------- derive_ω


def derive(parent: ThreadMapping, unit: A.UnitExpr, var: str, lo: A.CExpr,
           lo_value: int, n_iter: int, span: Span) -> ThreadMapping:
    """derive_ω for `for var in cuda_threads(lo, lo + n_iter, unit=unit)`."""
    d = unit_def(unit)
    if d.name in AGNOSTIC_UNITS:
        raise _bad(span, f"unit {d.name} has a wildcard box: it describes what an "
                   "instruction accepts, not a tiling (Figure 11)")
    dom, box = _unit_shape(unit, parent.launch, partial_box=None)
    dims, ubox = align(parent, dom, box, span)
    _, base_box = align(parent, *_unit_shape(replace(unit, count=1), parent.launch,
                                             partial_box=None), span)
    which = [i for i, (t, c) in enumerate(zip(dims, ubox))
             if c is not None and c != t.box and c != t.extent]
    if len(which) > 1:
        raise _bad(span, f"unit {_unit_text(unit)} would tile more than one dimension "
                   f"of the enclosing collective ({parent.describe()})")
    order = parent.depth
    if not which:
        if n_iter != 1:
            raise _bad(span, f"unit {_unit_text(unit)} is the whole enclosing "
                       f"collective ({parent.describe()}): a cuda_threads loop over "
                       f"it has one iteration, not {n_iter}")
        # the loop's operator moves nothing; its stride (in threads) is the
        # collective's size, as if the one tile were the first of several
        last = dims[-1]
        inert = Term(var, lo, lo_value, parent.size // last.pitch, 1, order)
        return _merge(replace(parent, dims=dims[:-1] + (
            replace(last, terms=last.terms + (inert,)),)))
    (i,) = which
    t, c = dims[i], ubox[i]
    assert c is not None
    g = base_box[i] or c
    if n_iter * c > t.box:
        raise _bad(span, f"cuda_threads over {n_iter} x {prod(x for x in ubox if x)} "
                   f"threads (unit {_unit_text(unit)}) does not fit in the enclosing "
                   f"collective of {parent.size} threads ({parent.describe()})")
    if t.base % g or any(s.stride % g for s in t.terms):
        raise _bad(span, f"the enclosing collective ({parent.describe()}) is not "
                   f"aligned to {d.name} boundaries")
    new = replace(t, box=c, terms=t.terms + (Term(var, lo, lo_value, c, n_iter,
                                                  order),))
    return _merge(replace(parent, dims=dims[:i] + (new,) + dims[i + 1:]))


def loop_stride(m: ThreadMapping, var: str) -> int:
    """Threads between consecutive iterations of loop `var` (its operator's stride,
    flattened)."""
    return next(s for y, _, s in m.terms if y == var)


def _merge(m: ThreadMapping) -> ThreadMapping:
    """Join an inner dimension the collective covers whole, with no operator, into
    the dimension outside it (the tiling stays the same set of thread boxes)."""
    dims = list(m.dims)
    k = 0
    while k + 1 < len(dims):
        out, inn = dims[k], dims[k + 1]
        if inn.box == inn.extent and not inn.base and not inn.terms and \
                out.pitch == inn.pitch * inn.extent:
            n = inn.extent
            dims[k:k + 2] = [TDim(out.extent * n, inn.pitch, out.box * n,
                                  out.base * n,
                                  tuple(replace(t, stride=t.stride * n)
                                        for t in out.terms))]
        else:
            k += 1
    return replace(m, dims=tuple(dims))


def derive_warps(parent: ThreadMapping, cw: A.CudaWarps) -> ThreadMapping:
    """derive_ω for `with CudaWarps(lo, hi, name=r)`: warps [lo, hi) of warp variable
    r, in every CTA of the enclosing collective, which must be whole CTAs."""
    launch = parent.launch
    b = launch.block_dim
    if cw.name is not None:
        try:
            first, count = launch.warp_range(cw.name)
        except KeyError:
            names = ", ".join(n for n, _, _ in launch.warps) or "none"
            raise IllTyped(f"scope error: unknown warp name {cw.name!r} (warp_config "
                           f"names: {names})", rule=RULE, span=cw.span) from None
    else:
        first, count = 0, b // WARP
    lo = 0 if cw.lo is None else cw.lo
    hi = count if cw.hi is None else cw.hi
    if not 0 <= lo < hi <= count:
        raise _bad(cw.span, f"CudaWarps({lo}, {hi}) outside the {count} warps of "
                   f"{cw.name or 'the CTA'}")
    try:
        dims, _ = align(_merge(parent), (launch.cluster_dim, b), (None, b), cw.span)
    except IllTyped:
        dims = ()
    cta = [k for k, d in enumerate(dims) if d.pitch == 1 and d.extent == b]
    if not cta or dims[cta[0]].box != b:
        raise IllTyped(f"scope error: CudaWarps must be at CTA or cluster scope, not in "
                       f"{parent.describe()}", rule=RULE, span=cw.span)
    k = cta[0]
    warps = TDim(b, 1, WARP * (hi - lo), WARP * (first + lo))
    return replace(parent, dims=dims[:k] + (warps,) + dims[k + 1:])


def _is_tile(threads: tuple[int, ...], dom: tuple[int, ...], box: Box) -> bool:
    """Is this thread set one box-aligned tile of the unit (wildcards match any)?"""
    pitches = _pitches(dom)
    for q, n, c in zip(pitches, dom, box):
        vals = {t // q % n for t in threads}
        if c is None:
            continue
        lo = min(vals)
        if len(vals) != c or lo % c or max(vals) != lo + c - 1:
            return False
    sizes = [len({t // q % n for t in threads}) for q, n in zip(pitches, dom)]
    return len(set(threads)) == prod(sizes)


def _unit_text(u: A.UnitExpr) -> str:
    from gpusem.calculus.gpuir.printer import print_unit

    return print_unit(u)
