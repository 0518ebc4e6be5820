"""The Bundl thread judgment η, σ, Σ, t, b, p, Ψ, Φ ⊢^π_m s ⇝ s' ⊣ η', σ', Σ', Ψ', Φ'.

Appendix A.3.2-A.3.6 of the Prism paper (seed 004) and Figure 15: one function per
rule, named after it. Here: the step function, the perspective-management rules
(A.3.2), variables and control flow; the data-perspective, memory, sync, async and call
rules are in `bundl/small_step_data`; expressions (A.3.7) in `bundl/expr_eval`.

Conventions (paper -> Python):
  η, σ, Σ               -> `th.env` (names) and `cfg.regions` (cells; see bundl/values)
  t, b, p               -> `th.t` (grid-wide id, as the paper's "simplified" t), `th.b`,
                           `th.p`
  π = (h, n)            -> `th.persp` (the code perspective at the redex)
  Ψ                     -> `cfg.psi`; Φ -> `cfg.phi` (paper) or `th.phi` (fixed)
  m                     -> `th.m` (memory in use, in bytes: typing's `type_size`)
  s (the thread's term) -> `th.frames` + `th.focus`: an evaluation context as a stack
                           of frames, and the subterm that holds the redex

How a step mirrors the rules. The paper rewrites the whole term s to s'. Here the
congruence rules (S-Seq-First, S-Split-Left/Right, S-Group, S-Destruct-Block/Grid,
S-Async-Partition-Congr) are frames: `descend` pushes one frame per congruence rule
on the way to the redex (checking that rule's premises: they narrow π and p), and the
axiom at the top rewrites `th.focus` in O(1). The "-Done" rules pop a frame. So a step
touches O(1) frames, and `plug(th)` rebuilds the paper's s' for printing, the debugger
and the preservation check. Two kinds of frame have no rule of their own: SCOPE (lexical
scope of a `let`, fixed only) and CALL (a function body's environment, fixed only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import Any

from gpusem.calculus.bundl.ast import (
    Assign,
    AsyncPartition,
    Decl,
    Destruct,
    Group,
    If,
    Seq,
    Skip,
    Split,
    SyncWait,
    While,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    THREAD1,
    Level,
    Perspective,
    align_to,
)
from gpusem.calculus.bundl.perspective import (
    destruct as persp_destruct,
)
from gpusem.calculus.errors import Stuck, Trap
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
    Unit,
)
from gpusem.interpreter.bundl.coverage import redex_rules
from gpusem.interpreter.bundl.expr_eval import compile_expr, lookup
from gpusem.interpreter.bundl.small_step_data import DATA_AXIOMS
from gpusem.interpreter.bundl.thread import (
    SKIP,
    Axiom,
    bind,
    check_value,
    label_of,
    rename_var,
    require_leq,
    require_persp,
    stuck,
    sync_key,
)
from gpusem.interpreter.bundl.values import Binding, show_value

# ------------------------------------------------------------------ the step function


def step_thread(cfg: Config, th: ThreadState,
                trace: list[Any] | None = None) -> str:
    """Apply one rule to thread `th`; return the rule's name.

    `trace`, when given, receives the context (its frames, outermost first: `chain`
    names their congruence rules) and the redex: [frames, redex, persp, p]. Frames
    are frozen, so the tuple keeps the context of this step; naming the rules is
    left to whoever shows them (a debugger `continue` shows few of its steps).
    Raises Stuck or Trap (with .thread, .persp, .cell).
    """
    # `descend`, inlined: this function runs once a step (a reference run of B.3 is
    # 2.8 million of them), and a call a step is a tenth of its time
    enter_of = _ENTER_OF
    while True:
        s = th.focus
        cls = type(s)
        enter = enter_of(cls)
        if enter is None or not enter(cfg, th, s):
            break
    if trace is not None:
        trace.extend((tuple(th.frames), s, th.persp, th.p))
    seen = cfg.seen
    if seen is not None:  # coverage (interpreter/bundl/coverage.py)
        seen.add("S-Program")
        note_chain(th.frames, seen)
    if cls is Skip:
        rule = _done(cfg, th)
    else:
        rule = AXIOMS[cls](cfg, th, s)
    if seen is not None:
        seen.add(rule)
        seen.update(redex_rules(s, rule))
    # `_normalise` only where it can pop (a skip under a SCOPE / CALL frame): most
    # steps leave a non-skip focus or a narrowing frame on top
    if type(th.focus) is Skip and th.frames and type(th.frames[-1]) in _TRANSPARENT:
        _normalise(cfg, th)
    return rule


def descend(cfg: Config, th: ThreadState) -> None:
    """Push the frames of the congruence rules leading to the redex (no step)."""
    while True:
        s = th.focus
        enter = ENTER.get(type(s))
        if enter is None or not enter(cfg, th, s):
            return


# The congruence rule of each kind of frame ("" for SCOPE / CALL: none); Split's and
# Destruct's depend on the frame (`_frame_rule`). A coverage run names the context of
# every step, and an SGEMM's is ~140 frames deep: a `match` per frame was 70% of the
# run (tests/fuzz/test_bundl_coverage.py), a dict lookup per frame is not.
_RULE_OF_FRAME: dict[type, str] = {
    SeqFrame: "S-Seq-First", GroupFrame: "S-Group",
    AsyncFrame: "S-Async-Partition-Congr", ClaimFrame: "S-Claim-Body",
    ScopeFrame: "", CallFrame: ""}


def _frame_rule(f: Frame) -> str:
    """The congruence rule of a frame whose kind alone does not say it."""
    if type(f) is SplitFrame:
        return "S-Split-Left" if f.side == 0 else "S-Split-Right"
    if type(f) is DestructFrame:
        return ("S-Destruct-Grid" if f.persp.level == Level.GRID
                else "S-Destruct-Block")
    raise AssertionError(f"not a frame: {f!r}")


def chain(frames: Sequence[Frame]) -> tuple[str, ...]:
    """The congruence rules of a context, outermost first (SCOPE / CALL are none)."""
    rule_of = _RULE_OF_FRAME.get
    names = []
    for f in frames:
        name = rule_of(type(f))
        if name is None:
            name = _frame_rule(f)
        if name:
            names.append(name)
    return tuple(names)


_SPLITS = frozenset({"S-Split-Left", "S-Split-Right"})
_DESTRUCTS = frozenset({"S-Destruct-Grid", "S-Destruct-Block"})
_SIDE, _LEVEL = attrgetter("side"), attrgetter("persp.level")


def _of_kind(frames: Sequence[Frame], kind: type) -> Iterator[Frame]:
    """The frames of one kind, picked without a Python call per frame."""
    return compress(frames, map(is_, map(type, frames), repeat(kind)))


def note_chain(frames: Sequence[Frame], seen: set[str]) -> None:
    """Add the rules of `chain(frames)` to `seen` (coverage: a set, no order): each
    kind of frame looked up once, the sides of Split frames and the levels of
    Destruct frames read only while `seen` lacks one of their rules."""
    kinds = set(map(type, frames))
    for kind in kinds:
        name = _RULE_OF_FRAME.get(kind)
        if name:
            seen.add(name)
        elif name is None and kind is not SplitFrame and kind is not DestructFrame:
            raise AssertionError(f"not a frame: {kind.__name__}")
    if SplitFrame in kinds and not _SPLITS <= seen:
        seen.update("S-Split-Left" if side == 0 else "S-Split-Right"
                    for side in set(map(_SIDE, _of_kind(frames, SplitFrame))))
    if DestructFrame in kinds and not _DESTRUCTS <= seen:
        seen.update("S-Destruct-Grid" if level == Level.GRID else "S-Destruct-Block"
                    for level in set(map(_LEVEL, _of_kind(frames, DestructFrame))))


def _normalise(cfg: Config, th: ThreadState) -> None:
    """Pop finished SCOPE / CALL frames: they are no rule, so popping is no step."""
    frames = th.frames
    while frames and type(th.focus) is Skip and type(frames[-1]) in _TRANSPARENT:
        f = frames.pop()
        if type(f) is ScopeFrame:  # leave a `let`'s scope: restore the shadowed binding
            if f.shadowed is None:
                th.env.pop(f.name, None)
            else:
                th.env[f.name] = f.shadowed
        else:  # CALL: return to the caller's environment
            assert type(f) is CallFrame  # _TRANSPARENT
            th.env = f.env


def _push(th: ThreadState, frame: Frame, focus: Term,
          persp: Perspective | None = None, p: int | None = None,
          unit: Unit | None = None) -> None:
    th.frames.append(frame)
    th.focus = focus
    if persp is not None:
        assert p is not None  # given with `persp`
        th.persp, th.p = persp, p
        if unit is not None:
            th.unit = unit


# ------------------------------------------------------------ congruence: entering


def _enter_seq(cfg: Config, th: ThreadState, s: Seq) -> bool:
    # S-Seq-First (its frame); S-Seq-Done fires when the head is skip
    if type(s.stmts[0]) is Skip:
        return False
    _push(th, SeqFrame(s.stmts, 0), s.stmts[0])
    return True


def _split_side(cfg: Config, th: ThreadState, s: Split) -> int | None:
    """0 (left), 1 (right) or None (S-Split-None), after the shared premises."""
    n = th.persp.n
    if not align_to(s.n1, s.n2, n):
        stuck("S-Split", s, th, f"perspective mismatch: split({s.n1}, {s.n2}) does "
               f"not align to {th.persp}")
    if th.p < s.n1:
        return 0
    if th.p < s.n1 + s.n2:
        return 1
    return None


def _enter_split(cfg: Config, th: ThreadState, s: Split) -> bool:
    side = _split_side(cfg, th, s)
    if side is None or type(s.right if side else s.left) is Skip:
        return False
    h = th.persp.level
    if side == 0:  # S-Split-Left
        _push(th, SplitFrame(s, 0, th.persp, th.p, th.unit), s.left,
              cfg.persp(h, s.n1), th.p, th.unit + ("L",))
    else:  # S-Split-Right
        _push(th, SplitFrame(s, 1, th.persp, th.p, th.unit), s.right,
              cfg.persp(h, s.n2), th.p - s.n1, th.unit + ("R",))
    return True


def _step_split(cfg: Config, th: ThreadState, s: Split) -> str:
    side = _split_side(cfg, th, s)
    th.focus = SKIP
    if side is None:
        return "S-Split-None"
    return "S-Split-Left-Done" if side == 0 else "S-Split-Right-Done"


def _enter_group(cfg: Config, th: ThreadState, s: Group) -> bool:
    # S-Group: (h, q·n) narrows to (h, n) with p mod n
    if type(s.body) is Skip:
        return False
    if s.q <= 0 or th.persp.n % s.q:
        stuck("S-Group", s, th, f"perspective mismatch: group {s.q} needs a code "
               f"perspective (h, {s.q}·n), code is at {th.persp}")
    n = th.persp.n // s.q
    _push(th, GroupFrame(s, th.persp, th.p, th.unit), s.body,
          cfg.persp(th.persp.level, n), th.p % n, th.unit + (th.p // n,))
    return True


def _step_group(cfg: Config, th: ThreadState, s: Group) -> str:
    th.focus = SKIP  # S-Group-Done (the body is skip)
    return "S-Group-Done"


def _enter_destruct(cfg: Config, th: ThreadState, s: Destruct) -> bool:
    if type(s.body) is Skip:
        return False
    if th.p != 0 or th.persp not in (BLOCK1, GRID1):
        stuck("S-Destruct-Block" if th.persp.level == Level.BLOCK else
               "S-Destruct-Grid", s, th, f"perspective mismatch: destruct needs "
               f"{BLOCK1} or {GRID1} with p = 0, code is at {th.persp} with p = {th.p}")
    inner = cfg.persp_of(persp_destruct(th.persp, cfg.shape))
    # S-Destruct-Block: p := t mod T; S-Destruct-Grid: p := b mod B
    p = th.t % cfg.shape.threads if th.persp == BLOCK1 else th.b % cfg.shape.blocks
    _push(th, DestructFrame(s, th.persp, th.p, th.unit), s.body, inner, p)
    return True


def _step_destruct(cfg: Config, th: ThreadState, s: Destruct) -> str:
    if th.p != 0:
        stuck("S-Destruct-Done", s, th, f"perspective mismatch: destruct needs p = 0, "
               f"got p = {th.p}")
    th.focus = SKIP
    return "S-Destruct-Done"


def _enter_async(cfg: Config, th: ThreadState, s: AsyncPartition) -> bool:
    # S-Async-Partition-Congr: the body steps with x renamed to y at (Thread, 1)
    if type(s.body) is Skip:
        return False
    require_persp(th, s, THREAD1, "S-Async-Partition-Congr")
    rename_var(cfg, th, s, s.source, s.target, THREAD1, "S-Async-Partition-Congr",
            async_=True)
    _push(th, AsyncFrame(s, label_of(cfg, s)), s.body)
    return True


def _step_async(cfg: Config, th: ThreadState, s: AsyncPartition) -> str:
    # async_partition_φ x into y in skip: Unwind if Φ(φ) ≠ ∅, else Done
    require_persp(th, s, THREAD1, "S-Async-Partition-Done")
    label = label_of(cfg, s)
    pending = (th.phi if cfg.fixed else cfg.phi).get(label)
    if pending:
        rename_var(cfg, th, s, s.source, s.target, THREAD1, "S-Async-Partition-Unwind",
                async_=True)
        _push(th, AsyncFrame(s, label), pending.pop(0))
        return "S-Async-Partition-Unwind"
    th.focus = SKIP
    return "S-Async-Partition-Done"


def _enter_claim_body(cfg: Config, th: ThreadState, s: ClaimBody) -> bool:
    n1 = s.claim.at
    if th.p >= n1 or type(s.claim.body) is Skip:
        return False
    _push(th, ClaimFrame(s, th.persp, th.p, th.unit), s.claim.body,
          cfg.persp(th.persp.level, n1), th.p, th.unit + ("C",))
    return True


def _step_claim_body(cfg: Config, th: ThreadState, s: ClaimBody) -> str:
    th.focus = SKIP
    return "S-Claim-Skip" if th.p >= s.claim.at else "S-Claim-Done"


# ----------------------------------------------------------------- the -Done rules


def _done(cfg: Config, th: ThreadState) -> str:
    """The redex is `skip` directly under the top frame: that frame's -Done rule."""
    if not th.frames:
        raise Stuck("stuck: the thread has terminated", rule="S-Program")
    f = th.frames[-1]
    if isinstance(f, SeqFrame):  # S-Seq-Done: skip; s2 ⇝ s2
        stmts, i = f.stmts, f.i + 1
        if i == len(stmts) - 1:
            th.frames.pop()
        else:
            th.frames[-1] = SeqFrame(stmts, i, f.shown)
        th.focus = stmts[i]
        return "S-Seq-Done"
    if isinstance(f, AsyncFrame):
        return _async_unwind(cfg, th, f)
    th.frames.pop()
    # SCOPE / CALL frames are popped by _normalise: a narrowing frame is left
    assert not isinstance(f, ScopeFrame | CallFrame)
    th.persp, th.p, th.unit = f.persp, f.p, f.unit
    if isinstance(f, SplitFrame):
        return "S-Split-Left-Done" if f.side == 0 else "S-Split-Right-Done"
    if isinstance(f, GroupFrame):
        return "S-Group-Done"
    if isinstance(f, DestructFrame):
        return "S-Destruct-Done"
    return "S-Claim-Done"  # ClaimFrame


_TRANSPARENT = (ScopeFrame, CallFrame)  # no rule of their own


def _async_unwind(cfg: Config, th: ThreadState, f: AsyncFrame) -> str:
    label = f.label
    phi = th.phi if cfg.fixed else cfg.phi
    pending = phi.get(label)
    if pending:  # S-Async-Partition-Unwind: run one deferred statement
        # Note: Φ(φ) is a set in the paper and the rule picks any element; here a FIFO
        # list (two equal memcpys are two copies). See errata ("Φ").
        th.focus = pending.pop(0)
        return "S-Async-Partition-Unwind"
    th.frames.pop()  # S-Async-Partition-Done
    return "S-Async-Partition-Done"


# ----------------------------------------------------------------------- axioms


def s_decl(cfg: Config, th: ThreadState, s: Decl) -> str:
    # S-Decl: e ⇓ v at target π', π' ≤ π; x ↦^π' v in η
    tgt = cfg.persp_of(s.persp)
    require_leq(cfg, th, s, tgt, th.persp, "S-Decl", f"declaring {s.name}")
    v = compile_expr(cfg, s.init)(th, tgt)
    check_value(th, s, "S-Decl", s.type, v, s.name)
    bind(cfg, th, s.name, Binding(v, tgt, s.type), s.body)
    return "S-Decl"


def s_assn(cfg: Config, th: ThreadState, s: Assign) -> str:
    # S-Assn: x ∈^π' η,σ,Σ; π' ≤ π (write down); e ⇓ v at π'
    b = lookup(cfg, th, s.name, s, "S-Assn")
    require_leq(cfg, th, s, b.persp, th.persp, "S-Assn", f"writing {s.name}")
    v = compile_expr(cfg, s.value)(th, b.persp)
    check_value(th, s, "S-Assn", b.type, v, s.name)
    if s.name in th.env:
        th.env[s.name] = Binding(v, b.persp, b.type)
    else:
        cfg.globals[s.name] = Binding(v, b.persp, b.type)
    th.focus = SKIP
    return "S-Assn"


def s_if(cfg: Config, th: ThreadState, s: If) -> str:
    v = compile_expr(cfg, s.cond)(th, th.persp)
    if v is True:
        th.focus = s.then
        return "S-If-True"
    if v is False:
        th.focus = s.orelse
        return "S-If-False"
    stuck("S-If", s, th, f"type mismatch: condition is {show_value(v)}, not bool")


def s_while(cfg: Config, th: ThreadState, s: While) -> str:
    # S-While: while e do s ⇝ if e then (s; while e do s) else skip
    th.focus = cfg.unrolled(s)
    return "S-While"


def s_skip_seq(cfg: Config, th: ThreadState, s: Seq) -> str:
    # a Seq whose head is skip: S-Seq-Done
    rest = s.stmts[1:]
    th.focus = rest[0] if len(rest) == 1 else Seq(rest, s.span)
    return "S-Seq-Done"


def blocked(cfg: Config, th: ThreadState) -> bool:
    """Whether the thread can only spin (S-Sync-Wait-Spin) right now."""
    try:
        descend(cfg, th)
    except (Stuck, Trap):
        return False
    s = th.focus
    return type(s) is SyncWait and cfg.psi.get(sync_key(cfg, th, s.label), 0) != 0


ENTER: dict[type, Callable[[Config, ThreadState, Any], bool]] = {
    Seq: _enter_seq, Split: _enter_split, Group: _enter_group,
    Destruct: _enter_destruct, AsyncPartition: _enter_async,
    ClaimBody: _enter_claim_body,
}

AXIOMS: dict[type, Axiom] = {
    Seq: s_skip_seq, Split: _step_split, Group: _step_group, Destruct: _step_destruct,
    AsyncPartition: _step_async, ClaimBody: _step_claim_body,
    Decl: s_decl, Assign: s_assn, If: s_if, While: s_while,
}

AXIOMS.update(DATA_AXIOMS)
_ENTER_OF = ENTER.get  # bound once: `step_thread` looks a congruence rule up a step
