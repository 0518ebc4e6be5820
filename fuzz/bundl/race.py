"""Race freedom of Bundl programs, decided with z3 (the determinism property, issue 5).

Bundl does not prevent races (Prism Sec 3.4.2): a program is deterministic when no two
threads make conflicting accesses to one cell without a barrier between them. This
analysis over-approximates the accesses of every thread symbolically and asks z3, for
each pair of access sites, whether two DISTINCT threads (t1 ≠ t2) can reach them and hit
the same cell of the same memory region, unordered:

  - thread ids are 32-bit vectors t ∈ [0, B·T); b = t div T, and the perspective id p
    follows the small-step rules of the fixed semantics (interpreter/bundl/small_step):
    S-Destruct-Grid p := b, S-Destruct-Block p := t mod T, S-Group p := p mod n (the
    unit index p div n is recorded), S-Split-Left/Right p < n1 / p - n1, S-Claim p < n';
  - views of arrays follow S-Partition (fixed): piece k = p div (n/c), chunk =
    extent div c, offset += k·chunk; S-Lower / S-Claim / async_partition rename;
  - indices and stored values are encoded exactly in 32-bit C arithmetic (bvsdiv and
    bvsrem truncate like C); anything not known statically (array reads, partition_id,
    variables that are ever re-assigned, cells that some statement writes) is a fresh
    unknown PER THREAD, so the analysis only claims freedom it can prove; float32
    values are z3 floating point (fpAdd ... with round-to-nearest-even, fpLT, fpEQ),
    so uniform float code is proved uniform;
  - two writes of provably equal values (uniform code at a perspective wider than one
    thread writes the same value from every thread of the unit) do not conflict;
  - barriers: partition / claim / lower end with `init; s; dec; wait` over the unit
    of the code perspective (S-Partition etc.). Accesses in items i < j of one
    statement sequence are ordered when an item in [i, j) is such a statement and the
    two threads are in one unit at that sequence; inside a loop the wrap-around
    segment needs a barrier too. `if` branches are both assumed taken, loops are
    walked once (their variables are re-assigned, hence unknown).
Local memory is per thread and never races. Calls are inlined.

A pair z3 cannot decide within the timeout counts as a race (sound: "race-free" is a
proof). Conventions (paper -> Python): π -> `Ctx.persp`, p -> `Ctx.p` (a builder
th -> term), (t, b) -> `Th.t`, `Th.b`; a builder is a function of one symbolic thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import z3
from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.perspective import BLOCK1, GRID1, Level, Perspective
from gpusem.calculus.bundl.printer import print_expr as _show

BV = 32
F32 = z3.Float32()
RNE = z3.RNE()  # float32 arithmetic rounds to nearest even, like numpy.float32 ops
PARTITION_LIKE = (A.Partition, A.Claim, A.Lower)


class Th:
    """One symbolic thread: its grid-wide id and the unknowns it draws."""

    def __init__(self, name: str, threads: int):
        self.name = name
        self.t = z3.BitVec(f"t_{name}", BV)
        self.b = z3.UDiv(self.t, threads)
        self.tid = z3.URem(self.t, threads)
        self.count = 0
        self.cons: list = []

    def fresh(self, kind: str):
        self.count += 1
        label = f"u_{self.name}_{self.count}"
        if kind == "float":
            return z3.FP(label, F32)
        return z3.Bool(label) if kind == "bool" else z3.BitVec(label, BV)


def _k(v: int):
    return z3.BitVecVal(v, BV)


@dataclass(frozen=True)
class View:
    """An array name's value: a window of a region."""

    key: tuple  # static region identity: ("g", name) | ("a", site) | ("local",)
    unit: object  # th -> list of terms: which dynamic instance of the region
    off: object  # th -> term
    extent: int
    size: int  # the region's length (bounds keep the array's end, errata S-Partition)
    elem: str = "int"  # int | float | bool


@dataclass(frozen=True)
class Scalar:
    kind: str  # int | float | bool
    value: object  # th -> term, or None: unknown (fresh per use)


@dataclass(frozen=True)
class Access:
    kind: str  # "r" | "w"
    view: View
    addr: object  # th -> term (absolute cell index in the region)
    value: object  # (th, addr) -> term | None (writes only)
    path: tuple  # builders th -> Bool
    pos: tuple  # ((seq uid, item index), ...)
    what: str


@dataclass(frozen=True)
class SeqInfo:
    unit: object  # th -> list of terms (the unit of the code perspective)
    loop: bool
    barriers: frozenset
    n: int


@dataclass(frozen=True)
class Ctx:
    persp: Perspective
    p: object
    unit: object
    path: tuple
    pos: tuple
    loop: bool
    env: dict
    depth: int = 0


@dataclass
class Race:
    first: str  # the two access sites ("store out", "memcpy into s", ...)
    second: str
    witness: str  # the two threads and the cell (a z3 model)


@dataclass
class RaceReport:
    race_free: bool
    races: list[Race] = field(default_factory=list)
    pairs: int = 0
    undecided: int = 0

    def describe(self) -> str:
        if self.race_free:
            return f"race-free ({self.pairs} pairs)"
        r = self.races[0]
        return f"race: {r.first} vs {r.second} ({r.witness})"


def _assigned(s, out: set) -> set:
    if isinstance(s, A.Assign):
        out.add(s.name)
    for c in A.child_stmts(s):
        _assigned(c, out)
    return out


def flatten(s: A.Stmt) -> list:
    """Items of a statement list: a let/alloc is a header item followed by its scope."""
    match s:
        case A.Skip():
            return []
        case A.Seq(stmts):
            return [it for x in stmts for it in flatten(x)]
        case A.Decl(body=b) | A.Alloc(body=b):
            return [("header", s)] + flatten(b)
        case _:
            return [("stmt", s)]


class Collector:
    """Walks a program once, recording every access to Shared/Global memory."""

    def __init__(self, prog: A.Program):
        self.prog = prog
        self.T = prog.machine.threads
        self.B = prog.machine.blocks
        self.fns = {f.name: f for f in prog.fns}
        self.assigned = _assigned(prog.main, set())
        for f in prog.fns:
            _assigned(f.body, self.assigned)
        self.accesses: list[Access] = []
        self.seqs: dict[int, SeqInfo] = {}
        self.sites = 0
        self.memories: dict = {}
        self.incomplete = ""  # why the walk may have missed accesses, if it may have
        self._written: set | None = None  # computed once the walk is over

    def run(self) -> None:
        env = {g.name: View(("g", g.name), lambda th: [], lambda th: _k(0), g.size,
                            g.size, g.elem.value) for g in self.prog.globals}
        ctx = Ctx(GRID1, lambda th: _k(0), lambda th: [], (), (), False, env)
        self.block(self.prog.main, ctx)

    # ------------------------------------------------------------- statements

    def block(self, s: A.Stmt, ctx: Ctx) -> None:
        items = flatten(s)
        uid = len(self.seqs)
        barriers = frozenset(k for k, (tag, x) in enumerate(items)
                             if tag == "stmt" and isinstance(x, PARTITION_LIKE))
        self.seqs[uid] = SeqInfo(ctx.unit, ctx.loop, barriers, len(items))
        env = dict(ctx.env)
        for k, (tag, x) in enumerate(items):
            c = replace(ctx, pos=ctx.pos + ((uid, k),), env=env)
            if tag == "header":
                self.header(x, c, env)
            else:
                self.stmt(x, c)

    def header(self, s, ctx: Ctx, env: dict) -> None:
        match s:
            case A.Decl(name, ty, _, init):  # S-Decl
                val, _ = self.expr(init, ctx)
                known = name not in self.assigned
                env[name] = Scalar(ty.value, val if known else None)
            case A.Alloc(name, elem, size, mem):  # S-Alloc-*
                self.sites += 1
                match mem:
                    case A.MemKind.LOCAL:
                        key, unit = ("local",), (lambda th: [])
                    case A.MemKind.SHARED:
                        key, unit = ("a", self.sites), (lambda th: [th.b])
                    case _:  # Global: once per unit of the code perspective
                        key, unit = ("a", self.sites), ctx.unit
                env[name] = View(key, unit, lambda th: _k(0), size, size, elem.value)

    def stmt(self, s: A.Stmt, ctx: Ctx) -> None:
        h, n = ctx.persp.level, ctx.persp.n
        p = ctx.p
        match s:
            case A.Assign(_, value):
                self.expr(value, ctx)
            case A.ArrAssign(arr, idx, value):
                i, _ = self.expr(idx, ctx)
                v, _ = self.expr(value, ctx)
                self.access("w", arr, i, lambda th, _addr: v(th), ctx, "store")
            case A.If(cond, then, orelse):  # both branches may run
                self.expr(cond, ctx)
                self.block(then, ctx)
                self.block(orelse, ctx)
            case A.While(cond, body):
                self.expr(cond, ctx)
                self.block(body, replace(ctx, loop=True))
            case A.Split(n1, n2, left, right):  # S-Split-Left / S-Split-Right
                self.block(left, replace(ctx, persp=Perspective(h, n1), path=ctx.path + (
                    lambda th: z3.ULT(p(th), _k(n1)),)))
                self.block(right, replace(
                    ctx, persp=Perspective(h, n2), p=lambda th: p(th) - _k(n1),
                    path=ctx.path + (lambda th: z3.And(z3.UGE(p(th), _k(n1)),
                                                       z3.ULT(p(th), _k(n1 + n2))),)))
            case A.Group(q, body) if q >= 1 and n % q == 0:  # S-Group
                m, unit = n // q, ctx.unit
                self.block(body, replace(
                    ctx, persp=Perspective(h, m), p=lambda th: z3.URem(p(th), _k(m)),
                    unit=lambda th: unit(th) + [z3.UDiv(p(th), _k(m))]))
            case A.Destruct(body) if ctx.persp in (GRID1, BLOCK1):
                unit = ctx.unit
                if ctx.persp == GRID1:  # S-Destruct-Grid: p := b
                    self.block(body, replace(ctx, persp=Perspective(Level.BLOCK, self.B),
                                             p=lambda th: th.b))
                else:  # S-Destruct-Block: p := t mod T, one unit per block
                    self.block(body, replace(
                        ctx, persp=Perspective(Level.THREAD, self.T),
                        p=lambda th: th.tid, unit=lambda th: unit(th) + [th.b]))
            case A.Partition(_, x, y, c, body) if isinstance(ctx.env.get(x), View):
                v = ctx.env[x]
                m = max(n // max(c, 1), 1)
                chunk = v.extent // max(c, 1)
                off = v.off
                piece = replace(v, off=lambda th: off(th) + z3.UDiv(p(th), _k(m)) * chunk,
                                extent=chunk)
                self.block(body, replace(ctx, env=ctx.env | {y: piece}))
            case A.Claim(_, x, y, at, body) if x in ctx.env:  # S-Claim (fixed)
                self.block(body, replace(
                    ctx, persp=Perspective(h, max(at, 1)), env=ctx.env | {y: ctx.env[x]},
                    path=ctx.path + (lambda th: z3.ULT(p(th), _k(at)),)))
            case A.Lower(_, x, y, body) | A.AsyncPartition(_, x, y, body) if x in ctx.env:
                self.block(body, replace(ctx, env=ctx.env | {y: ctx.env[x]}))
            case A.Memcpy(dst, src) | A.AsyncMemcpy(dst, src):
                self.range_access("r", src, ctx)
                self.range_access("w", dst, ctx, src)
            case A.Call(fn, args) if fn in self.fns and ctx.depth < 8:
                self.call(self.fns[fn], args, ctx)
            case _:
                # An ill-typed shape or a call nested too deep: accesses could be
                # missed, so nothing is proved (soundness over precision).
                if A.child_stmts(s) or isinstance(s, A.Call):
                    self.incomplete = f"{type(s).__name__} not analysed"
                for child in A.child_stmts(s):
                    self.block(child, ctx)

    def call(self, f: A.FnDef, args, ctx: Ctx) -> None:
        env = {g.name: ctx.env[g.name] for g in self.prog.globals
               if isinstance(ctx.env.get(g.name), View)}
        for param, arg in zip(f.params, args, strict=False):
            if isinstance(param.type, A.ArrayType):
                view = self.view_of(arg, ctx)
                if view is not None:
                    env[param.name] = view
            else:
                val, _ = self.expr(arg, ctx)
                known = param.name not in self.assigned
                env[param.name] = Scalar(param.type.value, val if known else None)
        self.block(f.body, replace(ctx, env=env, depth=ctx.depth + 1))

    # ------------------------------------------------------------- accesses

    def view_of(self, arr: A.Expr, ctx: Ctx) -> View | None:
        match arr:
            case A.Var(name) if isinstance(ctx.env.get(name), View):
                return ctx.env[name]
            case A.BinOp("+", base, offset):  # a pointer offset (runtime form)
                v = self.view_of(base, ctx)
                o, _ = self.expr(offset, ctx)
                if v is None:
                    return None
                off = v.off
                return replace(v, off=lambda th: off(th) + o(th))
        return None

    def access(self, kind: str, arr: A.Expr, idx, value, ctx: Ctx, what: str) -> None:
        v = self.view_of(arr, ctx)
        if v is None:
            self.incomplete = f"unknown array {_show(arr)}"
        if v is None or v.key == ("local",):
            return
        off = v.off
        self.accesses.append(Access(kind, v, lambda th: off(th) + idx(th), value,
                                    ctx.path, ctx.pos, f"{what} {_show(arr)}"))

    def range_access(self, kind: str, name: str, ctx: Ctx, src: str = "") -> None:
        """memcpy: any cell from the view's start to the region's end; a write stores
        the source cell at the same distance from the source view's start."""
        v = ctx.env.get(name)
        if not isinstance(v, View):
            self.incomplete = f"unknown array {name}"
        if not isinstance(v, View) or v.key == ("local",):
            return
        off, size = v.off, v.size

        def addr(th):
            u = th.fresh("int")
            th.cons += [z3.UGE(u, off(th)), z3.ULT(u, _k(size))]
            return u

        value, s = None, ctx.env.get(src)
        if isinstance(s, View):
            def value(th, a, s=s):
                return self.read_at(s, s.off(th) + (a - off(th)), s.elem, th)

        self.accesses.append(Access(kind, v, addr, value, ctx.path, ctx.pos,
                                    f"memcpy {'into' if kind == 'w' else 'from'} {name}"))

    def read_value(self, v: View | None, idx, kind: str, th: Th):
        if v is None:
            return th.fresh(kind)
        return self.read_at(v, v.off(th) + idx(th), kind, th)

    def read_at(self, v: View, addr, kind: str, th: Th):
        """A read of a region that nothing writes is a function of its cell (the
        same for every thread); any other read is an unknown of this thread."""
        if v.key == ("local",) or v.key in self.written():
            return th.fresh(kind)
        key = (v.key, kind)
        if key not in self.memories:
            rng = {"bool": z3.BoolSort(), "float": F32}.get(kind, z3.BitVecSort(BV))
            self.memories[key] = z3.Function(f"mem_{len(self.memories)}",
                                             z3.BitVecSort(BV), rng)
        return self.memories[key](addr)

    def written(self) -> set:
        if self._written is None:
            self._written = {a.view.key for a in self.accesses if a.kind == "w"}
        return self._written

    # ------------------------------------------------------------ expressions

    def expr(self, e: A.Expr, ctx: Ctx):
        """(builder th -> term, kind); records the reads of arrays it makes."""
        match e:
            case A.IntLit(v):
                return (lambda th: _k(v & 0xFFFFFFFF)), "int"
            case A.FloatLit(v):
                return (lambda th: z3.FPVal(v, F32)), "float"
            case A.BoolLit(v):
                return (lambda th: z3.BoolVal(v)), "bool"
            case A.Var(name):
                b = ctx.env.get(name)
                if isinstance(b, Scalar) and b.value is not None:
                    return b.value, b.kind
                kind = b.kind if isinstance(b, Scalar) else "int"
                return (lambda th: th.fresh(kind)), kind
            case A.PartitionId():
                return (lambda th: th.fresh("int")), "int"
            case A.Index(arr, idx):
                i, _ = self.expr(idx, ctx)
                self.access("r", arr, i, None, ctx, "read")
                v = self.view_of(arr, ctx)
                kind = v.elem if v is not None else "int"
                return (lambda th: self.read_value(v, i, kind, th)), kind
            case A.UnOp(op, operand):
                f, kind = self.expr(operand, ctx)
                if op == "!":
                    return (lambda th: z3.Not(f(th))), "bool"
                if kind == "float":
                    return (lambda th: z3.fpNeg(f(th))), "float"
                return (lambda th: -f(th)), "int"
            case A.BinOp(op, left, right):
                return self.binop(op, left, right, ctx)
            case A.Fma(a, b, c):  # the extension (errata, "Extension: explicit fma")
                # Values only serve the same-value-writes exemption, which needs fma to
                # be a function, not its bits: an uninterpreted one is sound and spares
                # z3 bit-blasting an FMA circuit (2 s timeouts on a loaded machine).
                fs = [self.expr(x, ctx)[0] for x in (a, b, c)]
                return (lambda th: _FMA(*(f(th) for f in fs))), "float"
        raise AssertionError(e)

    def binop(self, op: str, left, right, ctx: Ctx):
        f, kind = self.expr(left, ctx)
        g, _ = self.expr(right, ctx)
        if op in ("&&", "||"):
            z = z3.And if op == "&&" else z3.Or
            return (lambda th: z(f(th), g(th))), "bool"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            table = _FCMP if kind == "float" else _CMP
            return (lambda th: table[op](f(th), g(th))), "bool"
        if kind == "float" and op in _FARITH:
            return (lambda th: _FARITH[op](RNE, f(th), g(th))), "float"
        if kind != "int":
            return (lambda th: th.fresh(kind)), kind
        return (lambda th: _ARITH[op](f(th), g(th))), "int"


_CMP = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
# C semantics on 32 bits: wrapping + - *, truncating / and % (bvsdiv, bvsrem).
# C's float comparisons: NaN is unordered and != everything (fpEQ, not SMT =).
_FCMP = {"==": z3.fpEQ, "!=": lambda a, b: z3.Not(z3.fpEQ(a, b)), "<": z3.fpLT,
         "<=": z3.fpLEQ, ">": z3.fpGT, ">=": z3.fpGEQ}
_FARITH = {"+": z3.fpAdd, "-": z3.fpSub, "*": z3.fpMul, "/": z3.fpDiv}
_FMA = z3.Function("fma32", F32, F32, F32, F32)  # some function: see A.Fma in expr
_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "/": lambda a, b: a / b, "%": lambda a, b: z3.SRem(a, b)}


# ------------------------------------------------------------------ deciding


def ordered(c: Collector, pos1: tuple, pos2: tuple):
    """(True, unit) when a barrier orders the two sites for threads of one `unit`."""
    for (u1, i), (u2, j) in zip(pos1, pos2, strict=False):
        if (u1, i) == (u2, j):
            continue
        if u1 != u2:
            return False, None
        info = c.seqs[u1]
        lo, hi = min(i, j), max(i, j)
        fwd = any(k in info.barriers for k in range(lo, hi))
        back = any(k in info.barriers for k in (*range(hi, info.n), *range(lo)))
        return (fwd and (back or not info.loop)), info.unit
    return False, None


def _eq_lists(xs, ys):
    return z3.And(*[x == y for x, y in zip(xs, ys, strict=True)]) if xs else z3.BoolVal(True)


def analyse(prog: A.Program, timeout_ms: int = 2000, max_races: int = 1,
            budget_s: float | None = None) -> RaceReport:
    """Decide race freedom of `prog` (fixed semantics). Stops after `max_races`; with
    `budget_s`, a program not decided in that time counts as racy (undecided)."""
    import time

    deadline = None if budget_s is None else time.monotonic() + budget_s
    c = Collector(prog)
    c.run()
    report = RaceReport(True)
    if c.incomplete:
        report.race_free = False
        report.races.append(Race("analysis", "incomplete", c.incomplete))
        return report
    if prog.machine.blocks * prog.machine.threads < 2:
        return report  # one thread: nothing to race with
    acc = c.accesses
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    for x in range(len(acc)):
        for y in range(x, len(acc)):
            a1, a2 = acc[x], acc[y]
            if "w" not in (a1.kind, a2.kind) or a1.view.key != a2.view.key:
                continue
            report.pairs += 1
            if deadline is not None and time.monotonic() > deadline:
                report.undecided += 1
                report.race_free = False
                report.races.append(Race(a1.what, a2.what,
                                         "undecided: analysis time budget exhausted"))
                return report
            witness = _conflict(solver, c, prog.machine, a1, a2, f"{x}_{y}")
            if witness is not None:
                report.undecided += witness.startswith("undecided")
                report.race_free = False
                report.races.append(Race(a1.what, a2.what, witness))
                if len(report.races) >= max_races:
                    return report
    return report


def _conflict(solver, c: Collector, machine, a1: Access, a2: Access, tag: str):
    """A witness that distinct threads make a1 and a2 on one cell, unordered and (two
    writes) with different values; None when z3 proves there is none."""
    N, T = machine.blocks * machine.threads, machine.threads
    th1, th2 = Th(f"{tag}a", T), Th(f"{tag}b", T)
    cons = [th1.t != th2.t, z3.ULT(th1.t, _k(N)), z3.ULT(th2.t, _k(N))]
    cons += [f(th1) for f in a1.path] + [f(th2) for f in a2.path]
    cons.append(_eq_lists(a1.view.unit(th1), a2.view.unit(th2)))  # one region instance
    addr1, addr2 = a1.addr(th1), a2.addr(th2)
    cons += [addr1 == addr2, z3.ULT(addr1, _k(a1.view.size))]
    is_ordered, unit = ordered(c, a1.pos, a2.pos)
    if is_ordered:  # the barrier orders them for threads of one unit only
        cons.append(z3.Not(_eq_lists(unit(th1), unit(th2))))
    if a1.kind == a2.kind == "w" and a1.value is not None and a2.value is not None:
        v1, v2 = a1.value(th1, addr1), a2.value(th2, addr2)
        if v1.sort() == v2.sort():
            cons.append(v1 != v2)  # SMT equality: the same bits, NaN included
    cons += th1.cons + th2.cons
    solver.push()
    try:
        solver.add(*cons)
        verdict = solver.check()
        if verdict == z3.unsat:
            return None
        if verdict == z3.unknown:
            return "undecided by z3 (counted as a race)"
        m = solver.model()
        return (f"threads t={m.eval(th1.t)} and t={m.eval(th2.t)}, cell "
                f"{a1.view.key[-1]}[{m.eval(addr1)}]")
    finally:
        solver.pop()
