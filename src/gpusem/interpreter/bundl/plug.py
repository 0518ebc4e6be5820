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
from typing import Any, assert_never, cast

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
from gpusem.interpreter.bundl.config import (
    AsyncFrame,
    CallFrame,
    ClaimBody,
    ClaimFrame,
    Config,
    DestructFrame,
    Frame,
    GroupFrame,
    ScopeFrame,
    SeqFrame,
    SplitFrame,
    Term,
    ThreadState,
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
    cuts = [(i, f) for i, f in enumerate(frames) if isinstance(f, CallFrame)]
    focus: Term = th.focus
    end = len(frames)
    for i, call in reversed(cuts):
        out.append((_plug(focus, frames[i + 1:end], True), i))
        focus, end = call.call, i  # the call statement, in the caller's term
    out.append((_plug(focus, frames[:end], True), -1))
    return out[::-1]


def _plug(focus: Term, frames: list[Frame], for_typing: bool) -> Stmt:
    render = _for_typing if for_typing else _for_display
    cur = render(focus)
    for f in reversed(frames):
        match f:
            case SeqFrame(stmts, i, shown):
                rest = [render(x) for x in stmts[i + 1:]]
                if shown is not None:  # S-Partition's body, index 1: s[(y + k)/y]
                    y, off = shown
                    if i == 1:
                        cur = subst(cur, y, off)
                    elif i == 0:
                        rest[0] = subst(rest[0], y, off)
                cur = Seq((cur, *rest))
            case SplitFrame(node, side):
                cur = dataclasses.replace(node, left=cur) if side == 0 else \
                    dataclasses.replace(node, right=cur)
            case GroupFrame(node):
                cur = Group(node.q, cur, node.span)
            case DestructFrame(node):
                cur = Destruct(cur, node.span)
            case AsyncFrame(node, label):
                cur = dataclasses.replace(node, label=label, body=cur)
            case ClaimFrame(c):
                cur = dataclasses.replace(c.claim, body=cur) if for_typing else \
                    Split(c.claim.at, c.n - c.claim.at, cur, Skip(), c.span)
            case ScopeFrame() | CallFrame():
                pass  # no syntax of their own
            case _:
                assert_never(f)
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
