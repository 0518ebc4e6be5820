"""The Bundl thread judgment, part 2: data perspectives, memory, synchronisation,
asynchrony and calls (Appendix A.3.3-A.3.6 of the Prism paper, seed 004).

One function per rule, named after it; the step function, the congruence rules and the
frames are in `bundl/small_step` (same conventions: `th` the thread, `cfg` the shared
configuration σ, Σ, Ψ, Φ).
"""

from __future__ import annotations

from gpusem.calculus.bundl.ast import (
    Alloc,
    ArrAssign,
    ArrayType,
    AsyncMemcpy,
    Call,
    Claim,
    Free,
    Lower,
    Memcpy,
    MemKind,
    Partition,
    SyncDec,
    SyncInit,
    SyncWait,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    THREAD1,
    Level,
)
from gpusem.calculus.bundl.perspective import destruct as persp_destruct
from gpusem.calculus.bundl.perspective import size as persp_size
from gpusem.calculus.errors import Trap
from gpusem.interpreter.bundl.config import (
    AllocSite,
    AsyncFrame,
    CallFrame,
    Config,
    SeqFrame,
    Term,
    ThreadState,
    Unit,
)
from gpusem.interpreter.bundl.expr_eval import compile_expr, compile_ptr, fail, lookup
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
from gpusem.interpreter.bundl.values import Binding, Ptr, show_value


def s_arr_assn(cfg: Config, th: ThreadState, s: ArrAssign) -> str:
    # S-Arr-Assn: e1 ⇓ ⟨l, n⟩, e2 ⇓ i, i < n, π' ≤ π, e3 ⇓ v at π', update l + i
    ptr, apersp = compile_ptr(cfg, s.array, "S-Arr-Assn")(th, th.persp)
    i = compile_expr(cfg, s.index)(th, th.persp)
    reg = cfg.regions[ptr.region]
    cell = f"{reg.where()} {reg.name}[{ptr.off + i}]" if type(i) is int else None
    if not cfg.leq(apersp, th.persp):
        stuck("S-Arr-Assn", s, th, f"perspective mismatch: writing an array at "
               f"{apersp} from code at {th.persp} (write down needs data <= code)",
               cell)
    if cfg.fixed and reg.space is MemKind.SHARED and not cfg.leq(th.persp, BLOCK1):
        stuck("S-Arr-Assn-Shared", s, th, f"perspective mismatch: shared memory "
               f"written from code at {th.persp} (needs <= {BLOCK1})", cell)
    if type(i) is not int:
        stuck("S-Arr-Assn", s, th, f"type mismatch: index {show_value(i)}")
    if not 0 <= i < ptr.length:
        fail(Trap, "S-Arr-Assn", s, th, f"out of bounds: index {i} of an array of "
             f"length {ptr.length}", cell)
    v = compile_expr(cfg, s.value)(th, apersp)
    check_value(th, s, "S-Arr-Assn", reg.elem, v, reg.name)
    reg.cells[ptr.off + i] = v
    th.focus = SKIP
    return "S-Arr-Assn"


def s_free(cfg: Config, th: ThreadState, s: Free) -> str:
    # S-Free: m - n (n ≤ m, as T-Free)
    if s.amount > th.m:
        stuck("S-Free", s, th, f"memory bound: free {s.amount} with {th.m} in use")
    th.m -= s.amount
    th.focus = SKIP
    return "S-Free"


def s_alloc(cfg: Config, th: ThreadState, s: Alloc) -> str:
    from gpusem.typing_rules.bundl.context import type_size

    amount = s.size * type_size(s.elem)
    ty = ArrayType(s.elem, s.mem)
    match s.mem:
        case MemKind.LOCAL:  # S-Alloc-Local
            rule, persp = "S-Alloc-Local", th.persp
            if s.persp is not None:
                # S-Alloc-Local-At (our extension, errata): the thread's own array,
                # bound at the declared π' ≤ π (as S-Decl binds a scalar)
                if not cfg.leq(s.persp, th.persp):
                    stuck("S-Alloc-Local-At", s, th, f"perspective mismatch: "
                           f"declaring {s.name} at {s.persp} from code at {th.persp}")
                rule, persp = "S-Alloc-Local-At", s.persp
            rid = cfg.new_region(s, MemKind.LOCAL, th.t, persp)
        case MemKind.SHARED:  # S-Alloc-Shared: π = (Block, 1)
            rule, persp = "S-Alloc-Shared", BLOCK1
            require_persp(th, s, BLOCK1, rule)
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
    bind(cfg, th, s.name, Binding(ptr, persp, ty), cfg.alloc_cont(s, amount))
    return rule


def _shared_instance(cfg: Config, th: ThreadState, s: Alloc,
                     where: tuple[str, int | Unit], space: MemKind,
                     owner: int | None) -> int:
    """The region of this dynamic instance of alloc site `s` for this block / unit: the
    k-th execution of the site by a thread meets the k-th execution by its peers."""
    site: AllocSite = (id(s), where)
    k = th.allocs.get(site, 0)
    th.allocs[site] = k + 1
    key = site + (k,)
    rid = cfg.allocs.get(key)
    if rid is None:
        rid = cfg.new_region(s, space, owner, BLOCK1 if space is MemKind.SHARED
                             else th.persp)
        cfg.allocs[key] = rid
    return rid


def _sync_block(cfg: Config, th: ThreadState, s: Partition | Claim | Lower,
                body: Term, label: str) -> None:
    """⇝ init_ψ; s; dec_ψ; wait_ψ (S-Partition, S-Claim, S-Lower)."""
    stmts = cfg.sync_block(s, body, label)
    th.frames.append(SeqFrame(stmts, 0))
    th.focus = stmts[0]


def s_partition(cfg: Config, th: ThreadState, s: Partition) -> str:
    if s.offset is not None:
        return s_partition_offset(cfg, th, s)
    x = lookup(cfg, th, s.source, s, "S-Partition")
    h, n = th.persp.level, th.persp.n
    if cfg.fixed:
        if x.persp != th.persp or s.by <= 0 or n % s.by:
            stuck("S-Partition", s, th, f"perspective mismatch: partition of "
                   f"{s.source} at {x.persp} by {s.by} from code at {th.persp}")
        # Note (lead's decision): piece k = p div (n/c), chunk = len div c,
        # s[(y + k·chunk)/y]
        # Note: the chunk comes from the view's extent, not from its bounds, so that
        # nested partitions divide the piece (errata "S-Partition").
        x = _require_source_at_code(cfg, th, s, "S-Partition")
        assert isinstance(x.value, Ptr)  # checked by _require_source_at_code
        k = th.p // (n // s.by)
        chunk = x.value.extent // s.by
        off = k * chunk
    else:  # as printed: s[(y + c·p)/y], renamed at π/c read as (h, n/c)
        off, chunk = s.by * th.p, None
    label = label_of(cfg, s)
    stmts = cfg.sync_block(s, s.body, label)
    rename_var(cfg, th, s, s.source, s.target, cfg.persp(h, max(n // s.by, 1)),
            "S-Partition", offset=off, chunk=chunk, b=x)  # x: η is unchanged
    th.frames.append(SeqFrame(stmts, 0, (s.target, off)))  # shown as s[(y+k)/y]
    th.focus = stmts[0]
    return "S-Partition"


def s_partition_offset(cfg: Config, th: ThreadState, s: Partition) -> str:
    """S-Partition-Offset (our extension, errata "Extension: partition at an offset"):
    at (h, n), x :^(h,n) ⟨l, len⟩, c | n, the thread evaluates e at its piece's
    perspective (h, n/c) to v, 0 <= v <= len, and runs init_ψ; s; dec_ψ; wait_ψ with
    y ↦^(h,n/c) ⟨l + v, len − v⟩ (the bounds keep the array's end, as S-Partition's)."""
    rule = "S-Partition-Offset"
    assert s.offset is not None  # the caller's guard
    h, n = th.persp.level, th.persp.n
    if s.by <= 0 or n % s.by:
        stuck(rule, s, th, f"perspective mismatch: partition of {s.source} by {s.by} "
               f"from code at {th.persp}")
    x = _require_source_at_code(cfg, th, s, rule)
    assert isinstance(x.value, Ptr)  # checked by _require_source_at_code
    piece = cfg.persp(h, n // s.by)
    code = th.persp
    th.persp = piece  # Γ ⊢^(h,n/c) e : int
    try:
        off = compile_expr(cfg, s.offset)(th, piece)
    finally:
        th.persp = code
    if not isinstance(off, int) or isinstance(off, bool):
        stuck(rule, s, th, f"type mismatch: partition offset {off!r} is not an int")
    if not 0 <= off <= x.value.length:
        fail(Trap, rule, s, th, f"out of bounds: partition offset {off} outside "
             f"{s.source} (length {x.value.length})")
    label = label_of(cfg, s)
    stmts = cfg.sync_block(s, s.body, label)
    # x, looked up above: evaluating the offset changed no binding
    rename_var(cfg, th, s, s.source, s.target, piece, rule, offset=off, b=x)
    th.frames.append(SeqFrame(stmts, 0, (s.target, off)))
    th.focus = stmts[0]
    return rule


def s_claim(cfg: Config, th: ThreadState, s: Claim) -> str:
    h, n = th.persp.level, th.persp.n
    label = label_of(cfg, s)
    if cfg.fixed:
        # Note: the body runs at (h, n') for p < n' only (errata "S-Claim")
        if s.at <= 0 or n % s.at:
            stuck("S-Claim", s, th, f"perspective mismatch: claim at {s.at} from "
                   f"code at {th.persp}")
        x = _require_source_at_code(cfg, th, s, "S-Claim")
        rename_var(cfg, th, s, s.source, s.target, cfg.persp(h, s.at), "S-Claim",
                   b=x)
        _sync_block(cfg, th, s, cfg.claim_body(s, n), label)
    else:  # as printed: the body runs at the unsplit (h, n1 + n2)
        rename_var(cfg, th, s, s.source, s.target, cfg.persp(h, s.at), "S-Claim")
        _sync_block(cfg, th, s, s.body, label)
    return "S-Claim"


def s_lower(cfg: Config, th: ThreadState, s: Lower) -> str:
    if th.persp.n != 1 or th.persp.level == Level.THREAD:
        stuck("S-Lower", s, th, f"perspective mismatch: lower needs ↓π defined, code "
               f"is at {th.persp}")
    if cfg.fixed:
        _require_source_at_code(cfg, th, s, "S-Lower")
    rename_var(cfg, th, s, s.source, s.target,
            cfg.persp_of(persp_destruct(th.persp, cfg.shape)), "S-Lower")
    _sync_block(cfg, th, s, s.body, label_of(cfg, s))
    return "S-Lower"


def _require_source_at_code(cfg: Config, th: ThreadState,
                            s: Partition | Claim | Lower, rule: str) -> Binding:
    """T-Claim / T-Lower's x :^π τ[]^l with l ≠ Local, checked at run time (fixed);
    x's binding (so that the caller need not look it up again)."""
    x = lookup(cfg, th, s.source, s, rule)
    if type(x.value) is not Ptr:
        stuck(rule, s, th, f"type mismatch: {s.source} is not an array")
    reg = cfg.regions[x.value.region]
    if x.persp != th.persp or reg.space is MemKind.LOCAL:
        where = " in Local memory" if x.persp == th.persp else ""
        stuck(rule, s, th, f"perspective mismatch: {s.source} lives at {x.persp}"
               f"{where}, code is at {th.persp}")
    return x


def s_sync_init(cfg: Config, th: ThreadState, s: SyncInit) -> str:
    key = sync_key(cfg, th, s.label)
    th.focus = SKIP
    if cfg.psi.get(key, 0) == 0:  # S-Sync-Init-Zero: Ψ(ψ)(p) := size(π)
        cfg.psi[key] = persp_size(th.persp, cfg.shape)
        return "S-Sync-Init-Zero"
    return "S-Sync-Init-Nonzero"


def s_sync_dec(cfg: Config, th: ThreadState, s: SyncDec) -> str:
    key = sync_key(cfg, th, s.label)
    c = cfg.psi.get(key, 0)
    if c == 0:  # Ψ : ψ → ℕ → ℕ: no rule decrements 0
        stuck("S-Sync-Dec", s, th, f"sync underflow: dec {s.label} with counter 0 "
               f"(key {key[1:]})")
    cfg.psi[key] = c - 1
    if c == 1:
        cfg.wakeups += 1
    th.focus = SKIP
    return "S-Sync-Dec"


def s_sync_wait(cfg: Config, th: ThreadState, s: SyncWait) -> str:
    key = sync_key(cfg, th, s.label)
    if cfg.psi.get(key, 0) != 0:
        return "S-Sync-Wait-Spin"  # wait_ψ ⇝ wait_ψ
    if cfg.fixed:
        assert len(key) == 3  # fixed: (ψ, unit, barrier generation)
        th.waits[(s.label, th.unit)] = key[2] + 1
    th.focus = SKIP
    return "S-Sync-Wait-Done"


def s_async_memcpy(cfg: Config, th: ThreadState, s: AsyncMemcpy) -> str:
    # S-Async-Memcpy: Φ(φ) ∪ {memcpy(x, y)}, φ of the innermost async_partition
    require_persp(th, s, THREAD1, "S-Async-Memcpy")
    label = next((f.label for f in reversed(th.frames) if type(f) is AsyncFrame),
                 None)
    if label is None:
        stuck("S-Async-Memcpy", s, th, "async_memcpy outside async_partition")
    phi = th.phi if cfg.fixed else cfg.phi
    phi.setdefault(label, []).append(cfg.memcpy_of(s))
    th.focus = SKIP
    return "S-Async-Memcpy"


def s_memcpy(cfg: Config, th: ThreadState, s: Memcpy) -> str:
    dst = lookup(cfg, th, s.dst, s, "S-Memcpy")
    src = lookup(cfg, th, s.src, s, "S-Memcpy")
    if not cfg.fixed:
        # as printed: update(x, get(y)) rebinds the name x to y's pointer
        th.env[s.dst] = Binding(src.value, dst.persp, dst.type)
        th.focus = SKIP
        return "S-Memcpy"
    # Note: element-wise copy of min(len x, len y) cells (errata "memcpy")
    if type(dst.value) is not Ptr or type(src.value) is not Ptr:
        stuck("S-Memcpy", s, th, "type mismatch: memcpy needs two arrays")
    require_leq(cfg, th, s, dst.persp, th.persp, "S-Memcpy", f"writing {s.dst}")
    require_leq(cfg, th, s, th.persp, src.persp, "S-Memcpy", f"reading {s.src}")
    d, r = dst.value, src.value
    dreg, sreg = cfg.regions[d.region], cfg.regions[r.region]
    if dreg.space is MemKind.SHARED and not cfg.leq(th.persp, BLOCK1):
        stuck("S-Memcpy", s, th, f"perspective mismatch: shared memory written from "
               f"{th.persp}")
    n = min(d.length, r.length)
    dreg.cells[d.off:d.off + n] = sreg.cells[r.off:r.off + n]
    th.focus = SKIP
    return "S-Memcpy"


def s_call(cfg: Config, th: ThreadState, s: Call) -> str:
    # S-Function-Call: Σ(f) = {[x_i : τ_i], s};  σ, Σ ⊢^π_π e_i ⇓ v_i;  ⇝ s with
    # η[x_i ↦ v_i]. The arguments are evaluated at the CALLER's perspective, ambient and
    # target alike (⊢^π_π, as printed and in Lemma A.8's case): a parameter's own
    # perspective (our extension, errata "function types and call arguments") says
    # where the value is bound, not where it is computed, so `f(partition_id)` passes the
    # caller's partition_id whatever the parameter's perspective is.
    fn = cfg.fns.get(s.fn)
    if fn is None:
        stuck("S-Function-Call", s, th, f"unbound variable: no function {s.fn}")
    if len(fn.params) != len(s.args):
        stuck("S-Function-Call", s, th, f"type mismatch: {s.fn} takes "
               f"{len(fn.params)} arguments, got {len(s.args)}")
    if cfg.fixed and fn.persp != th.persp:
        stuck("S-Function-Call", s, th, f"perspective mismatch: {s.fn} is at "
               f"{fn.persp}, called from code at {th.persp}")
    vals = []
    for prm, arg in zip(fn.params, s.args):
        tgt = cfg.persp_of(prm.persp)
        if isinstance(prm.type, ArrayType) and cfg.fixed:
            # a pointer argument is passed, not read: the array operand's value, which
            # T-Function-Call (fixed) requires to live at exactly the parameter's π_i,
            # whatever the code's π (read up would reject a narrower one)
            ptr, apersp = compile_ptr(cfg, arg, "S-Function-Call")(th, th.persp)
            if apersp != tgt:
                stuck("S-Function-Call", s, th, f"perspective mismatch: {prm.name} of "
                       f"{s.fn} is a pointer at {tgt}; the argument lives at {apersp}")
            vals.append(Binding(ptr, tgt, prm.type))
            continue
        v = compile_expr(cfg, arg)(th, th.persp)
        vals.append(Binding(v, tgt, prm.type))
    if cfg.fixed:
        # Note: the body gets its own η (errata "function calls clobber η")
        th.frames.append(CallFrame(fn, th.env, s))
        th.env = {}
    for prm, b in zip(fn.params, vals):
        th.env[prm.name] = b
    th.focus = fn.body
    return "S-Function-Call"


DATA_AXIOMS: dict[type, Axiom] = {
    ArrAssign: s_arr_assn, Free: s_free, Alloc: s_alloc, Partition: s_partition,
    Claim: s_claim, Lower: s_lower, SyncInit: s_sync_init, SyncDec: s_sync_dec,
    SyncWait: s_sync_wait, AsyncMemcpy: s_async_memcpy, Memcpy: s_memcpy, Call: s_call,
}
