"""The Bundl thread judgment η, σ, Σ, t, b, p, Ψ, Φ ⊢^π_m s ⇝ s' ⊣_m' η', σ', Σ', Ψ', Φ'.

Appendix A.3.2-A.3.6 of the Prism paper (seed 004) and Figure 15: one function per
rule, named after it. Expressions (A.3.7) are in `bundl_expr_eval`.

Conventions (paper -> Python):
  η, σ, Σ               -> `th.env` (names) and `cfg.regions` (cells; see bundl_values)
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

from dataclasses import dataclass

from gpusem.calculus.bundl.ast import (
    Alloc, ArrAssign, ArrayType, AsyncMemcpy, AsyncPartition, AsyncType, BinOp, Call,
    Claim, Decl, Destruct, Free, Group, If, IntLit, Lower, MemKind, Memcpy, Partition,
    Seq, Skip, Split, Stmt, SyncDec, SyncInit, SyncWait, Var, While, Assign,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1, GRID1, THREAD1, Level, Perspective, align_to, destruct as persp_destruct,
    size as persp_size,
)
from gpusem.calculus.errors import Stuck, Trap
from gpusem.calculus.span import NO_SPAN

from .bundl_expr_eval import compile_expr, compile_ptr, fail, lookup
from .bundl_values import Binding, Ptr, Region, show_value, type_of_value, zero

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

    __slots__ = ("t", "b", "frames", "focus", "persp", "p", "unit", "env", "m",
                 "waits", "phi", "allocs")

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
        c.persp, c.p, c.unit, c.env, c.m = self.persp, self.p, self.unit, dict(self.env), self.m
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


def _stuck(rule: str, node, th, message: str, cell=None):
    fail(Stuck, rule, node, th, message, cell)


# ------------------------------------------------------------------ the step function


def step_thread(cfg, th: ThreadState, trace: list | None = None) -> str:
    """Apply one rule to thread `th`; return the rule's name.

    `trace`, when given, receives the congruence chain (outermost first) and the redex:
    [chain, redex, persp, p]. Raises Stuck or Trap (with .thread, .persp, .cell).
    """
    descend(cfg, th)
    s = th.focus
    if trace is not None:
        trace.extend((chain(th.frames), s, th.persp, th.p))
    cls = type(s)
    if cls is Skip:
        rule = _done(cfg, th)
    else:
        rule = AXIOMS[cls](cfg, th, s)
    _normalise(cfg, th)
    return rule


def descend(cfg, th: ThreadState) -> None:
    """Push the frames of the congruence rules leading to the redex (no step)."""
    while True:
        s = th.focus
        enter = ENTER.get(type(s))
        if enter is None or not enter(cfg, th, s):
            return


def chain(frames) -> tuple[str, ...]:
    names = []
    for f in frames:
        kind = f[0]
        if kind == SEQ:
            names.append("S-Seq-First")
        elif kind == SPLIT:
            names.append("S-Split-Left" if f[2] == 0 else "S-Split-Right")
        elif kind == GROUP:
            names.append("S-Group")
        elif kind == DESTRUCT:
            names.append("S-Destruct-Grid" if f[2].level == Level.GRID
                         else "S-Destruct-Block")
        elif kind == ASYNC:
            names.append("S-Async-Partition-Congr")
        elif kind == CLAIM:
            names.append("S-Claim-Body")
    return tuple(names)


def _normalise(cfg, th: ThreadState) -> None:
    """Pop finished SCOPE / CALL frames: they are no rule, so popping is no step."""
    frames = th.frames
    while frames and type(th.focus) is Skip and frames[-1][0] in TRANSPARENT:
        f = frames.pop()
        if f[0] == SCOPE:  # leave a `let`'s scope: restore the shadowed binding
            name, old = f[1], f[2]
            if old is None:
                th.env.pop(name, None)
            else:
                th.env[name] = old
        else:  # CALL: return to the caller's environment
            th.env = f[2]


def _push(th, frame, focus, persp=None, p=None, unit=None):
    th.frames.append(frame)
    th.focus = focus
    if persp is not None:
        th.persp, th.p = persp, p
        if unit is not None:
            th.unit = unit


# ------------------------------------------------------------ congruence: entering


def _enter_seq(cfg, th, s: Seq) -> bool:
    # S-Seq-First (its frame); S-Seq-Done fires when the head is skip
    if type(s.stmts[0]) is Skip:
        return False
    _push(th, (SEQ, s.stmts, 0), s.stmts[0])
    return True


def _split_side(cfg, th, s: Split):
    """0 (left), 1 (right) or None (S-Split-None), after the shared premises."""
    h, n = th.persp.level, th.persp.n
    if not align_to(s.n1, s.n2, n):
        _stuck("S-Split", s, th, f"perspective mismatch: split({s.n1}, {s.n2}) does not "
               f"align to {th.persp}")
    if th.p < s.n1:
        return 0
    if th.p < s.n1 + s.n2:
        return 1
    return None


def _enter_split(cfg, th, s: Split) -> bool:
    side = _split_side(cfg, th, s)
    if side is None or type(s.right if side else s.left) is Skip:
        return False
    h = th.persp.level
    if side == 0:  # S-Split-Left
        _push(th, (SPLIT, s, 0, th.persp, th.p, th.unit), s.left,
              cfg.persp(h, s.n1), th.p, th.unit + ("L",))
    else:  # S-Split-Right
        _push(th, (SPLIT, s, 1, th.persp, th.p, th.unit), s.right,
              cfg.persp(h, s.n2), th.p - s.n1, th.unit + ("R",))
    return True


def _step_split(cfg, th, s: Split) -> str:
    side = _split_side(cfg, th, s)
    th.focus = SKIP
    if side is None:
        return "S-Split-None"
    return "S-Split-Left-Done" if side == 0 else "S-Split-Right-Done"


def _enter_group(cfg, th, s: Group) -> bool:
    # S-Group: (h, q·n) narrows to (h, n) with p mod n
    if type(s.body) is Skip:
        return False
    if s.q <= 0 or th.persp.n % s.q:
        _stuck("S-Group", s, th, f"perspective mismatch: group {s.q} needs a code "
               f"perspective (h, {s.q}·n), code is at {th.persp}")
    n = th.persp.n // s.q
    _push(th, (GROUP, s, th.persp, th.p, th.unit), s.body,
          cfg.persp(th.persp.level, n), th.p % n, th.unit + (th.p // n,))
    return True


def _step_group(cfg, th, s: Group) -> str:
    th.focus = SKIP  # S-Group-Done (the body is skip)
    return "S-Group-Done"


def _enter_destruct(cfg, th, s: Destruct) -> bool:
    if type(s.body) is Skip:
        return False
    if th.p != 0 or th.persp not in (BLOCK1, GRID1):
        _stuck("S-Destruct-Block" if th.persp.level == Level.BLOCK else
               "S-Destruct-Grid", s, th, f"perspective mismatch: destruct needs "
               f"{BLOCK1} or {GRID1} with p = 0, code is at {th.persp} with p = {th.p}")
    inner = cfg.persp_of(persp_destruct(th.persp, cfg.shape))
    # S-Destruct-Block: p := t mod T; S-Destruct-Grid: p := b mod B
    p = th.t % cfg.shape.threads if th.persp == BLOCK1 else th.b % cfg.shape.blocks
    _push(th, (DESTRUCT, s, th.persp, th.p, th.unit), s.body, inner, p)
    return True


def _step_destruct(cfg, th, s: Destruct) -> str:
    if th.p != 0:
        _stuck("S-Destruct-Done", s, th, f"perspective mismatch: destruct needs p = 0, "
               f"got p = {th.p}")
    th.focus = SKIP
    return "S-Destruct-Done"


def _enter_async(cfg, th, s: AsyncPartition) -> bool:
    # S-Async-Partition-Congr: the body steps with x renamed to y at (Thread, 1)
    if type(s.body) is Skip:
        return False
    _require_persp(th, s, THREAD1, "S-Async-Partition-Congr")
    _rename(cfg, th, s, s.source, s.target, THREAD1, "S-Async-Partition-Congr",
            async_=True)
    _push(th, (ASYNC, s, _label(cfg, s)), s.body)
    return True


def _step_async(cfg, th, s: AsyncPartition) -> str:
    # async_partition_φ x into y in skip: Unwind if Φ(φ) ≠ ∅, else Done
    _require_persp(th, s, THREAD1, "S-Async-Partition-Done")
    label = _label(cfg, s)
    pending = (th.phi if cfg.fixed else cfg.phi).get(label)
    if pending:
        _rename(cfg, th, s, s.source, s.target, THREAD1, "S-Async-Partition-Unwind",
                async_=True)
        _push(th, (ASYNC, s, label), pending.pop(0))
        return "S-Async-Partition-Unwind"
    th.focus = SKIP
    return "S-Async-Partition-Done"


def _enter_claim_body(cfg, th, s: ClaimBody) -> bool:
    n1 = s.claim.at
    if th.p >= n1 or type(s.claim.body) is Skip:
        return False
    _push(th, (CLAIM, s, th.persp, th.p, th.unit), s.claim.body,
          cfg.persp(th.persp.level, n1), th.p, th.unit + ("C",))
    return True


def _step_claim_body(cfg, th, s: ClaimBody) -> str:
    th.focus = SKIP
    return "S-Claim-Skip" if th.p >= s.claim.at else "S-Claim-Done"


# ----------------------------------------------------------------- the -Done rules


def _done(cfg, th) -> str:
    """The redex is `skip` directly under the top frame: that frame's -Done rule."""
    if not th.frames:
        raise Stuck("stuck: the thread has terminated", rule="S-Program")
    f = th.frames[-1]
    kind = f[0]
    if kind == SEQ:  # S-Seq-Done: skip; s2 ⇝ s2
        stmts, i = f[1], f[2] + 1
        if i == len(stmts) - 1:
            th.frames.pop()
        else:
            th.frames[-1] = (SEQ, stmts, i) + f[3:]
        th.focus = stmts[i]
        return "S-Seq-Done"
    if kind == ASYNC:
        return _async_unwind(cfg, th, f)
    th.frames.pop()
    if kind == SPLIT:
        th.persp, th.p, th.unit = f[3], f[4], f[5]
        return "S-Split-Left-Done" if f[2] == 0 else "S-Split-Right-Done"
    th.persp, th.p, th.unit = f[2], f[3], f[4]
    if kind == GROUP:
        return "S-Group-Done"
    if kind == DESTRUCT:
        return "S-Destruct-Done"
    return "S-Claim-Done"  # CLAIM


def _async_unwind(cfg, th, f) -> str:
    node, label = f[1], f[2]
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


def _require_persp(th, node, want: Perspective, rule: str):
    if th.persp != want:
        _stuck(rule, node, th, f"perspective mismatch: {rule} needs code at {want}, "
               f"code is at {th.persp}")


def _require_leq(cfg, th, node, a, b, rule: str, what: str):
    if not cfg.leq(a, b):
        _stuck(rule, node, th, f"perspective mismatch: {what}: {a} is not <= {b}")


def _check_value(th, node, rule, want, v, name):
    """Dynamic type check of a value (never fires for a well-typed program)."""
    got = type_of_value(v)
    ok = got is want if got is not None else isinstance(want, ArrayType | AsyncType)
    if not ok:
        _stuck(rule, node, th, f"type mismatch: {name} expects "
               f"{getattr(want, 'value', want)}, got {show_value(v)}")


def s_decl(cfg, th, s: Decl) -> str:
    # S-Decl: e ⇓ v at target π', π' ≤ π; x ↦^π' v in η
    tgt = cfg.persp_of(s.persp)
    _require_leq(cfg, th, s, tgt, th.persp, "S-Decl", f"declaring {s.name}")
    v = compile_expr(cfg, s.init)(th, tgt)
    _check_value(th, s, "S-Decl", s.type, v, s.name)
    _bind(cfg, th, s.name, Binding(v, tgt, s.type), s.body)
    return "S-Decl"


def _bind(cfg, th, name: str, binding: Binding, body: Stmt):
    """Extend η and continue with the binder's body; `fixed` scopes the binding."""
    if cfg.fixed and type(body) is not Skip:
        th.frames.append((SCOPE, name, th.env.get(name)))
    th.env[name] = binding
    th.focus = body


def s_assn(cfg, th, s: Assign) -> str:
    # S-Assn: x ∈^π' η,σ,Σ; π' ≤ π (write down); e ⇓ v at π'
    b = lookup(cfg, th, s.name, s, "S-Assn")
    _require_leq(cfg, th, s, b.persp, th.persp, "S-Assn", f"writing {s.name}")
    v = compile_expr(cfg, s.value)(th, b.persp)
    _check_value(th, s, "S-Assn", b.type, v, s.name)
    if s.name in th.env:
        th.env[s.name] = Binding(v, b.persp, b.type)
    else:
        cfg.globals[s.name] = Binding(v, b.persp, b.type)
    th.focus = SKIP
    return "S-Assn"


def s_arr_assn(cfg, th, s: ArrAssign) -> str:
    # S-Arr-Assn: e1 ⇓ ⟨l, n⟩, e2 ⇓ i, i < n, π' ≤ π, e3 ⇓ v at π', update l + i
    ptr, apersp = compile_ptr(cfg, s.array, "S-Arr-Assn")(th, th.persp)
    i = compile_expr(cfg, s.index)(th, th.persp)
    reg = cfg.regions[ptr.region]
    cell = f"{reg.where()} {reg.name}[{ptr.off + i}]" if type(i) is int else None
    if not cfg.leq(apersp, th.persp):
        _stuck("S-Arr-Assn", s, th, f"perspective mismatch: writing an array at "
               f"{apersp} from code at {th.persp} (write down needs data <= code)", cell)
    if cfg.fixed and reg.space is MemKind.SHARED and not cfg.leq(th.persp, BLOCK1):
        _stuck("S-Arr-Assn-Shared", s, th, f"perspective mismatch: shared memory "
               f"written from code at {th.persp} (needs <= {BLOCK1})", cell)
    if type(i) is not int:
        _stuck("S-Arr-Assn", s, th, f"type mismatch: index {show_value(i)}")
    if not 0 <= i < ptr.length:
        fail(Trap, "S-Arr-Assn", s, th, f"out of bounds: index {i} of an array of "
             f"length {ptr.length}", cell)
    v = compile_expr(cfg, s.value)(th, apersp)
    _check_value(th, s, "S-Arr-Assn", reg.elem, v, reg.name)
    reg.cells[ptr.off + i] = v
    th.focus = SKIP
    return "S-Arr-Assn"


def s_if(cfg, th, s: If) -> str:
    v = compile_expr(cfg, s.cond)(th, th.persp)
    if v is True:
        th.focus = s.then
        return "S-If-True"
    if v is False:
        th.focus = s.orelse
        return "S-If-False"
    _stuck("S-If", s, th, f"type mismatch: condition is {show_value(v)}, not bool")


def s_while(cfg, th, s: While) -> str:
    # S-While: while e do s ⇝ if e then (s; while e do s) else skip
    th.focus = cfg.unrolled(s)
    return "S-While"


def s_skip_seq(cfg, th, s: Seq) -> str:  # a Seq whose head is skip: S-Seq-Done
    rest = s.stmts[1:]
    th.focus = rest[0] if len(rest) == 1 else Seq(rest, s.span)
    return "S-Seq-Done"


def s_free(cfg, th, s: Free) -> str:
    # S-Free: m - n (n ≤ m, as T-Free)
    if s.amount > th.m:
        _stuck("S-Free", s, th, f"memory bound: free {s.amount} with {th.m} in use")
    th.m -= s.amount
    th.focus = SKIP
    return "S-Free"


def s_alloc(cfg, th, s: Alloc) -> str:
    from gpusem.typing_rules.bundl_context import type_size

    amount = s.size * type_size(s.elem)
    ty = ArrayType(s.elem, s.mem)
    match s.mem:
        case MemKind.LOCAL:  # S-Alloc-Local
            rule, persp = "S-Alloc-Local", th.persp
            rid = cfg.new_region(s, MemKind.LOCAL, th.t, th.persp)
        case MemKind.SHARED:  # S-Alloc-Shared: π = (Block, 1)
            rule, persp = "S-Alloc-Shared", BLOCK1
            _require_persp(th, s, BLOCK1, rule)
            if cfg.fixed:  # in σ(b), once per block (lead's decision; errata)
                rid = _shared_instance(cfg, th, s, ("b", th.b), MemKind.SHARED, th.b)
            else:  # as printed: η[x ↦ ⟨x, n⟩], a private copy per thread
                rid = cfg.new_region(s, MemKind.LOCAL, th.t, BLOCK1)
        case _:  # S-Alloc-Global
            rule, persp = "S-Alloc-Global", th.persp
            if cfg.fixed:  # in Σ, once per unit of the code perspective (errata)
                rid = _shared_instance(cfg, th, s, ("u", th.unit), MemKind.GLOBAL, None)
            else:  # as printed: in η
                rid = cfg.new_region(s, MemKind.LOCAL, th.t, th.persp)
    th.m += amount
    ptr = Ptr(rid, 0, s.size, s.size)
    # ⇝ s; free (n · size(τ))
    _bind(cfg, th, s.name, Binding(ptr, persp, ty), cfg.alloc_cont(s, amount))
    return rule


def _shared_instance(cfg, th, s: Alloc, where, space, owner) -> int:
    """The region of this dynamic instance of alloc site `s` for this block / unit: the
    k-th execution of the site by a thread meets the k-th execution by its peers."""
    site = (id(s), where)
    k = th.allocs.get(site, 0)
    th.allocs[site] = k + 1
    key = site + (k,)
    rid = cfg.allocs.get(key)
    if rid is None:
        rid = cfg.new_region(s, space, owner, BLOCK1 if space is MemKind.SHARED
                             else th.persp)
        cfg.allocs[key] = rid
    return rid


def _rename(cfg, th, node, x: str, y: str, persp: Perspective, rule: str,
            offset: int = 0, async_=False, chunk: int | None = None):
    """rename(η, σ, Σ, x, y, π'): y ↦^π' the value of x (offset for S-Partition)."""
    b = lookup(cfg, th, x, node, rule)
    if type(b.value) is not Ptr:
        _stuck(rule, node, th, f"type mismatch: {x} is not an array")
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


def _sync_block(cfg, th, s, body: Stmt, label: str) -> None:
    """⇝ init_ψ; s; dec_ψ; wait_ψ (S-Partition, S-Claim, S-Lower)."""
    stmts = cfg.sync_block(s, body, label)
    th.frames.append((SEQ, stmts, 0))
    th.focus = stmts[0]


def s_partition(cfg, th, s: Partition) -> str:
    x = lookup(cfg, th, s.source, s, "S-Partition")
    h, n = th.persp.level, th.persp.n
    if cfg.fixed:
        if x.persp != th.persp or s.by <= 0 or n % s.by:
            _stuck("S-Partition", s, th, f"perspective mismatch: partition of "
                   f"{s.source} at {x.persp} by {s.by} from code at {th.persp}")
        # Note (lead's decision): piece k = p div (n/c), chunk = len div c; s[(y + k·chunk)/y]
        # Note: the chunk comes from the view's extent, not from its bounds, so that
        # nested partitions divide the piece (errata "S-Partition").
        k = th.p // (n // s.by)
        chunk = x.value.extent // s.by
        off = k * chunk
    else:  # as printed: s[(y + c·p)/y], renamed at π/c read as (h, n/c)
        off, chunk = s.by * th.p, None
    label = _label(cfg, s)
    stmts = cfg.sync_block(s, s.body, label)
    _rename(cfg, th, s, s.source, s.target, cfg.persp(h, max(n // s.by, 1)),
            "S-Partition", offset=off, chunk=chunk)
    th.frames.append((SEQ, stmts, 0, (s.target, off)))  # (y, k): shown as s[(y+k)/y]
    th.focus = stmts[0]
    return "S-Partition"


def s_claim(cfg, th, s: Claim) -> str:
    h, n = th.persp.level, th.persp.n
    label = _label(cfg, s)
    if cfg.fixed:
        # Note: the body runs at (h, n') for p < n' only (errata "S-Claim")
        if s.at <= 0 or n % s.at:
            _stuck("S-Claim", s, th, f"perspective mismatch: claim at {s.at} from "
                   f"code at {th.persp}")
        _rename(cfg, th, s, s.source, s.target, cfg.persp(h, s.at), "S-Claim")
        _sync_block(cfg, th, s, cfg.claim_body(s, n), label)
    else:  # as printed: the body runs at the unsplit (h, n1 + n2)
        _rename(cfg, th, s, s.source, s.target, cfg.persp(h, s.at), "S-Claim")
        _sync_block(cfg, th, s, s.body, label)
    return "S-Claim"


def s_lower(cfg, th, s: Lower) -> str:
    if th.persp.n != 1 or th.persp.level == Level.THREAD:
        _stuck("S-Lower", s, th, f"perspective mismatch: lower needs ↓π defined, code "
               f"is at {th.persp}")
    _rename(cfg, th, s, s.source, s.target,
            cfg.persp_of(persp_destruct(th.persp, cfg.shape)), "S-Lower")
    _sync_block(cfg, th, s, s.body, _label(cfg, s))
    return "S-Lower"


def _sync_key(cfg, th, label):
    if not cfg.fixed:
        return (label, th.p)  # as printed: Ψ(ψ)(p)
    # Note: Ψ is keyed by the unit of π the thread is in and the barrier generation,
    # so blocks do not share counters and a barrier is reusable in a loop (errata "Ψ").
    gen = th.waits.get((label, th.unit), 0)
    return (label, th.unit, gen)


def s_sync_init(cfg, th, s: SyncInit) -> str:
    key = _sync_key(cfg, th, s.label)
    th.focus = SKIP
    if cfg.psi.get(key, 0) == 0:  # S-Sync-Init-Zero: Ψ(ψ)(p) := size(π)
        cfg.psi[key] = persp_size(th.persp, cfg.shape)
        return "S-Sync-Init-Zero"
    return "S-Sync-Init-Nonzero"


def s_sync_dec(cfg, th, s: SyncDec) -> str:
    key = _sync_key(cfg, th, s.label)
    c = cfg.psi.get(key, 0)
    if c == 0:  # Ψ : ψ → ℕ → ℕ: no rule decrements 0
        _stuck("S-Sync-Dec", s, th, f"sync underflow: dec {s.label} with counter 0 "
               f"(key {key[1:]})")
    cfg.psi[key] = c - 1
    if c == 1:
        cfg.wakeups += 1
    th.focus = SKIP
    return "S-Sync-Dec"


def s_sync_wait(cfg, th, s: SyncWait) -> str:
    key = _sync_key(cfg, th, s.label)
    if cfg.psi.get(key, 0) != 0:
        return "S-Sync-Wait-Spin"  # wait_ψ ⇝ wait_ψ
    if cfg.fixed:
        th.waits[(s.label, th.unit)] = key[2] + 1
    th.focus = SKIP
    return "S-Sync-Wait-Done"


def blocked(cfg, th) -> bool:
    """Whether the thread can only spin (S-Sync-Wait-Spin) right now."""
    try:
        descend(cfg, th)
    except (Stuck, Trap):
        return False
    s = th.focus
    return type(s) is SyncWait and cfg.psi.get(_sync_key(cfg, th, s.label), 0) != 0


def s_async_memcpy(cfg, th, s: AsyncMemcpy) -> str:
    # S-Async-Memcpy: Φ(φ) ∪ {memcpy(x, y)}, φ of the innermost async_partition
    _require_persp(th, s, THREAD1, "S-Async-Memcpy")
    label = next((f[2] for f in reversed(th.frames) if f[0] == ASYNC), None)
    if label is None:
        _stuck("S-Async-Memcpy", s, th, "async_memcpy outside async_partition")
    phi = th.phi if cfg.fixed else cfg.phi
    phi.setdefault(label, []).append(cfg.memcpy_of(s))
    th.focus = SKIP
    return "S-Async-Memcpy"


def s_memcpy(cfg, th, s: Memcpy) -> str:
    dst = lookup(cfg, th, s.dst, s, "S-Memcpy")
    src = lookup(cfg, th, s.src, s, "S-Memcpy")
    if not cfg.fixed:
        # as printed: update(x, get(y)) rebinds the name x to y's pointer
        th.env[s.dst] = Binding(src.value, dst.persp, dst.type)
        th.focus = SKIP
        return "S-Memcpy"
    # Note: element-wise copy of min(len x, len y) cells (errata "memcpy")
    if type(dst.value) is not Ptr or type(src.value) is not Ptr:
        _stuck("S-Memcpy", s, th, "type mismatch: memcpy needs two arrays")
    _require_leq(cfg, th, s, dst.persp, th.persp, "S-Memcpy", f"writing {s.dst}")
    _require_leq(cfg, th, s, th.persp, src.persp, "S-Memcpy", f"reading {s.src}")
    d, r = dst.value, src.value
    dreg, sreg = cfg.regions[d.region], cfg.regions[r.region]
    if dreg.space is MemKind.SHARED and not cfg.leq(th.persp, BLOCK1):
        _stuck("S-Memcpy", s, th, f"perspective mismatch: shared memory written from "
               f"{th.persp}")
    n = min(d.length, r.length)
    dreg.cells[d.off:d.off + n] = sreg.cells[r.off:r.off + n]
    th.focus = SKIP
    return "S-Memcpy"


def s_call(cfg, th, s: Call) -> str:
    # S-Function-Call: Σ(f) = {[x_i : τ_i], s}; e_i ⇓ v_i; ⇝ s with η[x_i ↦ v_i]
    fn = cfg.fns.get(s.fn)
    if fn is None:
        _stuck("S-Function-Call", s, th, f"unbound variable: no function {s.fn}")
    if len(fn.params) != len(s.args):
        _stuck("S-Function-Call", s, th, f"type mismatch: {s.fn} takes "
               f"{len(fn.params)} arguments, got {len(s.args)}")
    if cfg.fixed and fn.persp != th.persp:
        _stuck("S-Function-Call", s, th, f"perspective mismatch: {s.fn} is at "
               f"{fn.persp}, called from code at {th.persp}")
    vals = []
    for prm, arg in zip(fn.params, s.args):
        tgt = cfg.persp_of(prm.persp)
        v = compile_expr(cfg, arg)(th, tgt)
        vals.append(Binding(v, tgt, prm.type))
    if cfg.fixed:
        # Note: the body gets its own η (errata "function calls clobber η")
        th.frames.append((CALL, fn, th.env))
        th.env = {}
    for prm, b in zip(fn.params, vals):
        th.env[prm.name] = b
    th.focus = fn.body
    return "S-Function-Call"


def _label(cfg, s) -> str:
    """ψ / φ: the statement's label, or a fresh one per statement."""
    if s.label is not None:
        return s.label
    return cfg.fresh_label(s)


ENTER = {
    Seq: _enter_seq, Split: _enter_split, Group: _enter_group,
    Destruct: _enter_destruct, AsyncPartition: _enter_async,
    ClaimBody: _enter_claim_body,
}

AXIOMS = {
    Seq: s_skip_seq, Split: _step_split, Group: _step_group, Destruct: _step_destruct,
    AsyncPartition: _step_async, ClaimBody: _step_claim_body,
    Decl: s_decl, Assign: s_assn, ArrAssign: s_arr_assn, If: s_if, While: s_while,
    Free: s_free, Alloc: s_alloc, Partition: s_partition, Claim: s_claim,
    Lower: s_lower, SyncInit: s_sync_init, SyncDec: s_sync_dec, SyncWait: s_sync_wait,
    AsyncMemcpy: s_async_memcpy, Memcpy: s_memcpy, Call: s_call,
}

