"""Statement conversion GPU IR -> AMIR: Exo-GPU (seed 000) Section 5.2, Figure 5 (T_s)
with the program conversion of Section 5.2.4. Entry: `convert(proc, defines)`.

T_s is `_stmt`, one match arm per row of Figure 5, labelled with the row's name; the
access-level helpers (T_e, T_ex, T_smem, T_qin: Figures 17-18) and the instruction
argument conversion T_arg (Figures 19-20) are in interpreter/amir/from_gpuir_args.py, the
thread mappings f_{s#} (Section 4) come from typing_rules/gpuir/collective.py.

Before T_s, Section 5.2 inlines window statements (here: lazily, each use of a window
is rewritten to the underlying variable by `args.resolve`) and inserts `free`
statements where a variable's lifetime ends (here: `_block` appends them, each
converted by `_free`). Every AMIR statement keeps, as `origin`, the span of the GPU IR
statement it came from; inserted frees carry the span of their allocation.

Conventions (paper -> Python):
  s : Stmt, s# : Stmt#          -> gpuir `Stmt`, amir `AStmt`; blocks are tuples
  T_s(s)                        -> `_stmt(s, scope)` (a list: `;`-sequences)
  ;_{e# ∈ S} S(e#)              -> a comprehension over the tuple S
  scope(s#), f_{s#}             -> `Scope.threads` (`ThreadMap`, `.cpu` for CPU scope)
  τ_v^pre, τ_v^post, τ_v^free   -> `pre`, `post`, `FREE_VL`
  Qcs, Tcs                      -> T_qfull / T_qtmp of `cuda_stream_sync`
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

from gpusem.calculus.amir import ast as M
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir import instructions
from gpusem.calculus.gpuir.timelines import (
    VL,
    QualTL,
    Rules,
    SyncTL,
    sync_tl,
    t_qarr,
    t_qfull,
    t_qtmp,
    t_tr,
)
from gpusem.interpreter.amir.from_gpuir_args import (
    Scope,
    VarInfo,
    resolve,
    t_arg,
    t_e,
    t_ex,
    t_ex_all,
    t_qin,
    t_smem,
)
from gpusem.typing_rules.gpuir.collective import (
    Analysis,
    ThreadMapping,
    analyse_collectives,
    root_mapping,
)

# Figure 5's caption: τ_v^free = temporally-ordered.
FREE_VL = VL.TEMPORALLY_ORDERED
NONE: frozenset[QualTL] = frozenset()


def convert(proc: G.Proc, defines: Mapping[str, int] | None = None, *,
            rules: Rules = "fixed", analysis: Analysis | None = None) -> M.AProc:
    """Section 5.2.4: `proc y*, (x : τ_x)*; do s` -> `proc y*; do T_s(s)`.

    The thread mappings f_{s#} come from the collective analysis of `proc` under
    `defines` (pass `analysis` to reuse one already made); its first error, if any,
    is raised (IllTyped): a program without a consistent tiling has no AMIR form.
    AMIR keeps control expressions symbolic; the machine evaluates them.

    Note: each data parameter gets an `Alloc` at entry (CPU scope). Section 5.2.4
    drops data parameters, leaving ρ undefined on them; the Alloc makes ρ(x, n) =
    (∅, ∅, (0, 0)) for every cell, which is what the machine would assume, and lets
    a whole-array window `x[:]` of a parameter resolve its extent. See errata
    "parameters get an Alloc"."""
    if analysis is None:
        analysis = analyse_collectives(proc, defines or {})
    if analysis.errors:
        raise analysis.errors[0]
    scope = Scope(vars={}, threads=M.CPU, rules=rules, analysis=analysis)
    head: list[M.AStmt] = []
    for p in proc.data_params:
        scope.vars[p.name] = VarInfo(p.name, p.mem.name, False, len(p.shape))
        head.append(M.Alloc(p.name, p.shape, False, origin=p.span))
    body = _block(proc.body, scope)
    params = tuple(p.name for p in proc.ctrl_params)
    return M.AProc(proc.name, params, tuple(head + body),
                   strict_witness=rules == "fixed")


# ------------------------------------------------------------------------ blocks


def _block(body: tuple[G.Stmt, ...], scope: Scope) -> list[M.AStmt]:
    """T_s(s1; s2) = T_s(s1); T_s(s2) (Seq), followed by the frees of the variables
    the block allocated.

    Note: where frees go is left to "a separate compiler pass" (Section 3.4). A
    variable lives until the end of the block that declares it (the scope of its
    name), so its free is the block's last statement, executed by the threads that
    executed the allocation; frees run in reverse order of allocation. See errata
    "where frees are inserted"."""
    scope = Scope(dict(scope.vars), dict(scope.windows), scope.threads, scope.rules,
                  scope.analysis)
    out: list[M.AStmt] = []
    allocated: list[tuple[G.Alloc | G.BarrierAlloc, Scope]] = []
    for s in body:
        out += _stmt(s, scope)
        if isinstance(s, (G.Alloc, G.BarrierAlloc)):
            allocated.append((s, scope))
    for alloc, at in reversed(allocated):
        out += _free(alloc, at)
    return out


def _stmt(s: G.Stmt, scope: Scope) -> list[M.AStmt]:
    """T_s (Figure 5). `scope` is updated in place by declarations (Alloc,
    BarrierAlloc, WindowStmt), which scope over the rest of their block."""
    scope = _at(s, scope)
    o, th = s.span, scope.threads
    match s:
        case G.For(mode=G.LoopMode.SEQ):  # seq loop
            return [M.Loop(s.var, s.lo, s.hi, tuple(_block(s.body, scope)), origin=o)]
        case G.For(mode=G.LoopMode.CUDA_TASKS):  # cuda_tasks loop
            body = [M.IncTaskID(origin=o), *_block(s.body, scope)]
            return [M.Loop(s.var, s.lo, s.hi, tuple(body), origin=o)]
        case G.For(mode=G.LoopMode.CUDA_THREADS):  # cuda_threads loop
            return [M.Loop(s.var, s.lo, s.hi, tuple(_block(s.body, scope)), origin=o)]
        case G.For():  # unreachable: LoopMode has the three modes above
            raise AssertionError(f"unknown loop mode: {s.mode}")
        case G.If(cond=b):  # if b then s
            return [M.Guard(b, tuple(_block(s.body, scope)), origin=o)]
        case G.Assign() | G.Reduce():  # x[c*] ◇ e
            return _assign(s, scope)
        case G.CudaDeviceFunction():  # with CudaDeviceFunction(n, e_w*) do s
            return _device_function(s, scope)
        case G.CudaWarps():  # with CudaWarps(n, n, r) do s
            return [M.Guard(G.BConst(True), tuple(_block(s.body, scope)), origin=o)]
        case G.InstrCall():  # g(c*, e*) >> e_z
            return _instr_call(s, scope)
        case G.Alloc():  # x : τ_x[c*] @ π_d
            scope.vars[s.name] = VarInfo(s.name, s.mem.name, False, len(s.shape))
            return [M.Alloc(s.name, s.shape, False, origin=o)]
        case G.BarrierAlloc():  # z : τ_z[c*] @ π_z
            scope.vars[s.name] = VarInfo(s.name, s.mem.name, True, len(s.shape))
            return [M.Alloc(s.name, s.shape, True, origin=o)]
        case G.Free():
            raise BadInput(f"{o}: free statements are inserted by the compiler, not "
                           f"written (Section 3.4): free {s.name}")
        case G.WindowStmt():  # x = x[w*] @ π_w: inlined into its uses (§5.2 (i))
            scope.windows[s.name] = resolve(s.source, scope)
            return []
        case G.Fence(pre=pre, post=post):  # Fence(τ_s^pre, τ_s^post)
            a_tl, b_tl = _sync_tl(pre, s, scope), _sync_tl(post, s, scope)
            return [M.Fence(t_tr(a_tl), t_qfull(a_tl), t_qfull(b_tl), t_qtmp(b_tl), th,
                            origin=o)]
        case G.Arrive():  # Arrive(τ_s, n) >> e_z*
            return _arrive(s, scope)
        case G.Await():  # Await(e_z, τ_s, n)
            return _await(s, scope)
        case _:
            assert_never(s)


def _at(s: G.Stmt, scope: Scope) -> Scope:
    """The scope with f_{s#} of statement s: the thread mapping the collective
    analysis (typing_rules/gpuir/collective.py, Section 4) derived for it. The dicts
    are shared, so declarations made through the result stay visible."""
    assert scope.analysis is not None                    # convert always sets it
    return Scope(scope.vars, scope.windows, thread_map(scope.analysis.mapping(s)),
                 scope.rules, scope.analysis)


def thread_map(m: ThreadMapping | None) -> M.ThreadMap:
    """ThreadMapping (one run of `length` threads at `offset(σ)` in each of `ctas`
    CTAs, blockDim apart) -> the AMIR box { start + k * stride }; None (CPU scope)
    -> 𝔾."""
    if m is None:
        return M.CPU
    if not m.simple:
        return _box_map(m)
    run = M.ThreadRange(_offset(m), m.length, 1)
    if m.ctas == 1:
        return M.ThreadMap((run,))
    return M.ThreadMap((M.ThreadRange(G.CInt(0), m.ctas, m.launch.block_dim), run))


def _offset(m: ThreadMapping) -> G.CExpr:
    """offset(σ) = base + Σ (σ[y] - lo_y) * stride_y, the mapping's first thread."""
    start: G.CExpr = G.CInt(m.base)
    for y, lo, stride in m.terms:
        it: G.CExpr = G.CVar(y)
        if not (isinstance(lo, G.CInt) and lo.value == 0):
            it = G.CBin("-", it, lo)
        if stride != 1:
            it = G.CBin("*", it, G.CInt(stride))
        start = it if start == G.CInt(0) else G.CBin("+", start, it)
    return start


def _box_map(m: ThreadMapping) -> M.ThreadMap:
    """A strided collective (quadpair, cuda_threads_strided, ...): one AMIR thread
    range per dimension of its box, the offset on the first (Section 4: the threads
    Σ_m (o_m(σ) + k_m) * P_m)."""
    start = _offset(m)
    dims = [d for d in m.dims if d.box > 1] or [m.dims[-1]]
    ranges = [M.ThreadRange(start if k == 0 else G.CInt(0), d.box, d.pitch)
              for k, d in enumerate(dims)]
    return M.ThreadMap(tuple(ranges))


def _sync_tl(name: str, s: G.Stmt, scope: Scope) -> SyncTL:
    try:
        return sync_tl(name, scope.rules)
    except ValueError as err:
        raise BadInput(f"{s.span}: {err}") from None


# ------------------------------------------------------------------ Figure 5 rows


def _assign(s: G.Assign | G.Reduce, scope: Scope) -> list[M.AStmt]:
    """x[c*] ◇ e, ◇ ∈ {=, +=}: check and record every read of e, then check, clear
    and record the write of x[c*]. τ_v^post = fully_ordered; τ_v^pre =
    fully_ordered for +=, temporally_ordered for =.

    Note: Figure 5 also uses τ_v^pre for the reads of e, which would let a plain
    assignment read a value that is only temporally ordered after its write (no
    memory fence). Section 3.4 says a read needs the *full* timeline set, and Figure
    19 checks a read-only argument with fully_ordered; `--rules fixed` does the same
    here, `--rules paper` follows Figure 5 literally. See errata "Figure 5 reads"."""
    o, th = s.span, scope.threads
    pre = VL.FULLY_ORDERED if isinstance(s, G.Reduce) else VL.TEMPORALLY_ORDERED
    post = VL.FULLY_ORDERED
    read_vl = VL.FULLY_ORDERED if scope.rules == "fixed" else pre
    out: list[M.AStmt] = []
    for e1 in t_ex(s.rhs, scope):
        q = t_qin(e1, scope)
        out += [M.CheckMutates(read_vl, False, e1, frozenset({q}), th, origin=o),
                M.RecordRead(post, False, e1, q, NONE, (), th, origin=o)]
    dest = G.DRead(s.name, tuple(G.WPoint(c, span=s.span) for c in s.idx), span=o)
    for e2 in t_ex(dest, scope):
        q = t_qin(e2, scope)
        out += [M.CheckReads(pre, False, e2, frozenset({q}), th, origin=o),
                M.CheckMutates(pre, False, e2, frozenset({q}), th, origin=o),
                M.ClearReads(e2, origin=o),
                M.ClearMutates(e2, origin=o),
                M.RecordMutate(post, False, e2, q, NONE, (), th, origin=o)]
    return out


def _device_function(s: G.CudaDeviceFunction, scope: Scope) -> list[M.AStmt]:
    """Fence(true, Qcs ∪ {cpu_in_order_qual}, Qcs, Tcs); T_s(s); Fence(true, Qcs,
    Qcs, Tcs): the kernel launch and the stream serialisation, both at CPU scope
    (they are outside the device function's body: g = 𝔾). Qcs and Tcs come from the
    rules' timeline table: under `--rules fixed` cuda_stream_sync is full on every
    timeline (errata "cuda_stream_sync and the kernel bracket")."""
    o = s.span
    cs = _sync_tl("cuda_stream_sync", s, scope)
    qcs, tcs = t_qfull(cs), t_qtmp(cs)
    return [M.Fence(True, qcs | {QualTL.CPU_IN_ORDER}, qcs, tcs, M.CPU, origin=o),
            *_block(s.body, scope),
            M.Fence(True, qcs, qcs, tcs, M.CPU, origin=o)]


def _instr_call(s: G.InstrCall, scope: Scope) -> list[M.AStmt]:
    """g(c*, e*) >> e_z: record a read of the trailing barrier, then T_arg for each
    data parameter (control arguments are ignored).

    Note: Figure 5's row is cut short ("⋮") and gives the barrier's RecordRead the
    timeline ∅, which is not a QualTL. We use T_qin of the barrier (as the Await row
    does) and continue the row with ;_i T_arg(g.p_i, e_i, e_z), the only reading
    consistent with Section 5.2.3. See errata "Figure 5 instruction row"."""
    o, th = s.span, scope.threads
    g = instructions.lookup(s.instr)
    if g is None:
        raise BadInput(f"{o}: unknown instruction: {s.instr}")
    if len(s.args) != len(g.params):
        raise BadInput(f"{o}: {g.name} takes {len(g.params)} argument(s), "
                       f"got {len(s.args)}")
    out: list[M.AStmt] = []
    if g.stream:
        # Note: a stream-ordered API call (cudaMemcpyAsync) runs on the stream after
        # everything the host did before issuing it, as a kernel launch does (Figure
        # 5's bracket puts cpu_in_order_qual in its pre-set): the CPU -> stream
        # ordering of the call. See errata "Stream-ordered host copies".
        strm = frozenset({QualTL.CPU_CUDA_STREAM})
        out.append(M.Fence(True, frozenset({QualTL.CPU_IN_ORDER}), strm, strm, M.CPU,
                           origin=o))
    if s.barrier is not None:
        zs = t_e(s.barrier, scope)
        for z in t_ex(s.barrier, scope):
            out.append(M.RecordRead(VL.FULLY_ORDERED, _cvg(scope), z,
                                    t_qin(z, scope), NONE, zs, th, origin=o))
    for p, arg in zip(g.params, s.args):
        if p.kind != "data" or isinstance(arg, G.DConst):
            continue  # T_e(d) = ∅; control arguments are not accesses
        if not isinstance(arg, G.DRead):
            raise BadInput(f"{o}: {g.name}: argument {p.name} must be a data window")
        out += t_arg(p, arg, s.barrier, scope, o)
    return out


def _cvg(scope: Scope) -> bool:
    """The t flag of the RecordRead a barrier operation makes on its barrier.

    Note: Figure 5 writes `false` (one record per executing thread). Then the read
    that the last Await of an mbarrier makes is visible only to each awaiting thread
    itself, and no synchronisation after it exists to order it before the barrier's
    free: Section 2.1's own split-barrier variant of the Fence example would be
    rejected. The barrier object is made to be accessed concurrently by the threads of
    the collective executing the Arrive/Await; `--rules fixed` records the access as
    convergent (t = true, one record for all of them, as Exo-GPU's implementation
    does); `--rules paper` keeps `false`. See errata "barrier accesses are
    convergent"."""
    return scope.rules == "fixed"


def _arrive(s: G.Arrive, scope: Scope) -> list[M.AStmt]:
    """Arrive(τ_s, n) >> e_z*: record a read of each non-exempt barrier on
    T_qarr(τ_s), then Arrive(T_tr(τ_s), T_qfull(τ_s), T_e(e_z*)).

    Note: AMIR's Arrive counts one arrival per execution; the GPU IR count `n` has no
    AMIR counterpart in Figure 5 and is dropped (errata "Arrive count")."""
    o, th = s.span, scope.threads
    tl = _sync_tl(s.tl, s, scope)
    zs: list[M.Access] = []
    for z in s.barriers:
        zs += [a for a in t_e(z, scope) if a not in zs]
    out: list[M.AStmt] = [
        M.RecordRead(VL.FULLY_ORDERED, _cvg(scope), z, t_qarr(tl), NONE, (), th,
                     origin=o)
        for z in t_ex_all(s.barriers, scope)
    ]
    out.append(M.Arrive(t_tr(tl), t_qfull(tl), tuple(zs), th, origin=o))
    return out


def _await(s: G.Await, scope: Scope) -> list[M.AStmt]:
    """Await(e_z, τ_s, n): record a read of the barrier on T_qin, then
    Await(T_e(e_z), T_qfull(τ_s), T_qtmp(τ_s), n); T_e(e_z) is the one access of
    the barrier expression."""
    o, th = s.span, scope.threads
    tl = _sync_tl(s.tl, s, scope)
    out: list[M.AStmt] = [
        M.RecordRead(VL.FULLY_ORDERED, _cvg(scope), z, t_qin(z, scope), NONE, (), th,
                     origin=o)
        for z in t_ex(s.barrier, scope)
    ]
    (z,) = t_e(s.barrier, scope)
    out.append(M.Await(z, t_qfull(tl), t_qtmp(tl), s.n, th, origin=o))
    return out


def _free(alloc: G.Alloc | G.BarrierAlloc, scope: Scope) -> list[M.AStmt]:
    """free x: every shared-memory cell of x must be temporally ordered before the
    free (CheckReads and CheckMutates with τ_v^free on T_qin); free z: in addition
    the arrive and await counts must agree (CheckBarrier). Then the AMIR `Free`
    extension drops the records (calculus/amir/ast.py).

    Note: the checks run on every thread of the cluster (of the current task), not
    only on the collective that allocated x: Section 4.2 forbids *any* thread of the
    cluster to pass an SMEM free before all accesses retired, because freed shared
    memory may be reused at once by any of them (the paper calls this possibly
    over-conservative for CTA-local variables). See errata "where frees are
    inserted"."""
    o = alloc.span
    assert scope.analysis is not None                    # convert always sets it
    mapping = scope.analysis.mapping(alloc)
    th = M.CPU if mapping is None else thread_map(root_mapping(mapping.launch))
    at = Scope(scope.vars, scope.windows, th, scope.rules, scope.analysis)
    whole = G.ZRead(alloc.name, span=o) if isinstance(alloc, G.BarrierAlloc) \
        else G.DRead(alloc.name, span=o)
    out: list[M.AStmt] = []
    if isinstance(alloc, G.BarrierAlloc):  # free z
        out += [M.CheckBarrier(z, origin=o) for z in t_e(whole, scope)]
    for e in t_smem(whole, scope):  # free x (and the SMEM part of free z)
        q = frozenset({t_qin(e, at)})
        out += [M.CheckReads(FREE_VL, False, e, q, th, origin=o),
                M.CheckMutates(FREE_VL, False, e, q, th, origin=o)]
    out.append(M.Free(alloc.name, origin=o))
    return out
