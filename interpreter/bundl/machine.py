"""The Bundl machine judgment L, S, Σ, P, Ψ, Φ ⇝ L', S', Σ', P', Ψ', Φ' (S-Program).

Appendix A.3.1 of the Prism paper (seed 004) and Figure 15: the pool P of B × T threads,
each started at (Grid, 1) with p = 0; a scheduler picks which thread steps next (the
nondeterminism of S-Program). Schedulers: round-robin, seeded random, and exhaustive
exploration of all interleavings with state hashing.

Conventions (paper -> Python):
  P(t, b)              -> `Machine.threads()[t]` (t grid-wide: the "simplified" id)
  L(t)                 -> the thread's environment and its Local regions
  S(b), Σ              -> `Config.regions` with space Shared (owner b) / Global
  Ψ, Φ                 -> `Config.psi`, `Config.phi`
Outcomes: terminated (every P(t, b) = skip), stuck (a thread has no rule; names the
rule, thread (t, b, p), perspective, cell), deadlock (every live thread spins in
`wait`), budget (the step budget ran out).

Note: a thread spinning in S-Sync-Wait-Spin does not change the configuration, so the
schedulers do not count spins as steps and treat such a thread as not enabled; "every
live thread only spins" is a deadlock. See errata ("spinning is not a step").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from gpusem.calculus.bundl.ast import (
    Alloc,
    ArrayType,
    Free,
    GlobalDecl,
    If,
    Iota,
    Memcpy,
    MemKind,
    Program,
    Seq,
    Skip,
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
from gpusem.calculus.errors import BadInput, Trap
from gpusem.interpreter.bundl.plug import plug
from gpusem.interpreter.bundl.small_step import blocked, step_thread
from gpusem.interpreter.bundl.thread import ClaimBody, ThreadState
from gpusem.interpreter.bundl.values import (
    Binding,
    Ptr,
    Region,
    convert,
    to_python,
    zero,
)
from gpusem.typing_rules.bundl.context import rule_set


class Config:
    """The shared part of a configuration: memories σ (per block) and Σ, Ψ, Φ, and the
    per-program caches (compiled expressions, runtime statement forms)."""

    def __init__(self, prog: Program, shape: MachineShape, rules: str):
        self.prog, self.shape = prog, shape
        self.rules = rule_set(rules)
        self.fixed = self.rules.name.startswith("fixed")
        self.regions: list[Region] = []
        self.globals: dict[str, Binding] = {}
        self.fns = {f.name: f for f in prog.fns}
        self.psi: dict = {}
        self.phi: dict[str, list] = {}
        self.allocs: dict = {}
        self.wakeups = 0
        self.ecache: dict = {}
        self.reads_cache: dict = {}
        self._persps: dict = {}
        self._leq: dict = {}
        self._cache: dict = {}
        self._labels: dict = {}
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
    def new_region(self, site, space: MemKind, owner, persp: Perspective) -> int:
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
    def _cached(self, key, make):
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = make()
        return hit

    def unrolled(self, w: While) -> If:
        return self._cached(("while", id(w)),
                            lambda: If(w.cond, Seq((w.body, w), w.span), Skip(w.span),
                                       w.span))

    def alloc_cont(self, a: Alloc, amount: int) -> Stmt:
        return self._cached(("alloc", id(a)),
                            lambda: Seq((a.body, Free(amount, a.span)), a.span))

    def sync_block(self, s, body: Stmt, label: str) -> tuple:
        return self._cached(("sync", id(s)), lambda: (
            SyncInit(label, s.span), body, SyncDec(label, s.span),
            SyncWait(label, s.span)))

    def claim_body(self, c, n: int) -> ClaimBody:
        return self._cached(("claim", id(c)), lambda: ClaimBody(c, n, c.span))

    def memcpy_of(self, s) -> Memcpy:
        return self._cached(("memcpy", id(s)), lambda: Memcpy(s.dst, s.src, s.span))

    def fresh_label(self, s) -> str:
        lab = self._labels.get(id(s))
        if lab is None:
            kind = type(s).__name__.lower()
            lab = self._labels[id(s)] = f"{kind}@{s.span.line}:{s.span.column}#" \
                                        f"{len(self._labels)}"
        return lab

    # -- snapshots
    def snapshot(self):
        return ([r.copy() for r in self.regions], dict(self.globals), dict(self.psi),
                {k: list(v) for k, v in self.phi.items()}, dict(self.allocs))

    def restore(self, snap) -> None:
        regions, glob, psi, phi, allocs = snap
        self.regions[:] = [r.copy() for r in regions]
        self.globals = dict(glob)
        self.psi = dict(psi)
        self.phi = {k: list(v) for k, v in phi.items()}
        self.allocs = dict(allocs)

    def key(self) -> tuple:
        return (tuple(tuple(r.cells) for r in self.regions),
                tuple(sorted((k, v.value) for k, v in self.globals.items())),
                tuple(sorted(self.psi.items(), key=repr)),
                tuple(sorted((k, tuple(map(id, v))) for k, v in self.phi.items())))

    def global_memory(self) -> dict[str, list]:
        out = {}
        for g in self.prog.globals:
            ptr = self.globals[g.name].value
            reg = self.regions[ptr.region]
            out[g.name] = [to_python(v) for v in reg.cells]
        return out


@dataclass
class StepEvent:
    """One S-Program step: the rule applied to thread (t, b, p), the congruence chain
    around it (outermost first), the redex before and the subterm after."""

    rule: str
    chain: tuple[str, ...]
    thread: tuple[int, int, int]
    index: int
    persp: Perspective
    redex: object
    after: object

    @property
    def rules(self) -> tuple[str, ...]:
        return self.chain + (self.rule,)

    @property
    def span(self):
        """The redex's source span (before the step)."""
        return getattr(self.redex, "span", None)

    @property
    def span_after(self):
        """The span of the subterm the redex became (None for skip)."""
        return getattr(self.after, "span", None)


@dataclass
class Outcome:
    kind: str  # terminated | stuck | deadlock | budget
    globals: dict[str, list]
    steps: int
    rule: str = ""
    message: str = ""
    thread: tuple[int, int, int] | None = None  # (t, b, p) of the failing thread
    persp: Perspective | None = None  # its code perspective
    cell: str | None = None  # the memory cell involved, e.g. "σ[b=0] s[3]"
    error: Exception | None = None
    trap: bool = False
    final_memories: list = field(default_factory=list)  # exhaustive: distinct finals
    bad_schedule: list[int] | None = None  # exhaustive: thread indices to replay
    states: int = 0  # exhaustive: distinct states explored
    exprs: int = 0  # big-step: evaluated expressions (one per lane)

    @property
    def ok(self) -> bool:
        return self.kind == "terminated"


class Machine:
    """A configuration (L, S, Σ, P, Ψ, Φ) and its stepping API (for `run` and `step`).

    `check` (optional) is called as check(machine, index) after every step: the
    preservation hook (see bundl_preservation)."""

    def __init__(self, prog: Program, rules: str = "fixed", *,
                 blocks: int | None = None, threads: int | None = None, check=None):
        B = blocks if blocks is not None else prog.machine.blocks
        T = threads if threads is not None else prog.machine.threads
        if B <= 0 or T <= 0:
            raise BadInput(f"machine size out of range: blocks={B}, threads={T}")
        self.prog = prog
        self.shape = MachineShape(B, T)
        self.cfg = Config(prog, self.shape, rules)
        self._threads = [ThreadState(b * T + t, b, prog.main)
                         for b in range(B) for t in range(T)]
        self.steps = 0
        self.check = check

    # -- inspection
    def threads(self) -> list[ThreadState]:
        return self._threads

    def live(self) -> list[int]:
        return [i for i, th in enumerate(self._threads) if not th.terminated]

    def enabled_threads(self) -> list[int]:
        cfg = self.cfg
        return [i for i, th in enumerate(self._threads)
                if not th.terminated and not blocked(cfg, th)]

    def term(self, index: int) -> Stmt:
        """The paper's P(t, b): the thread's whole current statement."""
        return plug(self.cfg, self._threads[index])

    def globals(self) -> dict[str, list]:
        return self.cfg.global_memory()

    # -- stepping
    def step(self, index: int) -> StepEvent:
        th = self._threads[index]
        trace: list = []
        with np.errstate(all="ignore"):
            rule = step_thread(self.cfg, th, trace)
        if not rule.endswith("Spin"):
            self.steps += 1
        if self.check is not None:
            self.check(self, index)
        return StepEvent(rule, trace[0], (th.t, th.b, trace[3]), index, trace[2],
                         trace[1], th.focus)

    def snapshot(self):
        return ([th.copy() for th in self._threads], self.cfg.snapshot(), self.steps)

    def restore(self, snap) -> None:
        threads, cfg, steps = snap
        self._threads = [th.copy() for th in threads]
        self.cfg.restore(cfg)
        self.steps = steps

    def key(self) -> tuple:
        return (tuple(th.key() for th in self._threads), self.cfg.key())

    def outcome(self, kind: str, err: Exception | None = None, **kw) -> Outcome:
        out = Outcome(kind, self.globals(), self.steps, **kw)
        if err is not None:
            out.error = err
            out.rule = getattr(err, "rule", "")
            out.message = getattr(err, "message", str(err))
            out.thread = getattr(err, "thread", None)
            out.persp = getattr(err, "persp", None)
            out.cell = getattr(err, "cell", None)
            out.trap = isinstance(err, Trap)
        return out


def deadlock_error(message: str, th) -> Exception:
    from gpusem.calculus.errors import Deadlock
    err = Deadlock(message, rule="S-Sync-Wait-Spin",
                   span=getattr(th.focus, "span", None) or Skip().span)
    err.thread = (th.t, th.b, th.p)
    err.persp = th.persp
    err.cell = None
    return err
