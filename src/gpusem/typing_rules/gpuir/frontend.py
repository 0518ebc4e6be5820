"""Static checks of GPU IR: the front end's well-formedness rules (Section 3), the
collective analysis (Section 4, `gpuir/collective`) and the distributed memory
analysis (Section 4.1, `gpuir/memory`). `gpusem check FILE.gpuir` runs `check_file`.

Checks here, each named in its errors (`rule`) and with a stable message prefix:
  QuasiAffine      control expressions: `*` by a constant, `/` `%` by a constant
  Scope            CPU vs CUDA scope: allocations, memories touched, frees
  ReadOnly         device code never writes a CudaGridConstant (issue 14 item 6)
  ThreadScope      a write/reduce in CUDA code is executed by one thread
  Shape            index ranks; reads are points; windows have constant extents
  InstrCall        Section 3.4 "Proc & Instruction Calls": at τ_u-scope, argument
                   kinds, precision τ_x, memory π_d, window shapes, trailing barrier π_z
  Barrier          Arrive/Await name barriers; sync timelines exist (Figure 16)
  Limits           control values fit int32, extents are positive, parallel loops
                   are not empty; for `check`, the arrays fit the elements budget
                   (limits.py)
Unknown names (memories, units, timelines, instructions) are BadInput (exit 2).

Conventions: σ -> `env` (control values: the -D definitions plus iterators),
ω / f_ω -> `ThreadMapping`, g -> `Instr`, g.p_i -> `InstrParam`.
"""

from __future__ import annotations

from typing import Iterable, Mapping, assert_never, cast

from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir import memtypes
from gpusem.calculus.gpuir.ctrl import Affine, affine, cvars, eval_c
from gpusem.calculus.gpuir.defines import header_defines
from gpusem.calculus.gpuir.instructions import INSTRUCTIONS, Instr, InstrParam
from gpusem.calculus.gpuir.printer import print_unit
from gpusem.calculus.gpuir.timelines import is_sync_tl
from gpusem.calculus.gpuir.units import unit_def
from gpusem.calculus.gpuir.walk import data_reads
from gpusem.calculus.source import read_source
from gpusem.calculus.span import Span
from gpusem.typing_rules.gpuir.calls import call_unit, size_arg_problem
from gpusem.typing_rules.gpuir.collective import (
    Analysis,
    Decl,
    StmtInfo,
    analyse_collectives,
)
from gpusem.typing_rules.gpuir.limits import check_elements, check_limits
from gpusem.typing_rules.gpuir.memory import check_memory

__all__ = ["analyse", "check_proc", "check_file", "header_defines", "load_proc",
           "check_elements",
           "Analysis", "FileCheck"]


def load_proc(path: str, defines: Mapping[str, int],
              proc_name: str | None = None) -> tuple[A.Proc, dict[str, int], str]:
    """(proc, defines, source) of a `.gpuir` file, every size defined and every
    value in range (`limits.check_limits`)."""
    from gpusem.calculus.gpuir.parser import parse_module

    source = read_source(path)
    module = parse_module(source, path)
    procs = {p.name: p for p in module.procs}
    if proc_name is not None and proc_name not in procs:
        raise BadInput(f"{path}: no procedure named {proc_name} (have: "
                       f"{', '.join(procs)})")
    proc = procs[proc_name] if proc_name else module.procs[-1]
    env = {**header_defines(source, path), **dict(defines)}
    missing = [p.name for p in proc.ctrl_params if p.name not in env]
    if missing:
        raise BadInput(f"{path}: missing definition: {missing[0]} has no value "
                       f"(pass -D {missing[0]}=...)")
    _check_defines(proc, env)
    check_limits(proc, env)  # before anything sizes an array by them
    return proc, env, source


def analyse(proc: A.Proc, defines: Mapping[str, int]) -> Analysis:
    """All analyses of `proc`; errors are collected in `.errors` (not raised).
    BadInput (unknown names, missing definitions) is raised."""
    defines = dict(defines)
    _check_defines(proc, defines)
    check_limits(proc, defines)
    an = analyse_collectives(proc, defines)
    checker = _Checker(an)
    for p in proc.data_params:
        memtypes.data_memory(p.mem)
        checker.cexprs(p.shape, p.span)
    checker.body(proc.body)
    if not an.errors:
        an.errors.extend(check_memory(an))
    return an


def check_proc(proc: A.Proc, defines: Mapping[str, int]) -> Analysis:
    """Raise the first IllTyped (all of them in `.all`) or return the analysis."""
    an = analyse(proc, defines)
    if an.errors:
        first = an.errors[0]
        first.all = list(an.errors)  # type: ignore[attr-defined]
        raise first
    return an


class FileCheck:
    """The accepted analyses of a file; prints as the CLI's one-line summary."""

    def __init__(self, path: str, analyses: list[Analysis]):
        self.path = path
        self.analyses = analyses

    def __str__(self) -> str:
        procs = ", ".join(a.proc.name for a in self.analyses)
        env = self.analyses[0].defines if self.analyses else {}
        defs = " ".join(f"{k}={v}" for k, v in sorted(env.items())) \
            if self.analyses else ""
        return (f"ok: {self.path}: collective and distributed memory analyses pass "
                f"({procs}{'; ' + defs if defs else ''})")


def check_file(path: str, defines: Mapping[str, int] | None = None) -> FileCheck:
    """Parse and check every procedure of a `.gpuir` file (`# defines:` headers give
    defaults for `defines`); raise the first IllTyped, or return the analyses."""
    from gpusem.calculus.gpuir.parser import parse_module

    source = read_source(path)
    module = parse_module(source, path)
    env = {**header_defines(source, path), **dict(defines or {})}
    analyses = []
    for p in module.procs:
        check_elements(p, env)  # `check` decides for the verbs that interpret
        analyses.append(check_proc(p, env))
    return FileCheck(path, analyses)


def _check_defines(proc: A.Proc, defines: dict[str, int]) -> None:
    for p in proc.ctrl_params:
        if p.kind is A.CtrlKind.SIZE and p.name in defines and defines[p.name] < 0:
            raise BadInput(f"bad definition: size {p.name} = "
                           f"{defines[p.name]} is negative", span=p.span)


# --------------------------------------------------------------------- the checks


class _Checker:
    def __init__(self, an: Analysis):
        self.an = an
        self.sizes = {p.name for p in an.proc.ctrl_params if p.kind is A.CtrlKind.SIZE}
        self.consts = {k: v for k, v in an.defines.items()}

    def err(self, rule: str, span: Span, msg: str) -> None:
        if any(e.rule == rule and e.span == span and e.message == msg
               for e in self.an.errors):
            return  # one report per site (two parameters may share a size symbol)
        self.an.errors.append(IllTyped(msg, rule=rule, span=span))

    def body(self, body: tuple[A.Stmt, ...]) -> None:
        for s in body:
            info = self.an.infos.get(id(s))
            if info is not None:  # None: under a launch already reported as bad
                self.stmt(s, info)

    # ---------------------------------------------------------- statements
    def stmt(self, s: A.Stmt, info: StmtInfo) -> None:
        match s:
            case A.For(lo=lo, hi=hi, unit=unit, body=b):
                self.cexprs((lo, hi), s.span)
                if unit is not None:
                    unit_def(unit)
                self.body(b)
            case A.CudaDeviceFunction(body=b) | A.CudaWarps(body=b):
                self.body(b)
            case A.If(cond=c, body=b):
                self.bexpr_vars(c, s.span)
                self.body(b)
            case A.Assign(name=n, idx=idx, rhs=e) | A.Reduce(name=n, idx=idx, rhs=e):
                self.assignment(s, info, n, idx, e)
            case A.Alloc(shape=sh, mem=m):
                self.cexprs(sh, s.span)
                self.alloc_scope(s, info, memtypes.data_memory(m))
                self.tile_shape(s, m, sh)
            case A.BarrierAlloc(shape=sh, mem=m):
                self.cexprs(sh, s.span)
                memtypes.barrier_memory(m)
                if info.mapping is None:
                    self.err("Scope", s.span, f"scope error: barrier {s.name} must be "
                             "allocated in CUDA code")
            case A.WindowStmt(source=src, mem=m):
                memtypes.window_memory(m)
                self.read(src, info, s.span, windows=True)
            case A.Free():
                self.err("Scope", s.span, "scope error: free statements are inserted "
                         "by "
                         "the compiler, not written (Section 3.4)")
            case A.Fence(pre=pre, post=post):
                self.timelines((pre, post), s.span)
            case A.Arrive(tl=tl, barriers=zs):
                self.timelines((tl,), s.span)
                for z in zs:
                    self.barrier(z, info, s.span)
            case A.Await(barrier=z, tl=tl):
                self.timelines((tl,), s.span)
                self.barrier(z, info, s.span)
            case A.InstrCall():
                self.instr_call(s, info)
            case _:
                assert_never(s)

    def assignment(self, s: A.Assign | A.Reduce, info: StmtInfo, n: str,
                   idx: tuple[A.CExpr, ...], e: A.DExpr) -> None:
        d = info.decls[n]
        self.cexprs(idx, s.span)
        if d.kind == "window":
            self.err("Shape", s.span, f"bad write: {n} is a window (instruction "
                     "arguments only)")
            return
        if len(idx) != len(d.shape):
            self.err("Shape", s.span, f"shape mismatch: {n} has {len(d.shape)} "
                     f"dimension(s), written with {len(idx)} index(es)")
        self.accessible(d, info, s.span)
        self.writable(d, info, s.span)
        for r in data_reads(e):
            self.read(r, info, s.span, windows=False)
        m = info.mapping
        if m is not None and m.size != 1 and not m.poisoned:
            self.err("ThreadScope", s.span, f"collective unit mismatch: a write to {n} "
                     f"in CUDA code must run on one thread (cuda_thread scope), but "
                     f"here "
                     f"it runs on {m.describe()}")

    def read(self, r: A.DRead, info: StmtInfo, span: Span, windows: bool) -> None:
        d = info.decls[r.name]
        for c in r.coords:
            match c:
                case A.WPoint(index=i):
                    self.cexprs((i,), span)
                case A.WInterval(lo=lo, hi=hi):
                    if not windows:
                        self.err("Shape", span, f"bad read: {r.name} is read at a "
                                 "window; only instruction arguments take windows")
                    self.cexprs(tuple(x for x in (lo, hi) if x is not None), span)
        if r.coords and len(r.coords) != len(d.shape):
            self.err("Shape", span, f"shape mismatch: {r.name} has {len(d.shape)} "
                     f"dimension(s), read with {len(r.coords)} coordinate(s)")
        elif not r.coords and d.shape and not windows:
            self.err("Shape", span, f"shape mismatch: {r.name} is an array; read "
                     "an element")
        self.accessible(d, info, span)

    def accessible(self, d: Decl, info: StmtInfo, span: Span) -> None:
        if d.mem is None or d.kind != "data":
            return
        mem = memtypes.data_memory(d.mem)
        # the host reaches global memory (our model, errata "host code") and sets
        # grid constants (Figure 12: copied into the launch's arguments)
        if info.mapping is None and mem.is_cuda and mem.physical not in (
                "gmem", "grid_constant"):
            self.err("Scope", span, f"memory not accessible: {d.name} @ {mem.name} is "
                     "CUDA memory, used in CPU code")
        if info.mapping is not None and not mem.is_cuda:
            self.err("Scope", span, f"memory not accessible: {d.name} @ {mem.name} is "
                     "host memory, used in CUDA code")

    def writable(self, d: Decl, info: StmtInfo, span: Span) -> None:
        """A grid constant is copied by value into the kernel's arguments at launch
        (Figure 12: "CUDA grid constant memory", `__grid_constant__`): device code
        reads it and never writes it. Since grid constants are sync-exempt (Section
        5.2.2), a device write would also be a race no check sees."""
        if d.mem is None or d.kind not in ("data", "window"):
            return
        if info.mapping is not None and d.mem.name == "CudaGridConstant":
            self.err("ReadOnly", span, f"read-only memory: {d.name} @ "
                     "CudaGridConstant is written in CUDA code; grid constants are "
                     "read-only on the device (write them in CPU code, before the "
                     "launch)")

    def alloc_scope(self, s: A.Alloc, info: StmtInfo,
                    mem: memtypes.DataMemory) -> None:
        if info.mapping is None and mem.physical in ("rmem", "smem"):
            self.err("Scope", s.span, f"scope error: {s.name} @ {mem.name} must be "
                     "allocated in CUDA code")
        cpu_only = ("gmem", "host", "grid_constant")
        if info.mapping is not None and mem.physical in cpu_only:
            self.err("Scope", s.span, f"scope error: {s.name} @ {mem.name} must be "
                     "allocated in CPU code")
        if mem.abstract:
            self.err("Scope", s.span, f"scope error: {mem.name} is a base type; "
                     "allocate in a concrete memory")

    def tile_shape(self, s: A.Alloc, m: A.MemExpr, shape: tuple[A.CExpr, ...]) -> None:
        tile = memtypes.matrix_tile(m)
        if tile is None:
            return
        tail = [affine(c, self.consts) for c in shape[-len(tile):]]
        got = tuple(a.const if a is not None and a.is_const else None for a in tail)
        if len(shape) < len(tile) or got != tile:
            self.err("Shape", s.span, f"shape mismatch: {s.name} @ {m.name}"
                     f"{tile} must end in dimensions {list(tile)}")

    def timelines(self, names: Iterable[str], span: Span) -> None:
        for n in names:
            if not is_sync_tl(n):
                raise BadInput(f"unknown sync timeline: {n}", span=span)

    def barrier(self, z: A.ZRead, info: StmtInfo, span: Span) -> None:
        d = info.decls[z.name]
        if len(z.coords) not in (0, len(d.shape)) or (not z.coords and d.shape):
            self.err("Shape", span, f"shape mismatch: barrier {z.name} has "
                     f"{len(d.shape)} dimension(s), used with {len(z.coords)}")
        for c in z.coords:
            if isinstance(c, A.WPoint):
                self.cexprs((c.index,), span)

    # ----------------------------------------------------------- expressions
    def cexprs(self, cs: Iterable[A.CExpr], span: Span) -> None:
        for c in cs:
            self.quasi_affine(c, span)

    def bexpr_vars(self, b: A.BExpr, span: Span) -> None:
        match b:
            case A.BRel(lhs=l, rhs=r):
                self.cexprs((l, r), span)
            case A.BLog(lhs=l, rhs=r):
                self.bexpr_vars(l, span)
                self.bexpr_vars(r, span)
            case A.BNot(arg=a):
                self.bexpr_vars(a, span)

    def constant(self, c: A.CExpr) -> bool:
        return cvars(c) <= self.sizes

    def quasi_affine(self, c: A.CExpr, span: Span) -> None:
        if isinstance(c, A.CBin):
            self.quasi_affine(c.lhs, span)
            self.quasi_affine(c.rhs, span)
            if c.op == "*" and not (self.constant(c.lhs) or self.constant(c.rhs)):
                self.err("QuasiAffine", c.span if c.span.line else span,
                         "not quasi-affine: a product of two variables")
            if c.op in "/%" and not self.constant(c.rhs):
                self.err("QuasiAffine", c.span if c.span.line else span,
                         f"not quasi-affine: {c.op} by a variable")

    # ------------------------------------------------------ instruction calls
    def instr_call(self, s: A.InstrCall, info: StmtInfo) -> None:
        g = INSTRUCTIONS.get(s.instr)
        if g is None:
            raise BadInput(f"unknown instruction: {s.instr} (known: "
                           f"{', '.join(INSTRUCTIONS)})", span=s.span)
        where = f"{g.name}"
        if g.device and info.mapping is None:
            self.err("InstrCall", s.span, f"scope error: {where} is a CUDA "
                     "instruction, "
                     "called in CPU code")
            return
        if not g.device and info.mapping is not None:
            self.err("InstrCall", s.span, f"scope error: {where} is a CPU "
                     "instruction (a host API call), called in CUDA code")
            return
        unit = self.call_unit(s, g)
        if unit is not None and info.mapping is not None and \
                not info.mapping.poisoned and not info.mapping.is_unit(unit):
            self.err("InstrCall", s.span, f"collective unit mismatch: {where} must be "
                     f"called by one {print_unit(unit)}, but here it runs on "
                     f"{info.mapping.describe()}")
        if len(s.args) != len(g.params):
            self.err("InstrCall", s.span, f"bad call: {where} takes {len(g.params)} "
                     f"argument(s), given {len(s.args)}")
            return
        symbols: dict[str, int] = {}
        for a, p in zip(s.args, g.params):
            self.instr_arg(s, g, p, a, info, symbols)
        for a, p in zip(s.args, g.params):
            self.size_arg(s, g, p, a, symbols)
        self.call_barrier(s, g, info)

    def call_unit(self, s: A.InstrCall, g: Instr) -> A.UnitExpr | None:
        unit, problem = call_unit(s, g, self.consts, self.sizes)
        if problem is not None:
            self.err("InstrCall", s.span, problem)
        return unit

    def size_arg(self, s: A.InstrCall, g: Instr, p: InstrParam, a: A.InstrArg,
                 symbols: dict[str, int]) -> None:
        problem = size_arg_problem(g, p, a, symbols, self.consts, self.sizes)
        if problem is not None:
            self.err("InstrCall", s.span, problem)

    def instr_arg(self, s: A.InstrCall, g: Instr, p: InstrParam, a: A.InstrArg,
                  info: StmtInfo, symbols: dict[str, int]) -> None:
        what = f"{g.name} argument {p.name}"
        if p.kind == "ctrl":
            if isinstance(a, (A.DRead, A.DConst)):
                self.err("InstrCall", s.span, f"bad argument: {what} is a control "
                         "value")
                return
            self.cexprs((a,), s.span)
            if p.values and self.constant(a) and eval_c(a, self.consts) not in p.values:
                self.err("InstrCall", s.span, f"bad argument: {what} = "
                         f"{eval_c(a, self.consts)} not allowed")
            return
        if not isinstance(a, A.DRead):
            self.err("InstrCall", s.span, f"bad argument: {what} must be a window "
                     "x[...]")
            return
        d = info.decls[a.name]
        self.read(a, info, s.span, windows=True)
        if p.access != "read":
            self.writable(d, info, s.span)
        if p.dtype is not None and d.dtype is not p.dtype:
            self.err("InstrCall", s.span, f"type mismatch: {what} must be "
                     f"{p.dtype.value}, {a.name} is "
                     f"{d.dtype.value if d.dtype else '?'}")
        mem_name = self.arg_memory(d)
        if mem_name is not None and not any(memtypes.is_subtype(mem_name, m)
                                            for m in p.mems):
            self.err("InstrCall", s.span, f"memory mismatch: {what} must be in "
                     f"{' or '.join(p.mems)}, {a.name} is @ {mem_name}")
        self.window_shape(s, g, p, a, d, symbols)

    def arg_memory(self, d: Decl) -> str | None:
        if d.kind == "window":
            # the window type (e.g. Sm90_tensorMap)
            return cast(A.WindowStmt, d.node).mem.name
        return d.mem.name if d.mem is not None else None

    def window_shape(self, s: A.InstrCall, g: Instr, p: InstrParam, a: A.DRead, d: Decl,
                     symbols: dict[str, int]) -> None:
        extents: list[int] = []
        coords = a.coords or tuple(A.WInterval(None, None) for _ in d.shape)
        if d.kind == "window":  # a window variable's extents are its source window's
            coords = a.coords or cast(A.WindowStmt, d.node).source.coords
        for dim, c in enumerate(coords):
            if isinstance(c, A.WPoint):
                continue
            lo = affine(c.lo, self.consts, opaque=True) if c.lo is not None \
                else affine(A.CInt(0))
            hi_e = c.hi if c.hi is not None else (
                d.shape[dim] if dim < len(d.shape) else None)
            hi = affine(hi_e, self.consts, opaque=True) if hi_e is not None else None
            if lo is None or hi is None or not (_sub(hi, lo)).is_const:
                self.err("Shape", s.span, f"bad window: {a.name} has a window extent "
                         "that is not constant")
                return
            extents.append(_sub(hi, lo).const)
        if len(extents) != len(p.shape):
            self.err("InstrCall", s.span, f"shape mismatch: {g.name} argument {p.name} "
                     f"is a {len(p.shape)}-d window, {a.name} gives {len(extents)}-d")
            return
        for want, got in zip(p.shape, extents):
            if isinstance(want, str):
                sym, want = want, symbols.setdefault(want, got)
                allowed = g.sizes.get(sym, ())
                if allowed and got not in allowed:
                    self.err("InstrCall", s.span, f"shape mismatch: {g.name} takes "
                             f"{sym} in {list(allowed)}, not {got}")
                    return
            if want != got:
                self.err("InstrCall", s.span, f"shape mismatch: {g.name} argument "
                         f"{p.name} needs extents {_shape_text(p.shape, symbols)}, "
                         f"{a.name} gives {extents}")
                return

    def call_barrier(self, s: A.InstrCall, g: Instr, info: StmtInfo) -> None:
        if g.barrier is None and s.barrier is not None:
            self.err("InstrCall", s.span, f"bad call: {g.name} takes no >> barrier")
        elif g.barrier is not None:
            if s.barrier is None:
                self.err("InstrCall", s.span, f"bad call: {g.name} needs >> a barrier "
                         f"@ {g.barrier}")
                return
            d = info.decls[s.barrier.name]
            self.barrier(s.barrier, info, s.span)
            if d.mem is not None and d.mem.name != g.barrier:
                self.err("InstrCall", s.span, f"memory mismatch: {g.name} needs a "
                         f"barrier @ {g.barrier}, {d.name} is @ {d.mem.name}")


def _sub(a: Affine, b: Affine) -> Affine:
    keys = set(dict(a.coeffs)) | set(dict(b.coeffs))
    co = tuple(sorted((k, a.coeff(k) - b.coeff(k)) for k in keys
                      if a.coeff(k) != b.coeff(k)))
    return Affine(a.const - b.const, co)


def _shape_text(shape: tuple[int | str, ...], symbols: dict[str, int]) -> str:
    return "[" + ", ".join(str(symbols.get(x, x)) if isinstance(x, str) else str(x)
                           for x in shape) + "]"
