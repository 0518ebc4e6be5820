"""The access collector of the Bundl race analysis (`race.py`): one walk
of a program that records, symbolically in z3 terms, every access a thread makes to
Shared or Global memory, with the path condition that reaches it, the region instance
(unit) it touches, and its position among the barriers of each statement sequence.

It implements the symbolic side of the analysis described in `race.py`: the thread and
perspective ids of the fixed small-step rules (S-Destruct-Grid / -Block, S-Group,
S-Split-Left / -Right, S-Claim), views of arrays (S-Partition fixed, S-Lower,
S-Claim, async_partition), 32-bit C arithmetic and float32 values for indices and
stored values. `race.py` then decides, pair by pair, whether two distinct threads can
make conflicting unordered accesses. Conventions (paper -> Python): π -> `Ctx.persp`,
p -> `Ctx.p` (a builder th -> term), (t, b) -> `Th.t`, `Th.b`; a builder is a
function of one symbolic thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import z3
from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    Level,
    MachineShape,
    Perspective,
    level_ratio,
)
from gpusem.calculus.bundl.printer import print_expr as _show
from gpusem.calculus.bundl.walk import child_exprs, child_stmts
from gpusem.typing_rules.bundl.race_context import f32, fma32, rne
from gpusem.typing_rules.bundl.race_fresh import (
    Counter,
    fresh_per_iteration,
    iteration,
    per_iteration_site,
)
from gpusem.typing_rules.bundl.race_initial import initial, unwritten_initial, zero
from gpusem.typing_rules.bundl.race_order import (
    Path,
    SeqInfo,
    counted,
    flatten,
    guard_holds,
    precedes,
    seq_info,
    static_trips,
)

BV = 32
# f32(), rne(), fma32(): made in the analysis' own z3 context (race_context), not at
# import; float32 arithmetic rounds to nearest even, like numpy.float32 ops

Term = Any  # a z3 expression (z3 ships no type information)
Builder = Callable[["Th"], Term]  # a term of one symbolic thread
UnitBuilder = Callable[["Th"], list[Term]]  # the unit / region instance of a thread
ValueBuilder = Callable[["Th", Term], Term]  # the value a thread stores at an address
CellTest = Callable[["Th", Term], Term]  # whether a thread's access touches a cell


class Th:
    """One symbolic thread: its grid-wide id and the unknowns it draws."""

    def __init__(self, name: str, threads: int):
        self.name = name
        self.t = z3.BitVec(f"t_{name}", BV)
        self.b = z3.UDiv(self.t, threads)
        self.tid = z3.URem(self.t, threads)
        self.count = 0
        self.cons: list[Term] = []
        self.memo: dict[int, Term] = {}  # one term per key for this thread (`once`)

    def once(self, key: int, make: Callable[[], Term]) -> Term:
        """The term `make` gives, made once for this thread and `key`."""
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    def fresh(self, kind: str) -> Term:
        self.count += 1
        label = f"u_{self.name}_{self.count}"
        if kind == "float":
            return z3.FP(label, f32())
        return z3.Bool(label) if kind == "bool" else z3.BitVec(label, BV)


def bv(v: int) -> Term:
    """A 32-bit constant."""
    return z3.BitVecVal(v, BV)


@dataclass(frozen=True)
class View:
    """An array name's value: a window of a region."""

    key: tuple[object, ...]  # static region identity: ("g", name) | ("a", site) |
    # ("local", site)
    unit: UnitBuilder  # th -> list of terms: which dynamic instance of the region
    off: Builder  # th -> term
    extent: int
    size: int  # the region's length (bounds keep the array's end, errata S-Partition)
    elem: str = "int"  # int | float | bool
    persp: Perspective = GRID1  # the array name's perspective (the target of a store)


@dataclass(frozen=True)
class Scalar:
    kind: str  # int | float | bool
    value: Builder | None  # th -> term, or None: unknown (fresh per use)
    persp: Perspective = GRID1  # the variable's perspective (the target of `x = e`)
    # Where the variable lives at the perspective of the code that declared it: that
    # code's unit, whose threads hold one value of it (Sec 3.4.1; see `uniform`)
    unit: UnitBuilder | None = None


@dataclass(frozen=True)
class Access:
    kind: str  # "r" | "w"
    view: View
    addr: Builder  # th -> term (absolute cell index in the region)
    value: ValueBuilder | None  # (th, addr) -> term | None (writes only)
    path: tuple[Builder, ...]  # builders th -> Bool
    pos: tuple[tuple[int, int], ...]  # ((seq uid, item index), ...)
    what: str
    covers: CellTest  # (th, cell) -> Bool: whether the access touches that cell
    # every thread whose path holds makes it, once, or once in every iteration of the
    # counted loops around it (not under an `if`, in a loop that may not run, async)
    certain: bool = False
    guard_at: int = -1  # Ctx.guard_at: below it, every thread of the path makes it


@dataclass(frozen=True)
class Ctx:
    persp: Perspective
    p: Builder
    unit: UnitBuilder
    path: tuple[Builder, ...]
    pos: tuple[tuple[int, int], ...]
    env: dict[str, View | Scalar]
    depth: int = 0
    looped: bool = False  # inside a while (cond or body): a site runs many times
    # inside an if branch, an async body or a while that may not run its body: not
    # every thread of the path runs it (a counted loop's body is run by every one)
    guarded: bool = False
    guard_at: int = -1  # the depth of pos where the innermost such guard begins
    counters: tuple[Counter, ...] = ()  # the counted loops around (race_fresh)
    uncounted: bool = False  # inside a loop that is not counted, or a while's test


def _assigned(s: A.Stmt, out: set[str]) -> set[str]:
    if isinstance(s, A.Assign):
        out.add(s.name)
    for c in child_stmts(s):
        _assigned(c, out)
    return out


class Collector:
    """Walks a program once, recording every access to Shared/Global memory."""

    def __init__(self, prog: A.Program) -> None:
        self.prog = prog
        self.T = prog.machine.threads
        self.B = prog.machine.blocks
        self.shape = MachineShape(self.B, self.T)
        self.fns = {f.name: f for f in prog.fns}
        self.assigned = _assigned(prog.main, set())
        for f in prog.fns:
            _assigned(f.body, self.assigned)
        self.accesses: list[Access] = []
        self.seqs: dict[int, SeqInfo] = {}
        self.sites = 0
        self.memories: dict[tuple[tuple[object, ...], str], Term] = {}
        self.uniforms: dict[tuple[object, ...], Term] = {}  # see `uniform`
        # allocated regions that only ever hold zeros (`settle_zero_regions`)
        self.zero_regions: set[tuple[object, ...]] = set()
        # globals whose read cells keep their initial contents (`settle_stable_globals`)
        self.stable_regions: set[tuple[object, ...]] = set()
        # regions whose writes store one value per cell (race_settle: Single-Valued)
        self.single_regions: set[tuple[object, ...]] = set()
        self.local_written: set[tuple[object, ...]] = set()  # Local sites written
        self.local_first: dict[tuple[object, ...], int] = {}  # walk index of 1st write
        self.local_writes: list[Access] = []  # never raced on: for their values only
        self.local_alloc: dict[tuple[object, ...], Path] = {}  # where each was made
        self.local_zero: set[tuple[object, ...]] = set()  # race_settle: Local-Zero
        self.incomplete = ""  # why the walk may have missed accesses, if it may have
        self._written: set[tuple[object, ...]] | None = None  # computed once the walk is over

    def release(self) -> None:
        """Forget the walk (once its analysis is over). Its accesses' builders are
        closures over this collector: a cycle that holds the analysis' z3 terms, and
        through them its context (~16 MB of C heap), until the garbage collector next
        runs. The next analysis then made its context in fresh memory (~4,000 page
        faults, ~5-10 ms: 7 of the 40 contexts of a campaign's first 300 programs,
        issue 31.3); released, the context is freed as the analysis ends."""
        self.__dict__.clear()

    def run(self) -> None:
        env: dict[str, View | Scalar] = {
            g.name: View(("g", g.name), lambda th: [], lambda th: bv(0), g.size, g.size,
                         g.elem.value) for g in self.prog.globals}
        ctx = Ctx(GRID1, lambda th: bv(0), lambda th: [], (), (), env)
        self.block(self.prog.main, ctx)

    # ------------------------------------------------------------- statements

    def block(self, s: A.Stmt, ctx: Ctx, crossing: bool = False, loop: bool = False,
              narrower: bool = False, counter: tuple[int, int, int] | None = None
              ) -> None:
        """One statement sequence (`race_order.SeqInfo`): `crossing` when it is the
        body of a partition / claim / lower, `loop` when it is a while body, `narrower`
        when fewer threads run it than the enclosing unit (group, split, claim)."""
        items = flatten(s)
        uid = len(self.seqs)
        parent = ctx.pos[-1] if ctx.pos else None
        self.seqs[uid] = seq_info(items, ctx.unit, self.fns, parent, crossing, loop,
                                  narrower, counter)
        env = dict(ctx.env)
        for k, (tag, x) in enumerate(items):
            c = replace(ctx, pos=ctx.pos + ((uid, k),), env=env)
            if tag == "header":
                self.header(x, c, env)
            elif isinstance(x, A.While) and static_trips(items, k) == 0:
                continue  # a counted loop that never runs its body
            else:
                self.stmt(x, c, counted(items, k) if isinstance(x, A.While) else None)

    def header(self, s: A.Stmt, ctx: Ctx, env: dict[str, View | Scalar]) -> None:
        match s:
            case A.Decl(name, ty, persp, init):  # S-Decl: e at ⊢^π_π'
                val, _ = self.expr(init, ctx, persp)
                known = name not in self.assigned
                own = ctx.unit if persp == ctx.persp else None
                env[name] = Scalar(ty.value, val if known else None, persp, own)
            case A.Alloc(name, elem, size, mem):  # S-Alloc-*
                self.sites += 1
                key: tuple[object, ...]
                unit: UnitBuilder
                persp = ctx.persp if s.persp is None else s.persp  # -Local-At
                match mem:
                    case A.MemKind.LOCAL:  # per thread: never raced on
                        key, unit = ("local", self.sites), (lambda th: [])
                        self.local_alloc[key] = ctx.pos
                    case A.MemKind.SHARED:
                        key, unit, persp = ("a", self.sites), (lambda th: [th.b]), BLOCK1
                    case _:  # Global: once per unit of the code perspective
                        key, unit = ("a", self.sites), ctx.unit
                if mem != A.MemKind.LOCAL:  # Fresh-Region-Per-Iteration
                    unit = fresh_per_iteration(unit, ctx.counters, ctx.guarded,
                                               ctx.guard_at)
                env[name] = View(key, unit, lambda th: bv(0), size, size, elem.value,
                                 persp)

    def stmt(self, s: A.Stmt, ctx: Ctx,
             bounds: tuple[str, int, int] | None = None) -> None:
        """One statement; `bounds`: a counted while's (i, lo, hi) (`counted`)."""
        h, n = ctx.persp.level, ctx.persp.n
        p = ctx.p
        match s:
            case A.Assign(name, value):  # S-Assn: e at ⊢^π_π' (π' the variable's)
                var = ctx.env.get(name)
                self.expr(value, ctx, var.persp if isinstance(var, Scalar) else None)
            case A.ArrAssign(arr, idx, value):  # S-Arr-Assn: e1, e2 at ⊢^π_π, e3 at π'
                view = self.view_of(arr, ctx)
                i, _ = self.expr(idx, ctx)
                v, _ = self.expr(value, ctx, view.persp if view else None)
                self.access("w", arr, view, i, lambda th, _addr: v(th), ctx, "store")
            case A.If(cond, then, orelse):  # both branches may run
                f, _ = self.expr(cond, ctx)
                known = _constant(cond, f, self.T)  # but not a branch that never does
                # Branch-Path, Exact-Branch (errata "Copies and stores by several
                # threads"): a branch's path holds its condition where that reads no
                # array; a branch always taken, or one whose path is the same term at
                # every look, is not guarded: every thread of its path runs it
                taken = known is None and not _reads(cond)
                exact = taken and _same_term(f, self.T)
                branch = ctx if known is not None or exact else replace(
                    ctx, guarded=True, guard_at=len(ctx.pos))
                if known is not False:
                    self.block(then, replace(branch, path=branch.path + (
                        lambda th: f(th),)) if taken else branch)
                if known is not True:
                    self.block(orelse, replace(branch, path=branch.path + (
                        lambda th: z3.Not(f(th)),)) if taken else branch)
            case A.While(cond, body):
                looping = replace(ctx, looped=True, guarded=True,
                                  guard_at=len(ctx.pos), uncounted=True)
                self.expr(cond, looping)  # tested more than once
                if bounds is None:
                    self.block(body, looping, loop=True)
                    return
                # a counted loop: lo <= i < hi in its body (the increment last), and
                # a body run exactly once is straight-line code for its sites
                # (its body runs in every iteration: its sites are not guarded, so a
                # store in it is certain once per iteration, errata "Loop iterations
                # and copies" (7b));
                # a body run once is no loop at all for the barriers (race_order)
                name, lo, hi = bounds
                var = ctx.env.get(name)
                persp = var.persp if isinstance(var, Scalar) else ctx.persp
                inner = ctx if hi - lo == 1 else replace(ctx, looped=True)
                # one iteration per thread and access: every use of i in it is one term
                self.sites += 1
                uid = self.sites
                self.block(body, replace(inner, env=inner.env | {name: Scalar(
                    "int", lambda th: iteration(th, uid, lo, hi), persp)},
                    counters=inner.counters + (((uid, lo, hi), len(ctx.pos)),)),
                    loop=hi - lo != 1, counter=(uid, lo, hi))
            case A.Split(n1, n2, left, right):  # S-Split-Left / S-Split-Right
                self.block(left, replace(ctx, persp=Perspective(h, n1), path=ctx.path + (
                    lambda th: z3.ULT(p(th), bv(n1)),)), narrower=True)
                self.block(right, replace(
                    ctx, persp=Perspective(h, n2), p=lambda th: p(th) - bv(n1),
                    path=ctx.path + (lambda th: z3.And(z3.UGE(p(th), bv(n1)),
                                                       z3.ULT(p(th), bv(n1 + n2))),)),
                    narrower=True)
            case A.Group(q, body) if q >= 1 and n % q == 0:  # S-Group
                m, unit = n // q, ctx.unit
                self.block(body, replace(
                    ctx, persp=Perspective(h, m), p=lambda th: z3.URem(p(th), bv(m)),
                    unit=lambda th: unit(th) + [z3.UDiv(p(th), bv(m))]), narrower=q > 1)
            case A.Destruct(body) if ctx.persp in (GRID1, BLOCK1):
                unit = ctx.unit
                if ctx.persp == GRID1:  # S-Destruct-Grid: p := b
                    self.block(body, replace(ctx, persp=Perspective(Level.BLOCK, self.B),
                                             p=lambda th: th.b))
                else:  # S-Destruct-Block: p := t mod T, one unit per block
                    self.block(body, replace(
                        ctx, persp=Perspective(Level.THREAD, self.T),
                        p=lambda th: th.tid, unit=lambda th: unit(th) + [th.b]))
            case A.Partition(_, x, y, c, body, _, e) if (
                    e is not None and isinstance(ctx.env.get(x), View)):
                # S-Partition-Offset (our extension): the piece starts at x + e, e read
                # at the piece's perspective; extent 0, so a partition nested in it
                # overlaps its pieces (sound, not precise)
                src = ctx.env[x]
                assert isinstance(src, View)  # the guard
                at = Perspective(h, max(n // max(c, 1), 1))
                shift, _ = self.expr(e, replace(ctx, persp=at))
                base = src.off
                view = replace(src, off=lambda th: base(th) + shift(th), extent=0,
                               persp=at)
                self.block(body, replace(ctx, env=ctx.env | {y: view}), crossing=True)
            case A.Partition(_, x, y, c, body) if isinstance(ctx.env.get(x), View):
                whole = ctx.env[x]
                assert isinstance(whole, View)  # the guard
                m = max(n // max(c, 1), 1)
                chunk = whole.extent // max(c, 1)
                off = whole.off
                piece = replace(whole, off=lambda th: off(th) + z3.UDiv(p(th), bv(m)) * chunk,
                                extent=chunk, persp=Perspective(h, m))
                self.block(body, replace(ctx, env=ctx.env | {y: piece}), crossing=True)
            case A.Claim(_, x, y, at, body) if isinstance(ctx.env.get(x), View):
                claimed = ctx.env[x]  # S-Claim (fixed)
                assert isinstance(claimed, View)  # the guard
                sub = Perspective(h, max(at, 1))
                self.block(body, replace(
                    ctx, persp=sub, env=ctx.env | {y: replace(claimed, persp=sub)},
                    path=ctx.path + (lambda th: z3.ULT(p(th), bv(at)),)), crossing=True,
                    narrower=at < n)
            case A.Lower(_, x, y, body) if isinstance(ctx.env.get(x), View):
                lowered = ctx.env[x]  # S-Lower: y at ↓π
                assert isinstance(lowered, View)  # the guard
                down = Perspective(Level.BLOCK, self.B) if ctx.persp == GRID1 else \
                    Perspective(Level.THREAD, self.T)
                self.block(body, replace(
                    ctx, env=ctx.env | {y: replace(lowered, persp=down)}), crossing=True)
            case A.AsyncPartition(_, x, y, body) if x in ctx.env:
                # deferred (A.3.4): its accesses need not land in program order
                self.block(body, replace(ctx, env=ctx.env | {y: ctx.env[x]},
                                         guarded=True, guard_at=len(ctx.pos)))
            case A.Memcpy(dst, src):
                self.range_access("r", src, ctx, dst)
                self.range_access("w", dst, ctx, src)
            case A.AsyncMemcpy(dst, src):  # lands later than program order says
                self.range_access("r", src, replace(ctx, guarded=True, guard_at=len(ctx.pos)), dst)
                self.range_access("w", dst, replace(ctx, guarded=True, guard_at=len(ctx.pos)), src)
            case A.Call(fn, args) if fn in self.fns and ctx.depth < 8:
                self.call(self.fns[fn], args, ctx)
            case _:
                # An ill-typed shape or a call nested too deep: accesses could be
                # missed, so nothing is proved (soundness over precision).
                if child_stmts(s) or isinstance(s, A.Call):
                    self.incomplete = f"{type(s).__name__} not analysed"
                for child in child_stmts(s):
                    self.block(child, ctx)

    def call(self, f: A.FnDef, args: tuple[A.Expr, ...], ctx: Ctx) -> None:
        env: dict[str, View | Scalar] = {g.name: ctx.env[g.name] for g in self.prog.globals
               if isinstance(ctx.env.get(g.name), View)}
        for param, arg in zip(f.params, args, strict=False):
            if isinstance(param.type, A.ArrayType):
                view = self.view_of(arg, ctx)
                if view is not None:
                    env[param.name] = view
            else:  # S-Function-Call: e_i at ⊢^π_π, the caller's perspective
                val, _ = self.expr(arg, ctx)
                known = param.name not in self.assigned
                env[param.name] = Scalar(param.type.value, val if known else None,
                                         param.persp)
        self.block(f.body, replace(ctx, env=env, depth=ctx.depth + 1))

    # ------------------------------------------------------------- accesses

    def view_of(self, arr: A.Expr, ctx: Ctx, tgt: Perspective | None = None
                ) -> View | None:
        """The view an array operand denotes; a pointer offset's operand is evaluated
        (its reads recorded) at ⊢^π_tgt, as E-Bop evaluates it."""
        match arr:
            case A.Var(name):
                found = ctx.env.get(name)
                return found if isinstance(found, View) else None
            case A.BinOp("+", base, offset):  # a pointer offset (runtime form)
                v = self.view_of(base, ctx, tgt)
                o, _ = self.expr(offset, ctx, tgt)
                if v is None:
                    return None
                off = v.off
                return replace(v, off=lambda th: off(th) + o(th))
        return None

    def access(self, kind: str, arr: A.Expr, v: View | None, idx: Builder,
               value: ValueBuilder | None, ctx: Ctx, what: str) -> None:
        if v is None:
            self.incomplete = f"unknown array {_show(arr)}"
        if v is None:
            return
        off = v.off

        def addr(th: Th) -> Term:
            return off(th) + idx(th)

        made = Access(kind, v, addr, value, ctx.path, ctx.pos, f"{what} {_show(arr)}",
                      lambda th, cell: addr(th) == cell, _certain(ctx), ctx.guard_at)
        if not self.local(v, kind):
            self.accesses.append(made)
        elif kind == "w":
            self.local_writes.append(made)

    def range_access(self, kind: str, name: str, ctx: Ctx, other: str) -> None:
        """memcpy(x, y) (S-Memcpy, fixed): the first min(len x, len y) cells from each
        view's start (a view's length runs to its region's end, errata S-Partition);
        a write stores the source cell at the same distance from the source's start.
        `other` is the copy's other array."""
        v = ctx.env.get(name)
        if not isinstance(v, View):
            self.incomplete = f"unknown array {name}"
        if not isinstance(v, View):
            return
        off, size = v.off, v.size
        o = ctx.env.get(other)
        peer = o if isinstance(o, View) else None

        def covers(th: Th, u: Term) -> Term:
            inside = [z3.UGE(u, off(th)), z3.ULT(u, bv(size))]
            if peer is not None:  # within the other view's length too
                inside.append(z3.ULT(u - off(th), bv(peer.size) - peer.off(th)))
            return z3.And(*inside)

        def addr(th: Th) -> Term:
            u = th.fresh("int")
            th.cons.append(covers(th, u))
            return u

        value: ValueBuilder | None = None
        if kind == "w" and peer is not None:
            site, pos = self.read_site(ctx), ctx.pos

            def copied(th: Th, a: Term, s: View = peer) -> Term:
                return self.read_at(s, s.off(th) + (a - off(th)), s.elem, th, site,
                                    pos)
            value = copied

        made = Access(kind, v, addr, value, ctx.path, ctx.pos,
                      f"memcpy {'into' if kind == 'w' else 'from'} {name}", covers,
                      _certain(ctx), ctx.guard_at)
        if not self.local(v, kind):
            self.accesses.append(made)
        elif kind == "w":
            self.local_writes.append(made)

    def read_value(self, v: View | None, idx: Builder, kind: str, th: Th,
                   site: Site | None = None, pos: Path | None = None) -> Term:
        if v is None:
            return th.fresh(kind)
        return self.read_at(v, v.off(th) + idx(th), kind, th, site, pos)

    def local(self, v: View, kind: str) -> bool:
        """Whether `v` is Local memory (per thread: no access races); a write to it is
        remembered (`read_at`)."""
        if v.key[0] != "local":
            return False
        if kind == "w":
            self.local_written.add(v.key)
            self.sites += 1  # walk order: reads before it still see zeros
            self.local_first.setdefault(v.key, self.sites)
        return True

    def read_at(self, v: View, addr: Term, kind: str, th: Th,
                site: Site | None = None, pos: Path | None = None) -> Term:
        """A read of a region that nothing writes is a function of its cell (the
        same for every thread; a global's initial contents where race_initial
        knows them: Unwritten-Initial), of a Local array nothing writes zero
        (S-Alloc-Local allocates zeros, and a thread's own writes are the only ones);
        a read of a written region at a `site` run at most once per thread (or per
        iteration of counted loops) is one unknown per (code unit, region instance,
        cell) (see `uniform`); any other read is an unknown of this thread."""
        if v.key[0] == "local":
            if v.key in self.local_zero:
                return zero(kind)
            if v.key in self.local_written and not (
                    site is not None and site.once  # a site in a loop: not before
                    and self.local_first[v.key] > site.uid):
                return self.local_last(v, addr, kind, th, pos)
            # S-Alloc-Local allocates zeros, and only the thread's own writes land: a
            # read the walk meets before any write (straight-line: not in a loop; an
            # `if` walks both branches) reads zeros
            return zero(kind)
        if v.key in self.stable_regions:
            return self.initial(v.key, addr, kind)
        if v.key in self.zero_regions or (v.key[0] == "a" and
                                          v.key not in self.written()):
            return zero(kind)  # S-Alloc-* allocate zeros, and nothing else lands
        if v.key in self.written():
            if site is None:
                value = th.fresh(kind)
            else:
                args = site.unit(th) + v.unit(th) + [addr]
                value = self.uniform((site.uid, kind, len(args)), kind, args)
            return self.own_write(v, addr, th, pos, value)
        if unwritten_initial(self.prog, v.key):  # Unwritten-Initial (errata 8g)
            return self.initial(v.key, addr, kind)
        key = (v.key, kind)
        if key not in self.memories:
            rng = {"bool": z3.BoolSort(), "float": f32()}.get(kind, z3.BitVecSort(BV))
            self.memories[key] = z3.Function(f"mem_{len(self.memories)}",
                                             z3.BitVecSort(BV), rng)
        return self.memories[key](addr)

    def local_last(self, v: View, addr: Term, kind: str, th: Th, pos: Path | None
                   ) -> Term:
        """Local-Last-Write (errata "Loop iterations and copies"): a Local array is
        the thread's own, so a read returns the last of the thread's own writes to
        the cell before it in program order, or the zeros S-Alloc-Local made. Where
        a loop inside the array's scope holds the read or one of those writes (an
        earlier iteration may have written last), an unknown of the thread."""
        start = self.local_alloc.get(v.key)
        if pos is None or start is None or self.loops_below(pos, start):
            return th.fresh(kind)
        before = sorted((w for w in self.local_writes
                         if w.view.key == v.key and precedes(w.pos, pos)),
                        key=lambda w: w.pos)
        value = zero(kind)
        for w in before:
            if self.loops_below(w.pos, start):
                return th.fresh(kind)
            made = z3.And(*[f(th) for f in w.path], w.covers(th, addr))
            sure = guard_holds(w.guard_at, w.pos, pos)
            mine = w.value(th, addr) if sure and w.value is not None else None
            value = z3.If(made, mine if mine is not None and mine.sort() == value.sort()
                          else th.fresh(kind), value)
        return value

    def loops_below(self, pos: Path, start: Path) -> bool:
        """Whether a loop body lies on `pos` below the header at `start` (the pos of
        an alloc: its scope is the later items of its sequence)."""
        return any(self.seqs[uid].loop for uid, _ in pos[len(start):])

    def own_write(self, v: View, addr: Term, th: Th, pos: Path | None,
                  otherwise: Term) -> Term:
        """Single-Valued (race_settle): the value a read of cell `addr` at `pos`
        returns when the reading thread itself certainly wrote that cell earlier in
        program order, the region being single-valued (the last write to land stored
        the one value the cell ever receives); `otherwise` where it did not."""
        if pos is None or v.key not in self.single_regions:
            return otherwise
        for w in self.accesses:
            if w.kind != "w" or w.view.key != v.key or not w.certain or \
                    w.value is None or not precedes(w.pos, pos):
                continue
            mine = w.value(th, addr)
            if mine.sort() != otherwise.sort():
                continue
            made = [f(th) for f in w.path] + [w.covers(th, addr)] + [
                x == y for x, y in zip(w.view.unit(th), v.unit(th), strict=False)]
            # a fact about the value, not a replacement: a uniform read (see
            # `uniform`) stays one term for every thread of its unit
            th.cons.append(z3.Implies(z3.And(*made), otherwise == mine))
        return otherwise

    def read_site(self, ctx: Ctx) -> Site | None:
        """A read site's identity for `read_at`, where it runs at most once per
        thread (not in a loop), or once per iteration of the counted loops around it
        (Counted-Loop-Read, race_fresh), else None."""
        if ctx.looped and ctx.uncounted:
            return None
        self.sites += 1
        if not ctx.looped:
            return Site(self.sites, ctx.unit)
        return Site(self.sites, per_iteration_site(ctx.unit, ctx.counters), False)

    def uniform(self, key: tuple[object, ...], kind: str, args: list[Term]) -> Term:
        """One unknown shared by every thread that gives the same `args`: a value the
        typing rules (Sec 3.4.1: read up, write down) make the same in every thread of
        a unit of the perspective that computes it, given that the program has no
        race; see errata ("uniform stores are one write").

        Note: sound because the analysis proves race freedom by induction over an
        execution: up to the first read that returns two threads different values at
        one site, every such value is indeed shared; and two threads read different
        values at one site (run once per thread) only if a write lands between the
        reads, a conflicting pair that `race.py` checks with the shared values still
        valid. A site in a loop runs once per iteration: under an uncounted loop it
        keeps per-thread unknowns; under counted loops only, its key carries the
        thread's iteration of each (Counted-Loop-Read, race_fresh)."""
        if key not in self.uniforms:
            rng = {"bool": z3.BoolSort(), "float": f32()}.get(kind, z3.BitVecSort(BV))
            name = f"uni_{len(self.uniforms)}"
            self.uniforms[key] = z3.Function(
                name, *([z3.BitVecSort(BV)] * len(args)), rng) if args else \
                z3.Const(name, rng)
        f = self.uniforms[key]
        return f(*args) if args else f

    def initial(self, key: tuple[object, ...], addr: Term, kind: str) -> Term:
        """Cell `addr` of region `key` as it starts (race_initial)."""
        return initial(self.prog, key, addr, kind)

    def written(self) -> set[tuple[object, ...]]:
        if self._written is None:
            self._written = {a.view.key for a in self.accesses if a.kind == "w"}
        return self._written

    # ------------------------------------------------------------ expressions

    def expr(self, e: A.Expr, ctx: Ctx, tgt: Perspective | None = None
             ) -> tuple[Builder, str]:
        """(builder th -> term, kind) of η, σ, Σ ⊢^π_π' e with π = ctx.persp and π' =
        `tgt` (None: π itself); records the reads of arrays it makes."""
        match e:
            case A.IntLit(v):
                return (lambda th: bv(v & 0xFFFFFFFF)), "int"
            case A.FloatLit(v):
                return (lambda th: z3.FPVal(v, f32())), "float"
            case A.BoolLit(v):
                return (lambda th: z3.BoolVal(v)), "bool"
            case A.Var(name):
                b = ctx.env.get(name)
                if isinstance(b, Scalar) and b.value is not None:
                    return b.value, b.kind
                kind = b.kind if isinstance(b, Scalar) else "int"
                if isinstance(b, Scalar) and b.unit is not None and not ctx.looped:
                    # one value per unit of its declaring code (T-Decl, T-Assn: only
                    # code at its perspective writes it, with values read up)
                    self.sites += 1
                    uid, unit = self.sites, b.unit
                    return (lambda th: self.uniform(("var", uid), kind,
                                                    unit(th))), kind
                return (lambda th: th.fresh(kind)), kind
            case A.PartitionId():
                return self.partition_id(ctx, tgt), "int"
            case A.Index(arr, idx):  # E-Arr-Access: both operands at ⊢^π_π'
                view = self.view_of(arr, ctx, tgt)
                i, _ = self.expr(idx, ctx, tgt)
                self.access("r", arr, view, i, None, ctx, "read")
                kind = view.elem if view is not None else "int"
                site, pos = self.read_site(ctx), ctx.pos
                return (lambda th: self.read_value(view, i, kind, th, site, pos)), kind
            case A.UnOp(op, operand):
                f, kind = self.expr(operand, ctx, tgt)
                if op == "!":
                    return (lambda th: z3.Not(f(th))), "bool"
                if kind == "float":
                    return (lambda th: z3.fpNeg(f(th))), "float"
                return (lambda th: -f(th)), "int"
            case A.BinOp(op, left, right):
                return self.binop(op, left, right, ctx, tgt)
            case A.Fma(a, b, c):  # the extension (errata, "Extension: explicit fma")
                # Values only serve the same-value-writes exemption, which needs fma to
                # be a function, not its bits: an uninterpreted one is sound and spares
                # z3 bit-blasting an FMA circuit (2 s timeouts on a loaded machine).
                fs = [self.expr(x, ctx, tgt)[0] for x in (a, b, c)]
                return (lambda th: fma32()(*(f(th) for f in fs))), "float"
        raise AssertionError(e)

    def partition_id(self, ctx: Ctx, tgt: Perspective | None) -> Builder:
        """E-Partition-Id (fixed, errata): the index of the target unit holding the
        thread inside the code perspective, (p·(h/h') + r) div n', with r the thread's
        position inside one h-unit at level h'. Unknown where the typing rules would
        not let it evaluate (a target broader than the code)."""
        code, p = ctx.persp, ctx.p
        tgt = tgt or code
        if tgt.level > code.level:
            return lambda th: th.fresh("int")
        ratio = level_ratio(code.level, tgt.level, self.shape)
        T, n = self.T, tgt.n

        def r(th: Th) -> Term:
            if tgt.level == code.level:
                return bv(0)
            if tgt.level == Level.THREAD:
                return th.tid if code.level == Level.BLOCK else th.b * bv(T) + th.tid
            return th.b  # Grid -> Block

        return lambda th: z3.UDiv(p(th) * bv(ratio) + r(th), bv(n))

    def binop(self, op: str, left: A.Expr, right: A.Expr, ctx: Ctx,
              tgt: Perspective | None = None) -> tuple[Builder, str]:
        f, kind = self.expr(left, ctx, tgt)
        g, _ = self.expr(right, ctx, tgt)
        if op in ("&&", "||"):
            z = z3.And if op == "&&" else z3.Or
            return (lambda th: z(f(th), g(th))), "bool"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            table = _FCMP if kind == "float" else _CMP
            return (lambda th: table[op](f(th), g(th))), "bool"
        if kind == "float" and op in _FARITH:
            return (lambda th: _FARITH[op](rne(), f(th), g(th))), "float"
        if kind != "int":
            return (lambda th: th.fresh(kind)), kind
        return (lambda th: _ARITH[op](f(th), g(th))), "int"


@dataclass(frozen=True)
class Site:
    """A read made at most once per thread: its identity and the unit of the code
    that makes it (`Collector.read_at`)."""

    uid: int
    unit: UnitBuilder
    once: bool = True  # run at most once per thread (False: once per iteration)


def _same_term(f: Builder, threads: int) -> bool:
    """Whether a thread's term of `f` is the same at every look: made of no unknown
    drawn fresh for the thread (`Th.fresh`), only of exact values and unknowns shared
    by a unit (`Collector.uniform`) or kept per thread (`Th.once`)."""
    th = Th("look", threads)
    return bool(f(th).eq(f(th)))


def _reads(e: A.Expr) -> bool:
    return isinstance(e, A.Index) or any(_reads(c) for c in child_exprs(e))


def _constant(e: A.Expr, f: Builder, threads: int) -> bool | None:
    """The value of a condition made of literals and operators only (the generator's
    `if !true`), else None: a branch it never takes is never walked."""
    if not _closed(e):
        return None
    value = z3.simplify(f(Th("const", threads)))
    return True if z3.is_true(value) else False if z3.is_false(value) else None


def _closed(e: A.Expr) -> bool:
    if isinstance(e, A.Var | A.Index | A.PartitionId):
        return False
    return all(_closed(c) for c in child_exprs(e))


def _certain(ctx: Ctx) -> bool:
    return not ctx.guarded  # a counted loop's body runs in every iteration


Op2 = Callable[[Term, Term], Term]
_CMP: dict[str, Op2] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
# C semantics on 32 bits: wrapping + - *, truncating / and % (bvsdiv, bvsrem).
# C's float comparisons: NaN is unordered and != everything (fpEQ, not SMT =).
_FCMP: dict[str, Op2] = {
    "==": z3.fpEQ, "!=": lambda a, b: z3.Not(z3.fpEQ(a, b)), "<": z3.fpLT,
    "<=": z3.fpLEQ, ">": z3.fpGT, ">=": z3.fpGEQ}
_FARITH = {"+": z3.fpAdd, "-": z3.fpSub, "*": z3.fpMul, "/": z3.fpDiv}


_ARITH: dict[str, Op2] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "%": lambda a, b: z3.SRem(a, b)}

