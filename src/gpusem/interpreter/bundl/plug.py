"""Plugging an evaluation context: the paper's term P(t, b) from a thread's frames.

The small-step interpreter keeps each thread's term as a stack of frames (one per
congruence rule) and a focus (see bundl/small_step). `plug` rebuilds the statement s'
that the rules of Appendix A.3 would have produced, for printing, for the debugger and
for the preservation check (Lemma A.8: Γ' ⊢^π s').

S-Partition's substitution s[(y + k)/y] is applied here, on demand: the interpreter
binds y to the offset pointer instead (the same value at every occurrence of y).
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

from gpusem.calculus.bundl.ast import (
    AsyncPartition,
    BinOp,
    Decl,
    Destruct,
    Group,
    IntLit,
    Seq,
    Skip,
    Split,
    Stmt,
    Var,
)
from gpusem.interpreter.bundl.config import ClaimBody, Config, Term, ThreadState
from gpusem.interpreter.bundl.thread import (
    ASYNC,
    CALL,
    CLAIM,
    DESTRUCT,
    GROUP,
    SCOPE,
    SEQ,
    SPLIT,
)


def plug(cfg: Config, th: ThreadState, for_typing: bool = False) -> Stmt:
    """The thread's whole current statement (runtime forms included).

    `for_typing`: show the fixed S-Claim's runtime body as the claim it came from (the
    typing rules have no form for "the first n' units run s"; T-Claim types exactly
    that body at (h, n'))."""
    return _plug(th.focus, th.frames, for_typing)


def plug_calls(cfg: Config, th: ThreadState) -> list[tuple[Stmt, int]]:
    """The thread's term for typing, cut at the function bodies it is running (fixed):
    the caller's term with the call statement where the body runs, then each running
    body, innermost last: [(term, index of its CALL frame, or -1 for main)]. A body is
    typed on its own, with its function's context (V-Function; Lemma A.8's case
    T-Function-Call: `call s with (x_i ↦ v_i)`), not inside the caller's scope, where a
    partition may hide a global the body uses."""
    out: list[tuple[Stmt, int]] = []
    frames = th.frames
    cuts = [i for i, f in enumerate(frames) if f[0] == CALL]
    focus: Term = th.focus
    end = len(frames)
    for i in reversed(cuts):
        out.append((_plug(focus, frames[i + 1:end], True), i))
        focus, end = frames[i][3], i  # the call statement, in the caller's term
    out.append((_plug(focus, frames[:end], True), -1))
    return out[::-1]


def _plug(focus: Term, frames: list[Any], for_typing: bool) -> Stmt:
    render = _for_typing if for_typing else _for_display
    cur = render(focus)
    for f in reversed(frames):
        kind = f[0]
        if kind == SEQ:
            stmts, i = f[1], f[2]
            rest = [render(x) for x in stmts[i + 1:]]
            if len(f) > 3:  # S-Partition's body, index 1: s[(y + k)/y]
                y, off = f[3]
                if i == 1:
                    cur = subst(cur, y, off)
                elif i == 0:
                    rest[0] = subst(rest[0], y, off)
            cur = Seq((cur, *rest))
        elif kind == SPLIT:
            node = f[1]
            cur = dataclasses.replace(node, left=cur) if f[2] == 0 else \
                dataclasses.replace(node, right=cur)
        elif kind == GROUP:
            cur = Group(f[1].q, cur, f[1].span)
        elif kind == DESTRUCT:
            cur = Destruct(cur, f[1].span)
        elif kind == ASYNC:
            cur = dataclasses.replace(f[1], label=f[2], body=cur)
        elif kind == CLAIM:
            c = f[1]
            cur = dataclasses.replace(c.claim, body=cur) if for_typing else \
                Split(c.claim.at, c.n - c.claim.at, cur, Skip(), c.span)
        else:
            assert kind in (SCOPE, CALL)
    return cur


def _for_display(s: Term) -> Stmt:
    """A runtime form of this interpreter as the AST the printer knows."""
    if isinstance(s, ClaimBody):
        return Split(s.claim.at, s.n - s.claim.at, s.claim.body, Skip(), s.span)
    return s


def _for_typing(s: Term) -> Stmt:
    return s.claim if isinstance(s, ClaimBody) else s


# id(node) -> (node, the variable names it mentions): runtime terms share most of their
# nodes with the previous step's, so `subst` skips whole subtrees without y in O(1)
# (the preservation check plugs every thread's term after every step). The node is kept
# with its entry so that an id is never reused while cached.
MENTIONS: dict[int, tuple[Any, frozenset[str]]] = {}


def mentioned(s: Any) -> frozenset[str]:
    """The names of the variables (`Var`) anywhere inside `s`."""
    hit = MENTIONS.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    if isinstance(s, Var):
        names = frozenset((s.name,))
    elif isinstance(s, tuple):
        names = frozenset().union(*(mentioned(x) for x in s))
    elif dataclasses.is_dataclass(s) and not isinstance(s, type):
        names = frozenset().union(*(mentioned(getattr(s, f.name))
                                    for f in dataclasses.fields(s)))
    else:
        return frozenset()
    if len(MENTIONS) > 20_000:
        MENTIONS.clear()
    MENTIONS[id(s)] = (s, names)
    return names


def subst(s: Any, y: str, off: int) -> Any:
    """s[(y + off)/y] on every expression inside `s` (stops where y is rebound)."""
    if isinstance(s, Var):
        return BinOp("+", s, IntLit(off)) if s.name == y else s
    if y not in mentioned(s):
        return s
    if isinstance(s, Decl) and s.name == y:
        return dataclasses.replace(s, init=subst(s.init, y, off))
    if isinstance(s, AsyncPartition | Seq) or dataclasses.is_dataclass(s):
        changes = {}
        for fld in dataclasses.fields(s):
            v = getattr(s, fld.name)
            if isinstance(v, tuple):
                nv = tuple(subst(x, y, off) for x in v)
            elif dataclasses.is_dataclass(v) and not isinstance(v, type):
                nv = subst(v, y, off)
            else:
                continue
            if nv is not v:
                changes[fld.name] = nv
        # (is_dataclass would also accept a class: `s` is a node, never one)
        return dataclasses.replace(cast(Any, s), **changes) if changes else s
    return s
