"""Hypothesis strategies for GPU IR syntax trees (the print/parse property, and the
robustness of the analyses and the sequential reading).

The trees are well scoped (every name is bound before use, as the kind the parser
resolves it to, and binders are fresh) but not necessarily well typed: the property
is about the concrete syntax, so every production of Figures 1-2 must appear,
including ones the analyses reject (`free`, odd units and memories).

`procs(real_names=True)` draws units, memories, sync timelines and instructions from
the real tables (Figures 11-16 and the instruction library) instead of a pool of
mostly unknown identifiers, so that most trees get past name resolution into the
analyses and the sequential evaluator (tests/gpuir/test_robustness.py).
"""

from __future__ import annotations

import itertools

from gpusem.calculus.gpuir import ast as A
from hypothesis import strategies as st

ints = st.integers(-40, 300)
floats = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=32)
IDENTS = ("cuda_thread", "cuda_warp", "CudaSmemLinear", "CudaRmem", "tl_a", "cuda_in_order",
          "Sm80_cp_async", "g_copy", "shfl", "Mem2")


class _Names:
    """The identifier pools of one kind of tree."""

    def __init__(self, real: bool):
        if not real:
            pool = IDENTS
            self.units = self.data_mems = self.bar_mems = self.win_mems = pool
            self.timelines = self.instrs = pool
            self.counts, self.args = st.integers(-2, 8), st.lists(ints, max_size=2)
            return
        from gpusem.calculus.gpuir import memtypes
        from gpusem.calculus.gpuir.instructions import INSTRUCTIONS
        from gpusem.calculus.gpuir.timelines import SYNC_TIMELINE_NAMES
        from gpusem.calculus.gpuir.units import UNITS

        self.units = tuple(UNITS)
        self.data_mems = tuple(memtypes.DATA_MEMORIES)
        self.bar_mems = tuple(memtypes.BARRIER_MEMORIES)
        self.win_mems = tuple(memtypes.WINDOW_MEMORIES)
        self.timelines = SYNC_TIMELINE_NAMES
        self.instrs = tuple(INSTRUCTIONS)
        self.counts = st.sampled_from((1, 1, 2, 4))
        self.args = st.lists(st.sampled_from((1, 2, 4, 8, 16, 32, 64, 128)), max_size=2)


class _Scope:
    def __init__(self, counter, ctrl=(), data=(), bars=(), names=None):
        self.counter = counter
        self.ctrl, self.data, self.bars = list(ctrl), list(data), list(bars)
        self.names = names or _Names(False)

    def fresh(self) -> str:
        return f"v{next(self.counter)}"

    def child(self) -> "_Scope":
        return _Scope(self.counter, self.ctrl, self.data, self.bars, self.names)


def cexpr(draw, sc: _Scope, depth: int = 2) -> A.CExpr:
    choices = ["int"] + (["var"] if sc.ctrl else []) + (["bin"] if depth > 0 else [])
    match draw(st.sampled_from(choices)):
        case "int":
            return A.CInt(draw(ints))
        case "var":
            return A.CVar(draw(st.sampled_from(sc.ctrl)))
    op = draw(st.sampled_from(A.CONTROL_OPS))
    return A.CBin(op, cexpr(draw, sc, depth - 1), cexpr(draw, sc, depth - 1))


def bexpr(draw, sc: _Scope, depth: int = 2) -> A.BExpr:
    kinds = ["const", "rel"] + (["log", "not"] if depth > 0 else [])
    match draw(st.sampled_from(kinds)):
        case "const":
            return A.BConst(draw(st.booleans()))
        case "rel":
            return A.BRel(draw(st.sampled_from(A.RELATION_OPS)), cexpr(draw, sc, 1),
                          cexpr(draw, sc, 1))
        case "log":
            return A.BLog(draw(st.sampled_from(("and", "or"))), bexpr(draw, sc, depth - 1),
                          bexpr(draw, sc, depth - 1))
    return A.BNot(bexpr(draw, sc, depth - 1))


def wcoord(draw, sc: _Scope, windows: bool) -> A.WCoord:
    if windows and draw(st.booleans()):
        lo = cexpr(draw, sc, 1) if draw(st.booleans()) else None
        hi = cexpr(draw, sc, 1) if draw(st.booleans()) else None
        return A.WInterval(lo, hi)
    return A.WPoint(cexpr(draw, sc, 1))


def dread(draw, sc: _Scope, windows: bool) -> A.DRead:
    n = draw(st.integers(0, 3))
    return A.DRead(draw(st.sampled_from(sc.data)),
                   tuple(wcoord(draw, sc, windows) for _ in range(n)))


def dexpr(draw, sc: _Scope, depth: int = 2) -> A.DExpr:
    kinds = ["int", "float"] + (["read"] if sc.data else []) + \
        (["bin", "neg"] if depth > 0 else [])
    match draw(st.sampled_from(kinds)):
        case "int":
            return A.DConst(draw(ints))
        case "float":
            return A.DConst(float(draw(floats)))
        case "read":
            return dread(draw, sc, windows=False)
        case "bin":
            return A.DBin(draw(st.sampled_from(A.DATA_OPS)), dexpr(draw, sc, depth - 1),
                          dexpr(draw, sc, depth - 1))
    return A.DNeg(dexpr(draw, sc, depth - 1))


def zread(draw, sc: _Scope) -> A.ZRead:
    n = draw(st.integers(0, 2))
    return A.ZRead(draw(st.sampled_from(sc.bars)),
                   tuple(wcoord(draw, sc, True) for _ in range(n)))


def unit(draw, names: _Names | None = None) -> A.UnitExpr:
    names = names or _Names(False)
    return A.UnitExpr(draw(st.sampled_from(names.units)), draw(names.counts),
                      tuple(draw(names.args)))


def mem(draw, pool: tuple[str, ...] = IDENTS) -> A.MemExpr:
    if pool is IDENTS:
        return A.MemExpr(draw(st.sampled_from(pool)),
                         tuple(draw(st.lists(ints, max_size=3))))
    name = draw(st.sampled_from(pool))
    from gpusem.calculus.gpuir import memtypes

    d = memtypes.DATA_MEMORIES.get(name)
    n = len(d.params) if d is not None else (2 if name in memtypes.WINDOW_MEMORIES
                                             else 0)
    return A.MemExpr(name, tuple(draw(st.sampled_from((0, 8, 16, 64, 128)))
                                 for _ in range(n)))


def shape(draw, sc: _Scope) -> tuple[A.CExpr, ...]:
    return tuple(cexpr(draw, sc, 1) for _ in range(draw(st.integers(0, 3))))


def body(draw, sc: _Scope, depth: int) -> tuple[A.Stmt, ...]:
    inner = sc.child()
    return tuple(stmt(draw, inner, depth) for _ in range(draw(st.integers(1, 3))))


def stmt(draw, sc: _Scope, depth: int) -> A.Stmt:
    kinds = ["alloc", "barrier", "fence"]
    kinds += ["assign", "reduce", "window", "free"] if sc.data else []
    kinds += ["arrive", "await"] if sc.bars else []
    kinds += ["call"]
    kinds += ["for", "device", "warps", "if"] if depth > 0 else []
    kind = draw(st.sampled_from(kinds))
    match kind:
        case "alloc":
            name = sc.fresh()
            s = A.Alloc(name, draw(st.sampled_from(list(A.DataType))), shape(draw, sc),
                        mem(draw, sc.names.data_mems))
            sc.data.append(name)
            return s
        case "barrier":
            name = sc.fresh()
            sc.bars.append(name)
            return A.BarrierAlloc(name, shape(draw, sc), mem(draw, sc.names.bar_mems))
        case "fence":
            tls = sc.names.timelines
            return A.Fence(draw(st.sampled_from(tls)), draw(st.sampled_from(tls)))
        case "assign" | "reduce":
            cls = A.Assign if kind == "assign" else A.Reduce
            idx = tuple(cexpr(draw, sc, 1) for _ in range(draw(st.integers(0, 2))))
            return cls(draw(st.sampled_from(sc.data)), idx, dexpr(draw, sc))
        case "window":
            src = dread(draw, sc, windows=True)
            name = sc.fresh()
            sc.data.append(name)
            return A.WindowStmt(name, src, mem(draw, sc.names.win_mems))
        case "free":
            return A.Free(draw(st.sampled_from(sc.data + sc.bars)))
        case "arrive":
            zs = tuple(zread(draw, sc) for _ in range(draw(st.integers(1, 2))))
            return A.Arrive(draw(st.sampled_from(sc.names.timelines)), draw(ints), zs)
        case "await":
            return A.Await(zread(draw, sc), draw(st.sampled_from(sc.names.timelines)),
                           draw(ints))
        case "call":
            return call(draw, sc)
        case "for":
            mode = draw(st.sampled_from(list(A.LoopMode)))
            u = unit(draw, sc.names) if mode is A.LoopMode.CUDA_THREADS else None
            lo, hi = cexpr(draw, sc, 1), cexpr(draw, sc, 1)
            var = sc.fresh()
            inner = sc.child()
            inner.ctrl.append(var)
            return A.For(var, lo, hi, mode, u, body(draw, inner, depth - 1))
        case "device":
            if draw(st.booleans()):
                bd, wc = draw(st.integers(1, 1024)), ()
            else:
                bd = None
                wc = tuple(A.WarpConfig(f"w{i}", draw(ints), draw(ints), draw(ints))
                           for i in range(draw(st.integers(1, 3))))
            return A.CudaDeviceFunction(bd, draw(st.integers(0, 8)), wc,
                                        body(draw, sc, depth - 1))
        case "warps":
            lo = draw(st.one_of(st.none(), st.integers(0, 4)))
            hi = None if lo is None else lo + draw(st.integers(0, 4))
            name = draw(st.one_of(st.none(), st.sampled_from(("producer", "consumer"))))
            return A.CudaWarps(lo, hi, name, body(draw, sc, depth - 1))
    return A.If(bexpr(draw, sc), body(draw, sc, depth - 1))


def call(draw, sc: _Scope) -> A.InstrCall:
    args = []
    for _ in range(draw(st.integers(0, 3))):
        kinds = ["c", "f"] + (["d"] if sc.data else [])
        k = draw(st.sampled_from(kinds))
        if k == "c":
            args.append(cexpr(draw, sc, 1))
        elif k == "f":  # integer literals are control arguments; data literals float
            args.append(A.DConst(float(draw(floats))))
        else:
            args.append(dread(draw, sc, windows=True))
    z = zread(draw, sc) if sc.bars and draw(st.booleans()) else None
    pool = ("g_copy", "shfl", "mma_sync") if sc.names.instrs is IDENTS \
        else sc.names.instrs
    return A.InstrCall(draw(st.sampled_from(pool)), tuple(args), z)


@st.composite
def procs(draw, name: str = "p", real_names: bool = False) -> A.Proc:
    counter = itertools.count()
    sc = _Scope(counter, names=_Names(real_names))
    params: list[A.Param] = []
    for i in range(draw(st.integers(0, 2))):
        n = f"N{i}"
        params.append(A.CtrlParam(n, draw(st.sampled_from(list(A.CtrlKind)))))
        sc.ctrl.append(n)
    for i in range(draw(st.integers(0, 2))):
        n = f"X{i}"
        params.append(A.DataParam(n, draw(st.sampled_from(list(A.DataType))),
                                  shape(draw, sc), mem(draw, sc.names.data_mems)))
        sc.data.append(n)
    return A.Proc(name, tuple(params), body(draw, sc, 3))


@st.composite
def modules(draw) -> A.Module:
    n = draw(st.integers(1, 2))
    return A.Module(tuple(draw(procs(f"p{i}")) for i in range(n)))
