"""The state of the Bundl machine L, S, Σ, P, Ψ, Φ (Appendix A.3.1 of the Prism paper,
seed 004): the shared part of a configuration (`Config`: σ per block, Σ, Ψ, Φ and the
per-program caches) and one entry P(t, b) of the thread pool with its local memory and
position (`ThreadState`). Pure state: the rules that change it are in `small_step`
(A.3.2) and `small_step_data` (A.3.3-A.3.6), the expressions in `expr_eval` (A.3.7),
the S-Program judgment in `machine`.

Conventions (paper -> Python): as in `machine` and `small_step`. A thread's term is a
stack of frames (one per congruence rule; the kinds are in `thread`) and a focus, a
statement or the runtime form `ClaimBody`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np

from gpusem.calculus.bundl.ast import (
    Alloc,
    ArrayType,
    AsyncMemcpy,
    AsyncPartition,
    Call,
    Claim,
    Destruct,
    Expr,
    FnDef,
    Free,
    GlobalDecl,
    Group,
    If,
    Iota,
    Lower,
    Memcpy,
    MemKind,
    Partition,
    Program,
    Seq,
    Skip,
    Split,
    Stmt,
    SyncDec,
    SyncInit,
    SyncWait,
    While,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    THREAD1,
    Level,
    MachineShape,
    Perspective,
    divide,
)
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import NO_SPAN, Span
from gpusem.interpreter.bundl.values import (
    Binding,
    GlobalMemory,
    Ptr,
    PyValue,
    Region,
    Value,
    convert,
    to_python,
    zero,
)
from gpusem.typing_rules.bundl.context import RuleSet, rule_set

T = TypeVar("T")

# Which unit of its perspective a thread is in (fixed Ψ keys): the path of split sides
# ("L" / "R"), claims ("C") and group indices that narrowed it from (Grid, 1).
Unit = tuple[int | str, ...]
# A key of Ψ: (ψ, p) as printed, (ψ, unit, barrier generation) under `fixed`.
SyncKey = tuple[str, int] | tuple[str, Unit, int]
# A dynamic instance of an alloc site: (id of the site, ("b", block) | ("u", unit)).
AllocSite = tuple[int, tuple[str, int | Unit]]
AllocKey = tuple[int, tuple[str, int | Unit], int]  # the site and its k-th execution
Labelled = Partition | Claim | Lower | AsyncPartition  # statements with a label ψ / φ


@dataclass(frozen=True, slots=True)
class ClaimBody:
    """Runtime form of S-Claim (fixed): the body runs for p < n' at (h, n'), the other
    threads skip it. Printed as `split(n', n - n') {s} {skip}` (see `plug`)."""

    claim: Claim
    n: int  # the code perspective (h, n) at the claim: static per program point
    span: Span = NO_SPAN


Term = Stmt | ClaimBody  # what a thread's focus and frames hold: runtime forms included


# ------------------------------------------------------------------------- frames
# A thread's term is an evaluation context, a stack of frames, one per congruence rule
# it descended through (the WebAssembly reference interpreter's typed contexts), and
# a focus. The four that narrow the code perspective keep the thread's π, p and unit
# from before they narrowed them (`persp`, `p`, `unit`), for their -Done rule.


@dataclass(frozen=True, slots=True)
class SeqFrame:
    """S-Seq-First at stmts[i]; `shown` = (y, k): S-Partition's body, printed
    s[(y + k)/y]."""

    stmts: tuple[Term, ...]
    i: int
    shown: tuple[str, int] | None = None

    def key(self) -> tuple[object, ...]:
        return (0, id(self.stmts), self.i, self.shown)


@dataclass(frozen=True, slots=True)
class SplitFrame:
    """S-Split-Left (side 0) / S-Split-Right (side 1)."""

    node: Split
    side: int
    persp: Perspective
    p: int
    unit: Unit

    def key(self) -> tuple[object, ...]:
        return (1, id(self.node), self.side, self.persp, self.p, self.unit)


@dataclass(frozen=True, slots=True)
class GroupFrame:
    """S-Group's body."""

    node: Group
    persp: Perspective
    p: int
    unit: Unit

    def key(self) -> tuple[object, ...]:
        return (2, id(self.node), self.persp, self.p, self.unit)


@dataclass(frozen=True, slots=True)
class DestructFrame:
    """S-Destruct-Grid / S-Destruct-Block's body."""

    node: Destruct
    persp: Perspective
    p: int
    unit: Unit

    def key(self) -> tuple[object, ...]:
        return (3, id(self.node), self.persp, self.p, self.unit)


@dataclass(frozen=True, slots=True)
class AsyncFrame:
    """S-Async-Partition-Congr: the body of the async_partition labelled φ."""

    node: AsyncPartition
    label: str

    def key(self) -> tuple[object, ...]:
        return (4, id(self.node), self.label)


@dataclass(frozen=True, slots=True)
class ClaimFrame:
    """S-Claim's body (the runtime form `ClaimBody`, for p < n')."""

    node: ClaimBody
    persp: Perspective
    p: int
    unit: Unit

    def key(self) -> tuple[object, ...]:
        return (5, id(self.node), self.persp, self.p, self.unit)


@dataclass(frozen=True, slots=True)
class ScopeFrame:
    """A `let`'s (or a renaming's) scope, fixed only: the binding it shadows."""

    name: str
    shadowed: Binding | None

    def key(self) -> tuple[object, ...]:
        old = self.shadowed
        return (6, self.name, None if old is None else (old.value, old.persp))


@dataclass(frozen=True, slots=True)
class CallFrame:
    """A function body, fixed only: the caller's η and the call statement."""

    fn: FnDef
    env: dict[str, Binding]
    call: Call

    def key(self) -> tuple[object, ...]:
        return (7, id(self.fn), _env_key(self.env), id(self.call))


Frame = (SeqFrame | SplitFrame | GroupFrame | DestructFrame | AsyncFrame | ClaimFrame
         | ScopeFrame | CallFrame)


class Config:
    """The shared part of a configuration: memories σ (per block) and Σ, Ψ, Φ, and the
    per-program caches (compiled expressions, runtime statement forms)."""

    def __init__(self, prog: Program, shape: MachineShape, rules: str):
        self.prog, self.shape = prog, shape
        self.rules: RuleSet = rule_set(rules)
        self.fixed = self.rules.name.startswith("fixed")
        self.regions: list[Region] = []
        self.globals: dict[str, Binding] = {}
        self.fns: dict[str, FnDef] = {f.name: f for f in prog.fns}
        self.psi: dict[SyncKey, int] = {}
        self.phi: dict[str, list[Memcpy]] = {}
        self.allocs: dict[AllocKey, int] = {}
        self.wakeups = 0
        # the rules applied so far, when a caller records them (interpreter/bundl/
        # coverage.py); None: not recorded
        self.seen: set[str] | None = None
        self.ecache: dict[int, tuple[Expr, Eval]] = {}
        self.reads_cache: dict[int, bool] = {}
        self._persps: dict[tuple[Level, int], Perspective] = {}
        self._leq: dict[tuple[int, int], bool] = {}
        # the runtime forms, by (kind, id of the source statement); the kind fixes
        # the value's type (see `_cached`'s callers)
        self._cache: dict[tuple[str, int], Any] = {}
        self._labels: dict[int, str] = {}
        for p in (GRID1, BLOCK1, THREAD1):
            self._persps[(p.level, p.n)] = p
        for g in prog.globals:
            self._global(g)

    # -- perspectives (interned so that the order can be cached by identity)
    def persp(self, level: Level, n: int) -> Perspective:
        key = (level, n)
        p = self._persps.get(key)
        if p is None:
            p = self._persps[key] = Perspective(level, n)
        return p

    def persp_of(self, p: Perspective) -> Perspective:
        return self.persp(p.level, p.n)

    def leq(self, a: Perspective, b: Perspective) -> bool:
        """The rule set's order, cached by identity for interned perspectives."""
        key = (id(a), id(b))
        r = self._leq.get(key)
        if r is None:
            r = self.rules.leq(a, b, self.shape)
            if (self._persps.get((a.level, a.n)) is a
                    and self._persps.get((b.level, b.n)) is b):
                self._leq[key] = r
        return r

    def lt(self, a: Perspective, b: Perspective) -> bool:
        return a != b and self.leq(a, b)

    def divide(self, a: Perspective, b: Perspective) -> int:
        return divide(a, b, self.shape)

    # -- memories
    def new_region(self, site: Alloc, space: MemKind, owner: int | None,
                   persp: Perspective) -> int:
        cells = [zero(site.elem)] * site.size
        self.regions.append(Region(cells, site.elem, space, owner, site.name, persp))
        return len(self.regions) - 1

    def _global(self, g: GlobalDecl) -> None:
        if g.name in self.globals:
            raise BadInput(f"{g.span}: duplicate global: {g.name}")
        if g.init is None:
            cells = [zero(g.elem)] * g.size
        elif isinstance(g.init, Iota):
            cells = [convert(g.elem, i) for i in range(g.size)]
        else:
            if len(g.init) != g.size:
                raise BadInput(f"{g.span}: {g.name} has {g.size} elements but "
                               f"{len(g.init)} initial values")
            cells = [convert(g.elem, lit.value) for lit in g.init]
        self.regions.append(Region(cells, g.elem, MemKind.GLOBAL, None, g.name, GRID1))
        ptr = Ptr(len(self.regions) - 1, 0, g.size, g.size)
        self.globals[g.name] = Binding(ptr, GRID1,
                                       ArrayType(g.elem, MemKind.GLOBAL))

    # -- runtime statement forms, built once per source statement
    def _cached(self, key: tuple[str, int], make: Callable[[], T]) -> T:
        hit: T | None = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = make()
        return hit

    def unrolled(self, w: While) -> If:
        # the cache looked up before `_cached`'s closure is built: one call a loop run
        hit: If | None = self._cache.get(("while", id(w)))
        if hit is not None:
            return hit
        return self._cached(("while", id(w)),
                            lambda: If(w.cond, Seq((w.body, w), w.span), Skip(w.span),
                                       w.span))

    def alloc_cont(self, a: Alloc, amount: int) -> Stmt:
        return self._cached(("alloc", id(a)),
                            lambda: Seq((a.body, Free(amount, a.span)), a.span))

    def sync_block(self, s: Partition | Claim | Lower, body: Term,
                   label: str) -> tuple[SyncInit, Term, SyncDec, SyncWait]:
        # as `unrolled`: one call a partition
        hit: tuple[SyncInit, Term, SyncDec, SyncWait] | None = self._cache.get(
            ("sync", id(s)))
        if hit is not None:
            return hit
        return self._cached(("sync", id(s)), lambda: (
            SyncInit(label, s.span), body, SyncDec(label, s.span),
            SyncWait(label, s.span)))

    def claim_body(self, c: Claim, n: int) -> ClaimBody:
        return self._cached(("claim", id(c)), lambda: ClaimBody(c, n, c.span))

    def memcpy_of(self, s: AsyncMemcpy) -> Memcpy:
        return self._cached(("memcpy", id(s)), lambda: Memcpy(s.dst, s.src, s.span))

    def fresh_label(self, s: Labelled) -> str:
        lab = self._labels.get(id(s))
        if lab is None:
            kind = type(s).__name__.lower()
            lab = self._labels[id(s)] = f"{kind}@{s.span.line}:{s.span.column}#" \
                                        f"{len(self._labels)}"
        return lab

    # -- snapshots
    def snapshot(self) -> ConfigSnapshot:
        return ([r.copy() for r in self.regions], dict(self.globals), dict(self.psi),
                {k: list(v) for k, v in self.phi.items()}, dict(self.allocs))

    def restore(self, snap: ConfigSnapshot) -> None:
        regions, glob, psi, phi, allocs = snap
        self.regions[:] = [r.copy() for r in regions]
        self.globals = dict(glob)
        self.psi = dict(psi)
        self.phi = {k: list(v) for k, v in phi.items()}
        self.allocs = dict(allocs)

    def key(self) -> tuple[object, ...]:
        return (tuple(tuple(r.cells) for r in self.regions),
                tuple(sorted((k, v.value) for k, v in self.globals.items())),
                tuple(sorted(self.psi.items(), key=repr)),
                tuple(sorted((k, tuple(map(id, v))) for k, v in self.phi.items())))

    def global_memory(self) -> GlobalMemory:
        out: GlobalMemory = {}
        for g in self.prog.globals:
            ptr = cast(Ptr, self.globals[g.name].value)  # a global array (`_global`)
            out[g.name] = _python_cells(self.regions[ptr.region].cells)
        return out


def _python_cells(cells: list[Value]) -> list[PyValue]:
    """`[to_python(v) for v in cells]`, a whole array at a time where its cells' types
    allow: to_python is the identity on ints and bools, and float32 -> float is what
    NumPy's tolist gives (a campaign's robustness sample spent ~60% of its time here,
    one call a cell over arrays of millions of cells, once a schedule)."""
    kinds = set(map(type, cells))
    if kinds <= {int, bool}:
        return list(cast(list[PyValue], cells))
    if kinds == {np.float32}:
        return cast(list[PyValue], np.array(cells, dtype=np.float32).tolist())
    return [to_python(v) for v in cells]


ConfigSnapshot = tuple[list[Region], dict[str, Binding], dict[SyncKey, int],
                       dict[str, list[Memcpy]], dict[AllocKey, int]]


class ThreadState:
    """One entry P(t, b) of the thread pool, with its local memory and position."""

    __slots__ = (
        "allocs",
        "b",
        "env",
        "focus",
        "frames",
        "m",
        "p",
        "persp",
        "phi",
        "t",
        "unit",
        "waits",
    )

    def __init__(self, t: int, b: int, main: Stmt):
        self.t, self.b = t, b
        self.frames: list[Frame] = []
        self.focus: Term = main
        self.persp: Perspective = GRID1  # S-Program starts every thread at (Grid, 1)
        self.p = 0
        self.unit: Unit = ()  # which unit of `persp` this thread is in (fixed Ψ keys)
        self.env: dict[str, Binding] = {}
        self.m = 0
        # completed waits per (ψ, unit): the barrier generation
        self.waits: dict[tuple[str, Unit], int] = {}
        self.phi: dict[str, list[Memcpy]] = {}  # Φ, per thread (fixed)
        # dynamic instance count per alloc site (fixed)
        self.allocs: dict[AllocSite, int] = {}

    def copy(self) -> ThreadState:
        c = ThreadState.__new__(ThreadState)
        c.t, c.b, c.frames, c.focus = self.t, self.b, list(self.frames), self.focus
        c.persp, c.p, c.unit, c.m = self.persp, self.p, self.unit, self.m
        c.env = dict(self.env)
        c.waits, c.allocs = dict(self.waits), dict(self.allocs)
        c.phi = {k: list(v) for k, v in self.phi.items()}
        return c

    @property
    def terminated(self) -> bool:
        return not self.frames and type(self.focus) is Skip

    def key(self) -> tuple[object, ...]:
        """A hashable summary of the whole thread state (exhaustive exploration)."""
        frames = tuple(f.key() for f in self.frames)
        return (id(self.focus), frames, self.persp, self.p, self.unit,
                _env_key(self.env), self.m, tuple(sorted(self.waits.items())),
                tuple(sorted((k, tuple(map(id, v))) for k, v in self.phi.items())),
                tuple(sorted(self.allocs.items())))


# E-rules compiled to closures (`expr_eval`): the value of an expression for a thread
# and a target perspective π'.
Eval = Callable[[ThreadState, Perspective], Value]


def _env_key(env: dict[str, Binding]) -> tuple[tuple[str, Value, Perspective], ...]:
    return tuple(sorted((k, v.value, v.persp) for k, v in env.items()))
