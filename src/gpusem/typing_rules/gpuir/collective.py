"""Collective analysis of GPU IR: Section 4 of Exo-GPU (Definitions 4.1, 4.2).

A forward pass over a procedure that annotates every statement with the thread
collective executing it, as a thread mapping f_ω : Σ -> 𝕋 from the control
environment to a set of natural thread indices (`cluster_ctarank * blockDim +
threadIdx.x`, Definition 4.1). New tilings are derived only at CudaDeviceFunction,
cuda_threads loops and CudaWarps blocks; every other statement inherits its parent's.

Conventions (paper -> Python):
  ω (collective tiling)          -> `ThreadMapping` (the tiling, already compiled)
  f_ω(σ) = μ                      -> `ThreadMapping.threads(env)`
  derive_ω(ω_env, δ, y, lo, hi)   -> `derive(parent, unit, var, lo, lo_value, n_iter,
                                      span)`
  τ_u-scope                       -> `ThreadMapping.is_unit(unit)`

The tilings themselves (Definition 4.2, derive_ω for every unit of Figure 11, the
τ_u-scope test) are typing_rules/gpuir/tiling.py; this module walks the procedure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Union, cast

from gpusem.calculus.errors import IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import cvars, eval_c
from gpusem.calculus.gpuir.units import Launch
from gpusem.calculus.span import Span
from gpusem.typing_rules.gpuir.tiling import (
    ThreadMapping,
    derive,
    derive_warps,
    loop_stride,
    root_mapping,
)

RULE = "CollectiveAnalysis"
__all__ = ["Analysis", "Decl", "LoopTiling", "StmtInfo", "ThreadMapping",
           "analyse_collectives", "derive", "derive_warps", "param_decls",
           "root_mapping"]


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
        problems = list(validate_launch(s))
        for problem in problems:
            self.error(IllTyped(f"bad launch: {problem}", rule=RULE, span=s.span))
        launch = launch_of(s)
        if launch.block_dim <= 0:
            return
        # a launch out of range tiles nothing: its body is analysed under a poisoned
        # mapping (which reports nothing more), not over up to 2^31 threads (issue 15)
        poison = bool(problems)
        if not (len(s.body) == 1 and isinstance(s.body[0], A.For)
                and s.body[0].mode is A.LoopMode.CUDA_TASKS):
            self.error(IllTyped("scope error: a CudaDeviceFunction body must be one "
                                "nest of cuda_tasks loops (Section 3.4)", rule=RULE,
                                span=s.span))
        self.device_depth = len(loops)
        root = root_mapping(launch)
        self.body(s.body, replace(root, poisoned=True) if poison else root, s, loops,
                  decls)

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
            child = derive(mapping, unit, f.var, f.lo, lo, max(hi - lo, 0), f.span)
        except IllTyped as err:
            self.error(err)
            return replace(mapping, poisoned=True)
        self.an.tilings[id(f)] = LoopTiling(f.var, lo, hi, loop_stride(child, f.var),
                                            mapping, child)
        return child


def analyse_collectives(proc: A.Proc, defines: Mapping[str, int]) -> Analysis:
    """Collective analysis of `proc` (errors in `.errors`, not raised)."""
    an = Analysis(proc, dict(defines))
    _Walker(an).body(proc.body, None, None, (), param_decls(proc))
    return an
