"""The state of one Bundl thread, P(t, b) with its local memory and position, and the
helpers that every rule of the thread judgment uses (Appendix A.3 of the Prism paper,
seed 004): the frame kinds of the evaluation context, stuck states, the perspective and
type premises, binding and renaming (rename(η, σ, Σ, x, y, π') of S-Partition, S-Lower,
S-Claim), Ψ's keys and labels ψ / φ. The rules themselves are in `small_step` (A.3.2)
and `small_step_data` (A.3.3-A.3.6); both read these, neither reads the other's
internals.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusem.calculus.bundl.ast import ArrayType, AsyncType, Claim, Skip, Stmt
from gpusem.calculus.bundl.perspective import GRID1, Perspective
from gpusem.calculus.errors import Stuck
from gpusem.calculus.span import NO_SPAN
from gpusem.interpreter.bundl.expr_eval import fail, lookup
from gpusem.interpreter.bundl.values import Binding, Ptr, show_value, type_of_value

SEQ, SPLIT, GROUP, DESTRUCT, ASYNC, CLAIM, SCOPE, CALL = range(8)
TRANSPARENT = (SCOPE, CALL)
SKIP = Skip()


@dataclass(frozen=True, slots=True)
class ClaimBody:
    """Runtime form of S-Claim (fixed): the body runs for p < n' at (h, n'), the other
    threads skip it. Printed as `split(n', n - n') {s} {skip}` (see `plug`)."""

    claim: Claim
    n: int  # the code perspective (h, n) at the claim: static per program point
    span: object = NO_SPAN


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
        self.frames: list[tuple] = []
        self.focus: Stmt = main
        self.persp: Perspective = GRID1  # S-Program starts every thread at (Grid, 1)
        self.p = 0
        self.unit: tuple = ()  # which unit of `persp` this thread is in (fixed Ψ keys)
        self.env: dict[str, Binding] = {}
        self.m = 0
        self.waits: dict = {}  # completed waits per (ψ, unit): the barrier generation
        self.phi: dict[str, list] = {}  # Φ, per thread (fixed)
        self.allocs: dict = {}  # dynamic instance count per alloc site (fixed)

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

    def key(self) -> tuple:
        """A hashable summary of the whole thread state (exhaustive exploration)."""
        frames = tuple(tuple(map(_key_part, f)) for f in self.frames)
        return (id(self.focus), frames, self.persp, self.p, self.unit,
                _env_key(self.env), self.m, tuple(sorted(self.waits.items())),
                tuple(sorted((k, tuple(map(id, v))) for k, v in self.phi.items())),
                tuple(sorted(self.allocs.items())))


def _key_part(x):
    if x is None or isinstance(x, (int, str, Perspective)):
        return x
    if isinstance(x, dict):
        return _env_key(x)
    if isinstance(x, tuple) and all(isinstance(e, (int, str)) for e in x):
        return x
    if isinstance(x, Binding):
        return (x.value, x.persp)
    return id(x)


def _env_key(env: dict) -> tuple:
    return tuple(sorted((k, v.value, v.persp) for k, v in env.items()))


def stuck(rule: str, node, th, message: str, cell=None):
    fail(Stuck, rule, node, th, message, cell)


def require_persp(th, node, want: Perspective, rule: str):
    if th.persp != want:
        stuck(rule, node, th, f"perspective mismatch: {rule} needs code at {want}, "
               f"code is at {th.persp}")


def require_leq(cfg, th, node, a, b, rule: str, what: str):
    if not cfg.leq(a, b):
        stuck(rule, node, th, f"perspective mismatch: {what}: {a} is not <= {b}")


def check_value(th, node, rule, want, v, name):
    """Dynamic type check of a value (never fires for a well-typed program)."""
    got = type_of_value(v)
    ok = got is want if got is not None else isinstance(want, ArrayType | AsyncType)
    if not ok:
        stuck(rule, node, th, f"type mismatch: {name} expects "
               f"{getattr(want, 'value', want)}, got {show_value(v)}")


def bind(cfg, th, name: str, binding: Binding, body: Stmt):
    """Extend η and continue with the binder's body; `fixed` scopes the binding."""
    if cfg.fixed and type(body) is not Skip:
        th.frames.append((SCOPE, name, th.env.get(name)))
    th.env[name] = binding
    th.focus = body


def rename_var(cfg, th, node, x: str, y: str, persp: Perspective, rule: str,
            offset: int = 0, async_=False, chunk: int | None = None):
    """rename(η, σ, Σ, x, y, π'): y ↦^π' the value of x (offset for S-Partition)."""
    b = lookup(cfg, th, x, node, rule)
    if type(b.value) is not Ptr:
        stuck(rule, node, th, f"type mismatch: {x} is not an array")
    ty = AsyncType(b.type) if async_ and isinstance(b.type, ArrayType) else b.type
    if chunk is not None:
        v = b.value.piece(offset // chunk if chunk else 0, chunk)
    else:
        v = b.value.offset(offset) if offset else b.value
    nb = Binding(v, persp, ty)
    if cfg.fixed:
        # Note: names are thread-local (errata "names are thread-local"); scoped.
        th.frames.append((SCOPE, y, th.env.get(y)))
    th.env[y] = nb
    return b


def sync_key(cfg, th, label):
    if not cfg.fixed:
        return (label, th.p)  # as printed: Ψ(ψ)(p)
    # Note: Ψ is keyed by the unit of π the thread is in and the barrier generation,
    # so blocks do not share counters and a barrier is reusable in a loop (errata "Ψ").
    gen = th.waits.get((label, th.unit), 0)
    return (label, th.unit, gen)


def label_of(cfg, s) -> str:
    """ψ / φ: the statement's label, or a fresh one per statement."""
    if s.label is not None:
        return s.label
    return cfg.fresh_label(s)
