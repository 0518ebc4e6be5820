"""Expression and argument conversion GPU IR -> AMIR: Exo-GPU (seed 000) Section 5.2.1
and 5.2.3, Figure 17 (T_e), Figure 18 (T_ex, T_smem, isEx, isSmem, T_qin), Figure 19
(T_arg) and Figure 20 (T_ext, T_atom, T_init, T_ooo, T_cvg).

The statement conversion T_s (Figure 5) is interpreter/amir/from_gpuir.py; this module is
the part of it that looks at single accesses. Everything here is a pure function of the
access and the `Scope` it is converted in.

Conventions (paper -> Python):
  e : DExpr, e_z : ZExpr          -> gpuir `DExpr`, `ZRead`
  e# ∈ Expr#                      -> amir `Access` (data or barrier, window coords)
  T_e(e) (a set)                  -> `t_e(e, scope)`: a tuple, first occurrence
                                     first, duplicates dropped (order is irrelevant
                                     to the paper; a fixed one makes the output
                                     deterministic)
  g.p_i, e_i, e_z                 -> `InstrParam`, the argument `DRead`, the `ZRead`
  τ_v^pre, τ_v^post               -> `pre`, `post`
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, overload

from gpusem.calculus.amir import ast as M
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir import memtypes
from gpusem.calculus.gpuir.instructions import InstrParam, ext_quals, initial_qual
from gpusem.calculus.gpuir.timelines import VL, QualTL, Rules
from gpusem.calculus.gpuir.walk import data_reads
from gpusem.calculus.span import Span
from gpusem.typing_rules.gpuir.collective import Analysis

# ------------------------------------------------------------------------ the scope


@dataclass(frozen=True, slots=True)
class VarInfo:
    """What the conversion must know of a data or barrier variable: its memory (the
    MemExpr name: isEx / isSmem / register-ness are functions of it) and its kind."""

    name: str
    mem: str
    barrier: bool
    rank: int


@dataclass(frozen=True, slots=True)
class Scope:
    """The environment T_s carries down the tree.

    `vars`: every data and barrier variable in scope; `windows`: window statements seen
    so far (Section 5.2 preprocessing (i): a window is inlined into each use, so that
    accesses name the underlying variable and its memory); `threads`: the thread
    mapping f of the current scope (Section 4) with `threads.cpu` the scope mapping of
    Section 5.2.2 (CPU outside every CudaDeviceFunction)."""

    vars: dict[str, VarInfo]
    windows: dict[str, G.DRead] = field(default_factory=dict)
    threads: M.ThreadMap = M.CPU
    rules: Rules = "fixed"
    analysis: Analysis | None = None  # the collective analysis (f_{s#} per stmt)

    @property
    def cpu(self) -> bool:
        return self.threads.cpu


# ------------------------------------------------------------- windows (§5.2 (i))


@overload
def _shift(base: G.CExpr | None, off: G.CExpr) -> G.CExpr: ...
@overload
def _shift(base: G.CExpr | None, off: G.CExpr | None) -> G.CExpr | None: ...
def _shift(base: G.CExpr | None, off: G.CExpr | None) -> G.CExpr | None:
    """base + off, where a missing base is 0 and a missing offset is the base."""
    if off is None:
        return base
    if base is None or (isinstance(base, G.CInt) and base.value == 0):
        return off
    if isinstance(off, G.CInt) and off.value == 0:
        return base
    return G.CBin("+", base, off, span=off.span)


def compose_window(source: G.DRead, coords: tuple[G.WCoord, ...]) -> G.DRead:
    """The access `win[coords]` where `win = source` (a window of the underlying
    variable), as an access of the underlying variable: each interval coordinate of
    the source consumes one coordinate of the use, shifted by the interval's start;
    point coordinates of the source stay (the window dropped that dimension)."""
    out: list[G.WCoord] = []
    rest = list(coords)
    for c in source.coords:
        match c:
            case G.WPoint():
                out.append(c)
            case G.WInterval(lo=lo, hi=hi) if rest:
                use = rest.pop(0)
                match use:
                    case G.WPoint(index=i):
                        out.append(G.WPoint(_shift(lo, i), span=use.span))
                    case G.WInterval(lo=ulo, hi=uhi):
                        new_lo = _shift(lo, ulo)
                        new_hi = hi if uhi is None else _shift(lo, uhi)
                        out.append(G.WInterval(new_lo, new_hi, span=use.span))
            case G.WInterval():
                out.append(c)  # the use leaves this dimension whole
    if rest:
        raise BadInput(f"{source.span}: too many coordinates for window of "
                       f"{source.name}")
    return G.DRead(source.name, tuple(out), span=source.span)


def resolve(read: G.DRead, scope: Scope) -> G.DRead:
    """Inline window aliases (possibly chained) into a read; the result keeps the
    span of the use, so diagnostics point at the line that accessed the window."""
    while read.name in scope.windows:
        under = compose_window(scope.windows[read.name], read.coords)
        read = G.DRead(under.name, under.coords, span=read.span)
    return read


# ------------------------------------------------------------------ T_e (Fig. 17)


def access(read: G.DRead | G.ZRead, scope: Scope) -> M.Access:
    """One e# (x[w*] or z[w*]); a bare name is the degenerate access x[<>]."""
    if isinstance(read, G.DRead):
        read = resolve(read, scope)
    info = _info(read.name, read.span, scope)
    coords = read.coords
    if not coords and info.rank:
        # Note: a bare array name denotes the whole array (x[:, ..., :]), the only
        # reading under which Figure 17's x[<>] names cells of a non-scalar.
        coords = (G.WInterval(None, None, span=read.span),) * info.rank
    return M.Access(read.name, coords, info.barrier, span=read.span)


def t_e(e: G.DExpr | G.ZRead, scope: Scope) -> tuple[M.Access, ...]:
    """T_e (Figure 17): d -> {}, x -> {x[<>]}, x[w*] -> {x[w*]}, e1 op e2 -> union;
    z -> {z[<>]}, z[w*] -> {z[w*]}."""
    reads = (e,) if isinstance(e, G.ZRead) else tuple(data_reads(e))
    out: list[M.Access] = []
    for r in reads:
        a = access(r, scope)
        if a not in out:
            out.append(a)
    return tuple(out)


# ---------------------------------------------------------------- Fig. 18 helpers


def _info(name: str, span: Span, scope: Scope) -> VarInfo:
    info = scope.vars.get(name)
    if info is None:
        raise BadInput(f"{span}: unknown variable: {name}")
    return info


def is_ex(a: M.Access, scope: Scope) -> bool:
    """isEx: the access is to sync-exempt memory (Section 5.2.2: CudaGridConstant,
    CudaClusterSync, CudaCommitGroup)."""
    return memtypes.is_sync_exempt(scope.vars[a.name].mem)


def is_smem(a: M.Access, scope: Scope) -> bool:
    """isSmem: the access is to shared memory (CudaBasicSmem, CudaSmemAtomicity16B,
    CudaSmemLinear, Sm90_SmemSwizzled(B), CudaMbarrier)."""
    return memtypes.is_smem(scope.vars[a.name].mem)


def is_rmem(a: M.Access, scope: Scope) -> bool:
    mem = memtypes.DATA_MEMORIES.get(scope.vars[a.name].mem)
    return mem is not None and mem.is_rmem


def t_ex(e: G.DExpr | G.ZRead, scope: Scope) -> tuple[M.Access, ...]:
    """T_ex(e) = {e# ∈ T_e(e) | ¬isEx(e#)}."""
    return tuple(a for a in t_e(e, scope) if not is_ex(a, scope))


def t_ex_all(es: tuple[G.ZRead, ...], scope: Scope) -> tuple[M.Access, ...]:
    """T_ex over a tuple of barrier expressions (Arrive's e_z*)."""
    out: list[M.Access] = []
    for e in es:
        out += [a for a in t_ex(e, scope) if a not in out]
    return tuple(out)


def t_smem(e: G.DExpr | G.ZRead, scope: Scope) -> tuple[M.Access, ...]:
    """T_smem(e) = {e# ∈ T_e(e) | isSmem(e#)}."""
    return tuple(a for a in t_e(e, scope) if is_smem(a, scope))


def t_qin(a: M.Access, scope: Scope) -> QualTL:
    """T_qin: cpu_in_order_qual at CPU scope, cuda_in_order_rmem_qual for registers,
    cuda_in_order_ram_qual otherwise.

    Note: "e# is host/CPU scoped" is read as "the statement making the access is CPU
    scoped" (scope(s), Section 5.2.2): a CPU statement cannot touch registers, and a
    GPU statement touching host memory is rejected by the front end."""
    if scope.cpu:
        return QualTL.CPU_IN_ORDER
    if is_rmem(a, scope):
        return QualTL.CUDA_IN_ORDER_RMEM
    return QualTL.CUDA_IN_ORDER_RAM


# ---------------------------------------------------------------- Fig. 20 helpers


def _data_memory(a: M.Access, scope: Scope) -> memtypes.DataMemory:
    mem = memtypes.DATA_MEMORIES.get(scope.vars[a.name].mem)
    if mem is None:
        raise BadInput(f"{a.span}: instruction argument {a.name} is not data")
    return mem


def t_init(p: InstrParam, a: M.Access, scope: Scope) -> QualTL:
    """T_init(g.p_i) = g.p_i.initial_qual_tl (in-order default: T_qin of the memory)."""
    return QualTL.parse(initial_qual(p, _data_memory(a, scope)))


def t_ext(p: InstrParam, a: M.Access, scope: Scope) -> frozenset[QualTL]:
    """T_ext(g.p_i) = g.p_i.ext_qual_tl."""
    return frozenset(QualTL.parse(q) for q in ext_quals(p, _data_memory(a, scope)))


def t_atom(p: InstrParam) -> frozenset[QualTL]:
    """T_atom(g.p_i) = g.p_i.atomic_qual_tl."""
    return frozenset(QualTL.parse(q) for q in p.atomic_qual_tl)


def t_ooo(p: InstrParam) -> bool:
    """T_ooo(g.p_i) = g.p_i.out_of_order."""
    return p.out_of_order


def t_cvg(p: InstrParam) -> bool:
    """T_cvg(g.p_i) = g.p_i.convergent."""
    return p.convergent


# ------------------------------------------------------------------ T_arg (Fig. 19)

ArgCase = Literal["non-atomic read-only", "non-atomic non-read-only", "atomic"]


def arg_case(p: InstrParam) -> ArgCase:
    """Which row of Figure 19 converts parameter p: atomic exactly when
    T_atom(g.p_i) ≠ ∅ (Section 5.2.3), else by the access mode."""
    if t_atom(p):
        return "atomic"
    return "non-atomic read-only" if p.access == "read" else "non-atomic non-read-only"


def t_arg(p: InstrParam, arg: G.DRead, ez: G.ZRead | None, scope: Scope,
          origin: Span) -> list[M.AStmt]:
    """T_arg(g.p_i, e_i, e_z) (Figure 19): for each non-exempt e# ∈ T_ex(e_i), the
    checks and records of p's row; τ_v^post = unordered if T_ooo(g.p_i) else
    fully_ordered."""
    post = VL.UNORDERED if t_ooo(p) else VL.FULLY_ORDERED
    cvg, th = t_cvg(p), scope.threads
    zs = t_e(ez, scope) if ez is not None else ()
    out: list[M.AStmt] = []
    for a in t_ex(arg, scope):
        ext, init = t_ext(p, a, scope), t_init(p, a, scope)
        match arg_case(p):
            case "non-atomic read-only":
                out += [
                    M.CheckMutates(VL.FULLY_ORDERED, cvg, a, ext, th, origin=origin),
                    M.RecordRead(post, cvg, a, init, frozenset(), zs, th, origin=origin),
                ]
            case "non-atomic non-read-only":
                pre = (VL.TEMPORALLY_ORDERED if p.access == "write"
                       else VL.FULLY_ORDERED)
                out += [
                    M.CheckMutates(pre, cvg, a, ext, th, origin=origin),
                    M.CheckReads(VL.TEMPORALLY_ORDERED, cvg, a, ext, th, origin=origin),
                    M.ClearReads(a, origin=origin),
                    M.ClearMutates(a, origin=origin),
                    M.RecordMutate(post, cvg, a, init, frozenset(), zs, th,
                                   origin=origin),
                ]
            case "atomic":
                # Figure 19: no ClearMutates, so earlier atomic mutations stay and
                # later non-atomic accesses must still be ordered after them.
                out += [
                    M.CheckMutates(VL.ATOMIC_ONLY, cvg, a, ext, th, origin=origin),
                    M.CheckReads(VL.TEMPORALLY_ORDERED, cvg, a, ext, th, origin=origin),
                    M.ClearReads(a, origin=origin),
                    M.RecordMutate(post, cvg, a, init, t_atom(p), zs, th,
                                   origin=origin),
                ]
    return out
