"""The helpers that every rule of the Bundl thread judgment uses (Appendix A.3 of the
Prism paper, seed 004): the frame kinds of the evaluation context, stuck states, the
perspective and type premises, binding and renaming (rename(η, σ, Σ, x, y, π') of
S-Partition, S-Lower, S-Claim), Ψ's keys and labels ψ / φ. The state of one thread,
P(t, b) with its local memory and position, is `config.ThreadState`. The rules
themselves are in `small_step` (A.3.2) and `small_step_data` (A.3.3-A.3.6); both read
these, neither reads the other's internals.

Frames (`ThreadState.frames`), one class per kind (`config`): SeqFrame (S-Seq-First),
SplitFrame (S-Split-Left / -Right), GroupFrame, DestructFrame, ClaimFrame (S-Group,
S-Destruct-*, S-Claim's body; these four keep the π, p, unit the thread had before
they narrowed them), AsyncFrame (S-Async-Partition-Congr), ScopeFrame (a `let`'s
scope, fixed) and CallFrame (a function body, fixed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from gpusem.calculus.bundl.ast import ArrayType, AsyncType, Skip, Type
from gpusem.calculus.bundl.perspective import Perspective
from gpusem.calculus.errors import Stuck
from gpusem.interpreter.bundl.config import (
    Config,
    Labelled,
    ScopeFrame,
    SyncKey,
    Term,
    ThreadState,
)
from gpusem.interpreter.bundl.expr_eval import fail, lookup
from gpusem.interpreter.bundl.values import (
    Binding,
    Ptr,
    Value,
    show_value,
    type_of_value,
)

SKIP = Skip()

# The rule for one class of statement (the AXIOMS tables of `small_step` and
# `small_step_data`), applied to a thread whose focus is of that class; returns the
# rule's name. Each rule annotates the class it takes.
Axiom = Callable[[Config, ThreadState, Any], str]


def stuck(rule: str, node: object, th: ThreadState, message: str,
          cell: str | None = None) -> NoReturn:
    fail(Stuck, rule, node, th, message, cell)


def require_persp(th: ThreadState, node: object, want: Perspective, rule: str) -> None:
    if th.persp != want:
        stuck(rule, node, th, f"perspective mismatch: {rule} needs code at {want}, "
               f"code is at {th.persp}")


def require_leq(cfg: Config, th: ThreadState, node: object, a: Perspective,
                b: Perspective, rule: str, what: str) -> None:
    if not cfg.leq(a, b):
        stuck(rule, node, th, f"perspective mismatch: {what}: {a} is not <= {b}")


def check_value(th: ThreadState, node: object, rule: str, want: Type, v: Value,
                name: str) -> None:
    """Dynamic type check of a value (never fires for a well-typed program)."""
    got = type_of_value(v)
    ok = got is want if got is not None else isinstance(want, ArrayType | AsyncType)
    if not ok:
        stuck(rule, node, th, f"type mismatch: {name} expects "
               f"{getattr(want, 'value', want)}, got {show_value(v)}")


def bind(cfg: Config, th: ThreadState, name: str, binding: Binding, body: Term) -> None:
    """Extend η and continue with the binder's body; `fixed` scopes the binding."""
    if cfg.fixed and type(body) is not Skip:
        th.frames.append(ScopeFrame(name, th.env.get(name)))
    th.env[name] = binding
    th.focus = body


def rename_var(cfg: Config, th: ThreadState, node: object, x: str, y: str,
               persp: Perspective, rule: str, offset: int = 0, async_: bool = False,
               chunk: int | None = None, b: Binding | None = None) -> Binding:
    """rename(η, σ, Σ, x, y, π'): y ↦^π' the value of x (offset for S-Partition).
    `b`: x's binding, where the caller has just looked it up (η unchanged since)."""
    if b is None:
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
        th.frames.append(ScopeFrame(y, th.env.get(y)))
    th.env[y] = nb
    return b


def sync_key(cfg: Config, th: ThreadState, label: str) -> SyncKey:
    if not cfg.fixed:
        return (label, th.p)  # as printed: Ψ(ψ)(p)
    # Note: Ψ is keyed by the unit of π the thread is in and the barrier generation,
    # so blocks do not share counters and a barrier is reusable in a loop (errata "Ψ").
    gen = th.waits.get((label, th.unit), 0)
    return (label, th.unit, gen)


def label_of(cfg: Config, s: Labelled) -> str:
    """ψ / φ: the statement's label, or a fresh one per statement."""
    if s.label is not None:
        return s.label
    return cfg.fresh_label(s)
