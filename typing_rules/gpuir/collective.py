"""Collective analysis of GPU IR: Section 4 of Exo-GPU (Definitions 4.1, 4.2).

A forward pass over a procedure that annotates every statement with the thread
collective executing it, as a thread mapping f_ω : Σ -> 𝕋 from the control
environment to a set of natural thread indices (`cluster_ctarank * blockDim +
threadIdx.x`, Definition 4.1). New tilings are derived only at CudaDeviceFunction,
cuda_threads loops and CudaWarps blocks; every other statement inherits its parent's.

Conventions (paper -> Python):
  ω (collective tiling)          -> `ThreadMapping` (the tiling, already compiled)
  f_ω(σ) = μ                      -> `ThreadMapping.threads(env)`
  derive_ω(ω_env, δ, y, lo, hi)   -> `derive(parent, unit, var, lo, n_iter, span)`
  τ_u-scope                       -> `ThreadMapping.is_unit(unit)`

Note: Definition 4.2 describes ω as dimensions with operator lists and derive_ω only in
prose ("shape alignment", "single-dimension refinement"). For the units we accept
(n*cuda_thread, n*cuda_warp, n*cuda_warpgroup, n*cuda_cta_in_cluster, cuda_cluster)
every reachable tiling has at most two dimensions, (CTA replicas with pitch blockDim,
a contiguous run of threads), and an offset affine in the cuda_threads iterators;
`ThreadMapping` stores exactly that. Shape alignment is the reshape of a cluster-wide
run into (clusterDim, blockDim) before an intra-CTA unit; refinement appends one
(iterator, stride) term. The strided, quadpair and agnostic units are rejected with a
clear message. See proofs_notes/errata.md "collective tilings".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import gcd
from typing import Mapping, Union, cast

from gpusem.calculus.errors import IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import cvars, eval_c
from gpusem.calculus.gpuir.units import WARP, WARPGROUP, Launch, coll_type, unit_def
from gpusem.calculus.span import Span

RULE = "CollectiveAnalysis"
SUPPORTED_UNITS = ("cuda_thread", "cuda_warp", "cuda_warpgroup", "cuda_cta_in_cluster",
                   "cuda_cluster")


def granularity(unit_name: str, launch: Launch) -> int:
    """Threads in one collective of the unit's base kind (its alignment)."""
    return {"cuda_thread": 1, "cuda_warp": WARP, "cuda_warpgroup": WARPGROUP,
            "cuda_cta_in_cluster": launch.block_dim,
            "cuda_cluster": launch.cluster_threads}[unit_name]


@dataclass(frozen=True, slots=True)
class ThreadMapping:
    """f_ω: threads(σ) = { offset(σ) + c * blockDim + i | c < ctas, i < length },
    offset(σ) = base + Σ (σ[y] - lo_y(σ)) * stride_y over the cuda_threads iterators."""

    launch: Launch
    ctas: int
    length: int
    base: int
    terms: tuple[tuple[str, A.CExpr, int], ...] = ()
    poisoned: bool = False  # derived from a failed tiling (its error is reported)

    @property
    def size(self) -> int:
        return self.ctas * self.length

    def offset(self, env: Mapping[str, int]) -> int:
        return self.base + sum((env[y] - eval_c(lo, env)) * s
                               for y, lo, s in self.terms)

    def threads(self, env: Mapping[str, int]) -> tuple[int, ...]:
        off, b = self.offset(env), self.launch.block_dim
        return tuple(off + c * b + i for c in range(self.ctas)
                     for i in range(self.length))

    @property
    def alignment(self) -> int:
        """The largest a with offset(σ) ≡ 0 (mod a) for every σ."""
        a = self.base
        for _, _, s in self.terms:
            a = gcd(a, s)
        return a if a else 1 << 30

    def aligned(self, a: int) -> bool:
        """offset(σ) ≡ 0 (mod a) for every σ."""
        return self.base % a == 0 and all(s % a == 0 for _, _, s in self.terms)

    @property
    def vars(self) -> tuple[str, ...]:
        return tuple(y for y, _, _ in self.terms)

    def is_unit(self, u: A.UnitExpr) -> bool:
        """Is this a τ_u-scope: exactly one collective of unit `u`?"""
        if u.name == "standalone_thread":
            return self.size == 1
        if u.name not in SUPPORTED_UNITS:
            return False
        size = coll_type(u, self.launch).size
        g = granularity(u.name, self.launch)
        return self.ctas == 1 and self.length == size and self.aligned(g)

    def describe(self) -> str:
        """The unit this collective is, in the syntax of Figure 11, or a count."""
        launch, n = self.launch, self.length
        if self.size == 1:
            return "cuda_thread"
        b = launch.block_dim
        if self.ctas == 1 and n % b == 0 and self.aligned(b):
            k = n // launch.block_dim
            if k == 1:
                return "cuda_cta_in_cluster"
            if k == launch.cluster_dim:
                return "cuda_cluster"
            return f"{k} * cuda_cta_in_cluster"
        if self.ctas == 1 and n == WARPGROUP and self.aligned(WARPGROUP):
            return "cuda_warpgroup"
        if self.ctas == 1 and n % WARP == 0 and self.aligned(WARP):
            return "cuda_warp" if n == WARP else f"{n // WARP} * cuda_warp"
        if self.ctas > 1:
            return f"{self.ctas} x {n} threads (one run per CTA)"
        return f"{n} threads"


def root_mapping(launch: Launch) -> ThreadMapping:
    """CudaDeviceFunction: the whole cluster, with empty operator lists."""
    return ThreadMapping(launch, 1, launch.cluster_threads, 0, ())


def _tiling_error(span: Span, msg: str) -> IllTyped:
    return IllTyped(f"bad tiling: {msg}", rule=RULE, span=span)


def derive(parent: ThreadMapping, unit: A.UnitExpr, var: str, lo: A.CExpr,
           n_iter: int, span: Span) -> ThreadMapping:
    """derive_ω for `for var in cuda_threads(lo, lo + n_iter, unit=unit)`."""
    d = unit_def(unit)
    if d.name not in SUPPORTED_UNITS:
        raise _tiling_error(span, f"unit {d.name} is not supported by this analysis "
                            f"(supported: {', '.join(SUPPORTED_UNITS)})")
    launch = parent.launch
    b = launch.block_dim
    size = coll_type(unit, launch).size
    g = granularity(d.name, launch)
    p = parent
    if d.within_cta and p.length > b:
        # Shape alignment: reshape (clusterDim * blockDim,) into (clusterDim, blockDim).
        if p.length % b or not p.aligned(b) or p.ctas != 1:
            raise _tiling_error(span, f"cannot split {p.describe()} into CTAs")
        p = replace(p, ctas=p.length // b, length=b)
    if not d.within_cta and (p.ctas != 1 or p.length % b or not p.aligned(b)):
        raise _tiling_error(span, f"unit {d.name} needs whole CTAs, but the enclosing "
                            f"collective is {p.describe()}")
    if not p.aligned(g):
        raise _tiling_error(span, f"the enclosing collective ({p.describe()}) is not "
                            f"aligned to {d.name} boundaries")
    if n_iter * size > p.length:
        raise _tiling_error(span, f"cuda_threads over {n_iter} x {size} threads "
                            f"(unit {_unit_text(unit)}) does not fit in the enclosing "
                            f"collective of {p.length} threads ({p.describe()})")
    return replace(p, length=size, terms=p.terms + ((var, lo, size),))


def derive_warps(parent: ThreadMapping, cw: A.CudaWarps) -> ThreadMapping:
    """derive_ω for `with CudaWarps(lo, hi, name=r)`: warps [lo, hi) of warp variable
    r, in every CTA of the enclosing collective."""
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
        raise _tiling_error(cw.span, f"CudaWarps({lo}, {hi}) outside the {count} warps "
                            f"of {cw.name or 'the CTA'}")
    if parent.length % b or not parent.aligned(b):
        raise IllTyped(f"scope error: CudaWarps must be at CTA or cluster scope, "
                       f"not in "
                       f"{parent.describe()}", rule=RULE, span=cw.span)
    ctas = parent.ctas * (parent.length // b)
    return replace(parent, ctas=ctas, length=WARP * (hi - lo),
                   base=parent.base + WARP * (first + lo))


def _unit_text(u: A.UnitExpr) -> str:
    from gpusem.calculus.gpuir.printer import print_unit

    return print_unit(u)


# ------------------------------------------------------------------ the analysis


# The node that binds a variable.
Binder = Union[A.CtrlParam, A.DataParam, A.Alloc, A.BarrierAlloc, A.WindowStmt, A.For]


@dataclass(frozen=True, slots=True)
class Decl:
    """A variable visible at a statement: where it was bound and what it is."""

    name: str
    kind: str                      # "control" | "data" | "barrier" | "window"
    node: Binder                   # the Param / Alloc / BarrierAlloc / WindowStmt / For
    dtype: A.DataType | None = None
    shape: tuple[A.CExpr, ...] = ()
    mem: A.MemExpr | None = None   # for a window: the source variable's memory
    mapping: ThreadMapping | None = None  # the collective that allocated it
    loops: tuple[A.For, ...] = ()  # loops enclosing the binding


@dataclass(frozen=True, slots=True)
class StmtInfo:
    """What the analysis knows at one statement."""

    mapping: ThreadMapping | None         # None at CPU scope
    device: A.CudaDeviceFunction | None
    loops: tuple[A.For, ...]              # enclosing loops, outermost first
    decls: Mapping[str, Decl]

    @property
    def launch(self) -> Launch | None:
        return None if self.mapping is None else self.mapping.launch

    @property
    def thread_vars(self) -> tuple[str, ...]:
        return tuple(f.var for f in self.loops if f.mode is A.LoopMode.CUDA_THREADS)

    @property
    def task_vars(self) -> tuple[str, ...]:
        return tuple(f.var for f in self.loops if f.mode is A.LoopMode.CUDA_TASKS)


@dataclass(frozen=True, slots=True)
class LoopTiling:
    """How one cuda_threads loop maps its iterations: iteration y runs on
    `child.threads(σ[var := y])`; `stride` threads separate consecutive iterations."""

    var: str
    lo: int
    hi: int
    stride: int
    parent: ThreadMapping
    child: ThreadMapping


@dataclass
class Analysis:
    """The result of `analyse`: per-statement info, looked up by statement identity
    (the AST of `proc`, not an equal copy), and the errors found."""

    proc: A.Proc
    defines: dict[str, int]
    infos: dict[int, StmtInfo] = field(default_factory=dict)
    tilings: dict[int, LoopTiling] = field(default_factory=dict)
    errors: list[IllTyped] = field(default_factory=list)

    def info(self, stmt: A.Stmt) -> StmtInfo:
        return self.infos[id(stmt)]

    def mapping(self, stmt: A.Stmt) -> ThreadMapping | None:
        return self.infos[id(stmt)].mapping

    def threads(self, stmt: A.Stmt, env: Mapping[str, int]) -> tuple[int, ...]:
        m = self.mapping(stmt)
        return () if m is None else m.threads({**self.defines, **env})

    def tiling(self, loop: A.For) -> LoopTiling:
        return self.tilings[id(loop)]

    def decl(self, stmt: A.Stmt, name: str) -> Decl:
        return self.infos[id(stmt)].decls[name]


def param_decls(proc: A.Proc) -> dict[str, Decl]:
    out: dict[str, Decl] = {}
    for p in proc.params:
        match p:
            case A.CtrlParam(name=n):
                out[n] = Decl(n, "control", p)
            case A.DataParam(name=n, dtype=t, shape=sh, mem=m):
                out[n] = Decl(n, "data", p, t, sh, m)
    return out


class _Walker:
    """The forward pass. Errors are collected (STYLE 12); a statement whose scope
    could not be derived is analysed in its parent's collective."""

    def __init__(self, an: Analysis):
        self.an = an
        self.device_depth = 0

    def error(self, err: IllTyped) -> None:
        self.an.errors.append(err)

    def const(self, c: A.CExpr, what: str, span: Span) -> int | None:
        """A value fixed by the -D definitions alone (loop bounds of thread loops)."""
        free = cvars(c) - set(self.an.defines)
        if free:
            self.error(IllTyped(f"scope error: {what} must be constant, but reads "
                                f"{', '.join(sorted(free))}", rule=RULE, span=span))
            return None
        return int(eval_c(c, self.an.defines))

    def body(self, body: tuple[A.Stmt, ...], mapping: ThreadMapping | None,
             device: A.CudaDeviceFunction | None, loops: tuple[A.For, ...],
             decls: Mapping[str, Decl]) -> None:
        decls = dict(decls)
        for s in body:
            self.stmt(s, mapping, device, loops, decls)

    def stmt(self, s: A.Stmt, mapping: ThreadMapping | None,
             device: A.CudaDeviceFunction | None, loops: tuple[A.For, ...],
             decls: dict[str, Decl]) -> None:
        self.an.infos[id(s)] = StmtInfo(mapping, device, loops, dict(decls))
        match s:
            case A.CudaDeviceFunction():
                self.device_function(s, mapping, device, loops, decls)
            case A.For():
                self.loop(s, mapping, device, loops, decls)
            case A.CudaWarps(body=b):
                if mapping is None:
                    self.error(IllTyped("scope error: CudaWarps outside a "
                                        "CudaDeviceFunction", rule=RULE, span=s.span))
                    self.body(b, mapping, device, loops, decls)
                    return
                try:
                    child = derive_warps(mapping, s)
                except IllTyped as err:
                    self.error(err)
                    child = replace(mapping, poisoned=True)
                self.body(b, child, device, loops, decls)
            case A.If(body=b):
                self.body(b, mapping, device, loops, decls)
            case A.Alloc(name=n, dtype=t, shape=sh, mem=m):
                decls[n] = Decl(n, "data", s, t, sh, m, mapping, loops)
            case A.BarrierAlloc(name=n, shape=sh, mem=m):
                decls[n] = Decl(n, "barrier", s, None, sh, m, mapping, loops)
            case A.WindowStmt(name=n, source=src):
                base = decls.get(src.name)
                decls[n] = Decl(n, "window", s, base.dtype if base else None,
                                base.shape if base else (), base.mem if base else None,
                                base.mapping if base else None,
                                base.loops if base else loops)

    def device_function(self, s: A.CudaDeviceFunction, mapping: ThreadMapping | None,
                        device: A.CudaDeviceFunction | None, loops: tuple[A.For, ...],
                        decls: dict[str, Decl]) -> None:
        from gpusem.calculus.gpuir.units import launch_of, validate_launch

        if mapping is not None:
            self.error(IllTyped("scope error: CudaDeviceFunction inside device code",
                                rule=RULE, span=s.span))
            self.body(s.body, replace(mapping, poisoned=True), device, loops, decls)
            return
        for problem in validate_launch(s):
            self.error(IllTyped(f"bad launch: {problem}", rule=RULE, span=s.span))
        launch = launch_of(s)
        if launch.block_dim <= 0:
            return
        if not (len(s.body) == 1 and isinstance(s.body[0], A.For)
                and s.body[0].mode is A.LoopMode.CUDA_TASKS):
            self.error(IllTyped("scope error: a CudaDeviceFunction body must be one "
                                "nest of cuda_tasks loops (Section 3.4)", rule=RULE,
                                span=s.span))
        self.device_depth = len(loops)
        self.body(s.body, root_mapping(launch), s, loops, decls)

    def loop(self, f: A.For, mapping: ThreadMapping | None,
             device: A.CudaDeviceFunction | None, loops: tuple[A.For, ...],
             decls: dict[str, Decl]) -> None:
        inner = dict(decls)
        inner[f.var] = Decl(f.var, "control", f, loops=loops)
        child = mapping
        match f.mode:
            case A.LoopMode.SEQ:
                pass
            case A.LoopMode.CUDA_TASKS:
                self.check_tasks_placement(f, device, loops)
            case A.LoopMode.CUDA_THREADS:
                child = self.thread_loop(f, mapping)
        self.body(f.body, child, device, loops + (f,), inner)

    def check_tasks_placement(self, f: A.For, device: A.CudaDeviceFunction | None,
                              loops: tuple[A.For, ...]) -> None:
        ok = device is not None and all(
            f.mode is A.LoopMode.CUDA_TASKS for f in loops[self.device_depth:])
        if not ok:
            self.error(IllTyped("scope error: cuda_tasks loops may only nest directly "
                                "inside a CudaDeviceFunction", rule=RULE, span=f.span))
        elif len(f.body) != 1 and any(isinstance(s, A.For) and s.mode is
                                      A.LoopMode.CUDA_TASKS for s in f.body):
            self.error(IllTyped("scope error: a cuda_tasks nest must be perfect",
                                rule=RULE, span=f.span))

    def thread_loop(self, f: A.For,
                    mapping: ThreadMapping | None) -> ThreadMapping | None:
        if mapping is None:
            self.error(IllTyped("scope error: cuda_threads loop outside a "
                                "CudaDeviceFunction", rule=RULE, span=f.span))
            return None
        lo = self.const(f.lo, "a cuda_threads lower bound", f.span)
        hi = self.const(f.hi, "a cuda_threads upper bound", f.span)
        if lo is None or hi is None:
            return mapping
        try:
            unit = cast(A.UnitExpr, f.unit)  # a cuda_threads loop has its unit
            child = derive(mapping, unit, f.var, f.lo, max(hi - lo, 0), f.span)
        except IllTyped as err:
            self.error(err)
            return replace(mapping, poisoned=True)
        self.an.tilings[id(f)] = LoopTiling(f.var, lo, hi, child.length, mapping, child)
        return child


def analyse_collectives(proc: A.Proc, defines: Mapping[str, int]) -> Analysis:
    """Collective analysis of `proc` (errors in `.errors`, not raised)."""
    an = Analysis(proc, dict(defines))
    _Walker(an).body(proc.body, None, None, (), param_decls(proc))
    return an
