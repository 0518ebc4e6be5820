"""T_s (Figure 5 of Exo-GPU): one test per row, the expected AMIR written by hand
from the figure (in the printed form of shared/spec/gpuir-syntax.md; short timeline
names are Figure 16's columns), plus the preprocessing of Section 5.2 (windows, frees)
and the decisions recorded in proofs_notes/errata.md. Figure 19 (T_arg) is in
test_conversion_args.py."""

from __future__ import annotations

import textwrap

import pytest
from gpusem.calculus.amir import ast as M
from gpusem.calculus.amir.parser import parse_proc as parse_amir
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir.parser import parse_proc
from gpusem.calculus.gpuir.timelines import QualTL, sync_tl
from gpusem.calculus.gpuir.walk import walk
from gpusem.calculus.span import NO_SPAN
from gpusem.interpreter.amir.from_gpuir import convert

PARAMS = "N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear"


def kernel_source(body: str, *, params: str = PARAMS, launch: str = "blockDim=128",
                  tasks: str = "N / 128") -> str:
    """`body` (statements at CTA scope, one task) inside a one-task-loop kernel."""
    inner = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 12)
    return (f"proc p({params}):\n"
            f"    with CudaDeviceFunction({launch}):\n"
            f"        for task in cuda_tasks(0, {tasks}):\n"
            f"{inner}\n")


def convert_src(source: str, rules: str = "fixed") -> M.AProc:
    return convert(parse_proc(source, "t.gpuir"), {"N": 256}, rules=rules)


def task_body(prog: M.AProc) -> tuple[M.AStmt, ...]:
    """The task's statements after its IncTaskID (the proc body is Alloc(A),
    Alloc(B), Fence, the task loop, Fence)."""
    loop = next(s for s in prog.body if isinstance(s, M.Loop)
                and isinstance(s.body[0], M.IncTaskID))
    return loop.body[1:]


def kernel(body: str, rules: str = "fixed", **kw) -> tuple[M.AStmt, ...]:
    return task_body(convert_src(kernel_source(body, **kw), rules))


def amir(text: str, barriers: tuple[str, ...] = ()) -> tuple[M.AStmt, ...]:
    """Hand-written AMIR statements; names in `barriers` are declared first (so their
    accesses are barrier accesses) and dropped from the result."""
    decls = [f"Alloc({z}, barrier)" for z in barriers]
    lines = decls + textwrap.dedent(text).strip("\n").splitlines()
    prog = parse_amir("proc q():\n" + "\n".join("    " + ln for ln in lines) + "\n")
    return prog.body[len(decls):]


def loop_body(stmts, index: int = 0) -> tuple[M.AStmt, ...]:
    loops = [s for s in stmts if isinstance(s, (M.Loop, M.Guard))]
    return loops[index].body


IN_ORDER_TEMP = "{strm, cuda1, cuda2, Sm80, tmaS, tmaG, wgA, wgD, wgS, wg0}"

# ------------------------------------------------------------------ structural rows


def test_seq_is_concatenation():
    """T_s(s1; s2) = T_s(s1); T_s(s2)."""
    one = loop_body(kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                           "    B[t] = A[t]"))
    two = loop_body(kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                           "    A[t] = 1.0"))
    both = loop_body(kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                            "    B[t] = A[t]\n    A[t] = 1.0"))
    assert both == one + two


def test_seq_loop_row():
    """for y in seq(lo, hi) do s -> for y in loop(lo, hi) do T_s(s)."""
    (outer,) = kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                      "    for i in seq(2, 5):\n        B[t] = 1.0")
    (inner,) = outer.body
    assert isinstance(inner, M.Loop) and inner.var == "i"
    assert inner.lo == G.CInt(2) and inner.hi == G.CInt(5)
    assert not any(isinstance(s, M.IncTaskID) for s in inner.body)
    assert len(inner.body) == 5  # the write of B[t]: Figure 5's five destination stmts


def test_cuda_tasks_row_increments_task_id():
    """for y in cuda_tasks(lo, hi) do s -> for y in loop(lo, hi) do (IncTaskID; T_s(s)),
    at every level of a cuda_tasks nest."""
    src = (f"proc p({PARAMS}):\n    with CudaDeviceFunction(blockDim=128):\n"
           "        for i in cuda_tasks(0, 2):\n            for j in cuda_tasks(0, N / 256):\n"
           "                for t in cuda_threads(0, 128, unit=cuda_thread):\n"
           "                    B[(2 * j + i) * 128 + t] = 0.0\n")
    prog = convert_src(src)
    outer = next(s for s in prog.body if isinstance(s, M.Loop))
    assert (outer.var, outer.lo, outer.hi) == ("i", G.CInt(0), G.CInt(2))
    assert isinstance(outer.body[0], M.IncTaskID)
    inner = outer.body[1]
    assert isinstance(inner, M.Loop) and inner.var == "j"
    assert isinstance(inner.body[0], M.IncTaskID)


def test_cuda_threads_row():
    """for y in cuda_threads(lo, hi, τ_u) do s -> for y in loop(lo, hi) do T_s(s); the
    body runs on the iteration's collective (here: thread y)."""
    (loop,) = kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n    B[t] = 2.0")
    assert (loop.var, loop.lo, loop.hi) == ("t", G.CInt(0), G.CInt(128))
    assert loop.body == amir("""
        CheckReads(temporally_ordered, false, B[t], {cuda2}) @ threads(t)
        CheckMutates(temporally_ordered, false, B[t], {cuda2}) @ threads(t)
        ClearReads(B[t])
        ClearMutates(B[t])
        RecordMutate(fully_ordered, false, B[t], cuda2, {}, {}) @ threads(t)
    """)


def test_if_row():
    """if b then s -> if b then T_s(s)."""
    (loop,) = kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                     "    if t < 64 and task == 0:\n        B[t] = 2.0")
    (guard,) = loop.body
    assert isinstance(guard, M.Guard)
    assert guard.cond == G.BLog("and", G.BRel("<", G.CVar("t"), G.CInt(64)),
                                G.BRel("==", G.CVar("task"), G.CInt(0)))
    assert len(guard.body) == 5


# -------------------------------------------------------------- assignment rows


def test_assign_rows():
    """x[c*] = e: for each e1 ∈ T_ex(e) CheckMutates + RecordRead; for x[c*]
    CheckReads, CheckMutates (τ_v^pre = temporally_ordered), ClearReads,
    ClearMutates, RecordMutate (τ_v^post = fully_ordered). Reads are checked
    fully_ordered under --rules fixed (errata "Figure 5 reads")."""
    (loop,) = kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                     "    B[t] = A[t] * A[127 - t] + 1.0")
    assert loop.body == amir("""
        CheckMutates(fully_ordered, false, A[t], {cuda2}) @ threads(t)
        RecordRead(fully_ordered, false, A[t], cuda2, {}, {}) @ threads(t)
        CheckMutates(fully_ordered, false, A[127 - t], {cuda2}) @ threads(t)
        RecordRead(fully_ordered, false, A[127 - t], cuda2, {}, {}) @ threads(t)
        CheckReads(temporally_ordered, false, B[t], {cuda2}) @ threads(t)
        CheckMutates(temporally_ordered, false, B[t], {cuda2}) @ threads(t)
        ClearReads(B[t])
        ClearMutates(B[t])
        RecordMutate(fully_ordered, false, B[t], cuda2, {}, {}) @ threads(t)
    """)


def test_reduce_row():
    """x[c*] += e: τ_v^pre = fully_ordered for the destination."""
    (loop,) = kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                     "    B[t] += A[t]")
    assert loop.body[2:] == amir("""
        CheckReads(fully_ordered, false, B[t], {cuda2}) @ threads(t)
        CheckMutates(fully_ordered, false, B[t], {cuda2}) @ threads(t)
        ClearReads(B[t])
        ClearMutates(B[t])
        RecordMutate(fully_ordered, false, B[t], cuda2, {}, {}) @ threads(t)
    """)


def test_assign_paper_rules_read_check():
    """--rules paper: Figure 5 as printed checks the reads of `=` with τ_v^pre
    (temporally_ordered), of `+=` with fully_ordered."""
    body = "for t in cuda_threads(0, 128, unit=cuda_thread):\n    B[t] {op} A[t]"
    (plain,) = kernel(body.format(op="="), rules="paper")
    (reduce,) = kernel(body.format(op="+="), rules="paper")
    assert plain.body[0].vl.name == "TEMPORALLY_ORDERED"
    assert reduce.body[0].vl.name == "FULLY_ORDERED"


def test_t_e_drops_constants_and_duplicates():
    """T_e is a set: a read twice is one access; literals contribute nothing."""
    (loop,) = kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                     "    B[t] = A[t] + A[t] * 3.0 - 1.0")
    reads = [s for s in loop.body if isinstance(s, M.RecordRead)]
    assert [r.access.name for r in reads] == ["A"]


def test_t_qin_cases():
    """T_qin: registers -> cuda_in_order_rmem_qual, other CUDA memory ->
    cuda_in_order_ram_qual, CPU-scoped statements -> cpu_in_order_qual."""
    src = ("proc p(N: size, H: f32[N] @ DRAM, A: f32[N] @ CudaGmemLinear):\n"
           "    for i in seq(0, N):\n        H[i] = 1.0\n"
           "    with CudaDeviceFunction(blockDim=128):\n"
           "        for task in cuda_tasks(0, N / 128):\n"
           "            for t in cuda_threads(0, 128, unit=cuda_thread):\n"
           "                r: f32 @ CudaRmem\n                r = A[t]\n")
    prog = convert_src(src)
    cpu_loop = prog.body[2]
    assert {s.qual for s in cpu_loop.body if isinstance(s, M.RecordMutate)} == {
        QualTL.CPU_IN_ORDER}
    assert all(s.threads == M.CPU for s in cpu_loop.body if hasattr(s, "threads"))
    thread_loop = loop_body(task_body(prog))
    muts = {s.access.name: s.qual for s in thread_loop if isinstance(s, M.RecordMutate)}
    reads = {s.access.name: s.qual for s in thread_loop if isinstance(s, M.RecordRead)}
    assert muts == {"r": QualTL.CUDA_IN_ORDER_RMEM}
    assert reads == {"A": QualTL.CUDA_IN_ORDER_RAM}


def test_sync_exempt_accesses_dropped():
    """T_ex removes accesses to sync-exempt memory (CudaGridConstant)."""
    params = PARAMS + ", C: f32[4] @ CudaGridConstant"
    (loop,) = kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                     "    B[t] = C[2] + A[t]", params=params)
    assert {s.access.name for s in loop.body if hasattr(s, "access")} == {"A", "B"}


# --------------------------------------------------------------- device scopes


@pytest.mark.parametrize("rules", ["fixed", "paper"])
def test_device_function_row(rules):
    """with CudaDeviceFunction do s -> Fence(true, Qcs ∪ {cpu}, Qcs, Tcs); T_s(s);
    Fence(true, Qcs, Qcs, Tcs), both at CPU scope, Qcs/Tcs the full/temporal sets of
    cuda_stream_sync (under the rules' timeline table)."""
    prog = convert_src(kernel_source("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                                     "    B[t] = 0.0"), rules)
    cs = sync_tl("cuda_stream_sync", rules)
    first, loop, last = prog.body[2:]
    assert first == M.Fence(True, cs.full | {QualTL.CPU_IN_ORDER}, cs.full, cs.temporal,
                            M.CPU)
    assert last == M.Fence(True, cs.full, cs.full, cs.temporal, M.CPU)
    assert isinstance(loop, M.Loop)


def test_cuda_warps_row():
    """with CudaWarps(lo, hi, r) do s -> if true then T_s(s); the body runs on the
    named warps (warp_config: producer = warp 0, consumer = warps 1-2, unused 3)."""
    launch = ('warp_config=[CudaWarpConfig("producer", 1, 0, 0), '
              'CudaWarpConfig("consumer", 2, 0, 0), CudaWarpConfig("unused", 1, 0, 0)]')
    stmts = kernel('with CudaWarps(name="consumer"):\n'
                   "    for t in cuda_threads(0, 64, unit=cuda_thread):\n"
                   "        B[t] = 1.0\n"
                   '    Fence(cuda_in_order, cuda_in_order)', launch=launch)
    (guard,) = stmts
    assert isinstance(guard, M.Guard) and guard.cond == G.BConst(True)
    loop, fence = guard.body
    assert fence.threads == M.ThreadMap((M.ThreadRange(G.CInt(32), 64, 1),))
    assert loop.body[-1].threads == amir(
        "RecordMutate(fully_ordered, false, B[t], cuda2, {}, {}) @ threads(32 + t)"
    )[0].threads


def test_thread_maps():
    """f_{s#} from the collective analysis: a CTA of a cluster, a thread in it; an
    intra-CTA unit at cluster scope runs in every CTA (errata "Thread mappings")."""
    stmts = kernel("for c in cuda_threads(0, 2, unit=cuda_cta_in_cluster):\n"
                   "    for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                   "        B[t] = 1.0\n"
                   "for w in cuda_threads(0, 4, unit=cuda_warp):\n"
                   "    Fence(cuda_in_order, cuda_in_order)",
                   launch="blockDim=128, clusterDim=2", tasks="N / 256")
    (inner,) = stmts[0].body
    expect = amir("Fence(true, {}, {}, {}) @ threads(c * 128 + t)")[0].threads
    assert inner.body[0].threads == expect
    (fence,) = stmts[1].body
    assert fence.threads == amir("Fence(true, {}, {}, {}) @ threads(0:2:128, w * 32 : 32)"
                                 )[0].threads


def test_collective_analysis_errors_raised():
    """A loop whose collectives do not fit has no thread mapping: IllTyped."""
    with pytest.raises(IllTyped):
        kernel("for w in cuda_threads(0, 8, unit=cuda_warp):\n    Fence(cuda_in_order, "
               "cuda_in_order)")


# ------------------------------------------------------------- allocation rows


def test_alloc_rows_and_params_allocated():
    """x : τ[c*] @ π_d -> Alloc(x[c*]); z : barrier[c*] @ π_z -> Alloc(z[c*]); each
    data parameter is allocated at entry (errata "Parameters get an Alloc")."""
    prog = convert_src(kernel_source("x: f32[4, N / 64] @ CudaSmemLinear\n"
                                     "z: barrier[2] @ CudaMbarrier"))
    assert prog.body[:2] == (M.Alloc("A", (G.CVar("N"),)), M.Alloc("B", (G.CVar("N"),)))
    x, z = task_body(prog)[:2]
    assert x == M.Alloc("x", (G.CInt(4), G.CBin("/", G.CVar("N"), G.CInt(64))))
    assert z == M.Alloc("z", (G.CInt(2),), barrier=True)


def test_free_smem_data():
    """free x for shared memory: CheckReads and CheckMutates (τ_v^free =
    temporally_ordered, T_qin) on x[:*] by the allocating threads, then Free(x); frees
    run in reverse order of allocation, at the end of the declaring block."""
    stmts = kernel("x: f32[4, 8] @ CudaSmemLinear\ny: f32[16] @ CudaSmemLinear\n"
                   "Fence(cuda_in_order, cuda_in_order)")
    assert stmts[3:] == amir("""
        CheckReads(temporally_ordered, false, y[:], {cuda2}) @ threads(0 : 128)
        CheckMutates(temporally_ordered, false, y[:], {cuda2}) @ threads(0 : 128)
        Free(y)
        CheckReads(temporally_ordered, false, x[:, :], {cuda2}) @ threads(0 : 128)
        CheckMutates(temporally_ordered, false, x[:, :], {cuda2}) @ threads(0 : 128)
        Free(x)
    """)


def test_free_smem_checked_by_the_whole_cluster():
    """Section 4.2: no thread of the cluster may pass an SMEM free before every access
    retired, so a CTA-local allocation's free is checked for all clusterDim x blockDim
    threads, not only for the CTA that allocated it."""
    (loop,) = kernel("for c in cuda_threads(0, 2, unit=cuda_cta_in_cluster):\n"
                     "    x: f32[4] @ CudaSmemLinear\n"
                     "    Fence(cuda_in_order, cuda_in_order)",
                     launch="blockDim=128, clusterDim=2", tasks="N / 256")
    alloc, fence, reads, mutates, free = loop.body
    assert alloc == M.Alloc("x", (G.CInt(4),))
    assert fence.threads == amir("Fence(true, {}, {}, {}) @ threads(c * 128 : 128)"
                                 )[0].threads
    assert (reads, mutates, free) == amir("""
        CheckReads(temporally_ordered, false, x[:], {cuda2}) @ threads(0 : 256)
        CheckMutates(temporally_ordered, false, x[:], {cuda2}) @ threads(0 : 256)
        Free(x)
    """)


def test_free_register_data_has_no_checks():
    """T_smem of a register array is empty: only the Free."""
    (loop,) = kernel("for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                     "    r: f32[2] @ CudaRmem\n    r[0] = 1.0")
    assert loop.body[-1] == M.Free("r")
    assert not any(isinstance(s, M.CheckReads) and s.access.coords
                   and s.access.coords[0] == G.WInterval(None, None) for s in loop.body)


def test_free_barriers():
    """free z: CheckBarrier on every barrier; the CheckReads/CheckMutates of an mbarrier
    (shared memory); none for a commit group (not shared memory)."""
    stmts = kernel("m: barrier @ CudaMbarrier\ncg: barrier @ CudaCommitGroup")
    assert stmts[2:] == amir("""
        CheckBarrier(cg)
        Free(cg)
        CheckBarrier(m)
        CheckReads(temporally_ordered, false, m, {cuda2}) @ threads(0 : 128)
        CheckMutates(temporally_ordered, false, m, {cuda2}) @ threads(0 : 128)
        Free(m)
    """, barriers=("m", "cg"))


def test_free_carries_allocation_span():
    prog = convert_src(kernel_source("x: f32[8] @ CudaSmemLinear"))
    *_, free = task_body(prog)
    assert free == M.Free("x") and free.origin.line == 4


def test_user_written_free_rejected():
    with pytest.raises(BadInput, match="free statements are inserted"):
        kernel("x: f32[8] @ CudaSmemLinear\nfree x")


# --------------------------------------------------------------- synchronisation


FENCE_PAIRS = [("cuda_in_order", "cuda_in_order"), ("Sm80_cp_async", "cuda_in_order"),
               ("wgmma_async", "cuda_generic_and_async"), ("cuda_temporal", "Sm80_generic"),
               ("tma_to_gmem_async", "empty_sync_tl")]


@pytest.mark.parametrize("pre,post", FENCE_PAIRS)
def test_fence_row(pre, post):
    """Fence(τ_s^pre, τ_s^post) -> Fence(T_tr(pre), T_qfull(pre), T_qfull(post),
    T_qtmp(post)), on the scope's threads."""
    (fence,) = kernel(f"Fence({pre}, {post})")
    a, b = sync_tl(pre), sync_tl(post)
    assert fence == M.Fence(a.transitive, a.full, b.full, b.temporal,
                            M.ThreadMap((M.ThreadRange(G.CInt(0), 128, 1),)))


def test_fence_row_by_hand():
    (fence,) = kernel("Fence(Sm80_cp_async, cuda_in_order)")
    assert (fence,) == amir(f"Fence(false, {{Sm80}}, {{cuda1, cuda2}}, {IN_ORDER_TEMP})"
                            " @ threads(0 : 128)")


def test_arrive_row():
    """Arrive(τ_s, n) >> e_z*: RecordRead(fully_ordered, t, e#, T_qarr(τ_s)) for
    each non-exempt barrier, then Arrive(T_tr, T_qfull, T_e(e_z*)); n is dropped.
    t = true under --rules fixed (errata "barrier accesses are convergent")."""
    stmts = kernel("m: barrier[2] @ CudaMbarrier\ncg: barrier @ CudaCommitGroup\n"
                   "for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                   "    Arrive(cuda_in_order, 1) >> m[1]\n"
                   "    Arrive(Sm80_cp_async, 1) >> m[0]\n"
                   "    Arrive(Sm80_cp_async, 1) >> cg")
    assert stmts[2].body == amir("""
        RecordRead(fully_ordered, true, m[1], cuda2, {}, {}) @ threads(t)
        Arrive(true, {cuda1, cuda2}, {m[1]}) @ threads(t)
        RecordRead(fully_ordered, true, m[0], Sm80, {}, {}) @ threads(t)
        Arrive(false, {Sm80}, {m[0]}) @ threads(t)
        Arrive(false, {Sm80}, {cg}) @ threads(t)
    """, barriers=("m", "cg"))


def test_await_row():
    """Await(e_z, τ_s, n): RecordRead(fully_ordered, t, e#, T_qin(e#)) for a
    non-exempt barrier, then Await(T_e(e_z), T_qfull(τ_s), T_qtmp(τ_s), n)."""
    stmts = kernel("m: barrier[2] @ CudaMbarrier\ncg: barrier @ CudaCommitGroup\n"
                   "for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                   "    Await(m[t % 2], cuda_in_order, -1)\n"
                   "    Await(cg, Sm80_cp_async, 0)")
    assert stmts[2].body == amir(f"""
        RecordRead(fully_ordered, true, m[t % 2], cuda2, {{}}, {{}}) @ threads(t)
        Await(m[t % 2], {{cuda1, cuda2}}, {IN_ORDER_TEMP}, -1) @ threads(t)
        Await(cg, {{Sm80}}, {{Sm80}}, 0) @ threads(t)
    """, barriers=("m", "cg"))


def test_barrier_reads_paper_rules():
    """--rules paper: Figure 5's `false` on the barrier reads of Arrive and Await."""
    stmts = kernel("m: barrier @ CudaMbarrier\n"
                   "for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                   "    Arrive(cuda_in_order, 1) >> m\n    Await(m, cuda_in_order, 0)",
                   rules="paper")
    reads = [s for s in stmts[1].body if isinstance(s, M.RecordRead)]
    assert len(reads) == 2 and not any(r.t for r in reads)


# ------------------------------------------------------------ instruction calls


def test_instr_call_row():
    """g(c*, e*) >> e_z: RecordRead of the trailing barrier (T_qin, e_z# = T_e(e_z)),
    then T_arg per data parameter in order (errata "Figure 5 instruction row"). The
    TMA load's dst is write-only and out of order, src read-only out of order."""
    params = "N: size, G2: f32[N, 16] @ CudaGmemLinear"
    stmts = kernel("s: f32[16, 16] @ CudaSmemLinear\nm: barrier @ CudaMbarrier\n"
                   "for t in cuda_threads(0, 1, unit=cuda_thread):\n"
                   "    Sm90_tma_load_2d_f32(s[:, :], G2[task * 16:task * 16 + 16, 0:16])"
                   " >> m", params=params, tasks="N / 16")
    assert stmts[2].body == amir("""
        RecordRead(fully_ordered, true, m, cuda2, {}, {m}) @ threads(t)
        CheckMutates(temporally_ordered, false, s[:, :], {tmaS}) @ threads(t)
        CheckReads(temporally_ordered, false, s[:, :], {tmaS}) @ threads(t)
        ClearReads(s[:, :])
        ClearMutates(s[:, :])
        RecordMutate(unordered, false, s[:, :], tmaS, {}, {m}) @ threads(t)
        CheckMutates(fully_ordered, false, G2[task * 16:task * 16 + 16, 0:16], {tmaS}) @ threads(t)
        RecordRead(unordered, false, G2[task * 16:task * 16 + 16, 0:16], tmaS, {}, {m}) @ threads(t)
    """, barriers=("m",))


def test_instr_call_control_args_ignored():
    """Control arguments (the shuffle's delta) are not accesses; a warp-convergent
    parameter (T_cvg) is checked and recorded with t = true for the whole warp."""
    stmts = kernel("for w in cuda_threads(0, 4, unit=cuda_warp):\n"
                   "    x: f32[32] @ CudaRmem\n    y: f32[32] @ CudaRmem\n"
                   "    for l in cuda_threads(0, 32, unit=cuda_thread):\n"
                   "        x[l] = 1.0\n"
                   "    cuda_shfl_down_f32(y[:], x[:], 16)")
    (loop,) = stmts
    call = loop.body[3:11]
    assert call == amir("""
        CheckMutates(temporally_ordered, true, y[:], {cuda1}) @ threads(w * 32 : 32)
        CheckReads(temporally_ordered, true, y[:], {cuda1}) @ threads(w * 32 : 32)
        ClearReads(y[:])
        ClearMutates(y[:])
        RecordMutate(fully_ordered, true, y[:], cuda1, {}, {}) @ threads(w * 32 : 32)
        CheckMutates(fully_ordered, true, x[:], {cuda1}) @ threads(w * 32 : 32)
        RecordRead(fully_ordered, true, x[:], cuda1, {}, {}) @ threads(w * 32 : 32)
        Free(y)
    """)


# -------------------------------------------------------------------- windows


def test_window_inlined_into_instruction_argument():
    """x_win = x[w*] @ π_w is inlined (Section 5.2 (i)): the TMA store through a
    tensor-map window accesses the underlying global array at the composed window."""
    params = "N: size, G2: f32[N, 64] @ CudaGmemLinear"
    stmts = kernel("s: f32[16, 16] @ CudaSmemLinear\n"
                   "gw = G2[task * 16:task * 16 + 16, :] @ Sm90_tensorMap(0, 16, 16)\n"
                   "for t in cuda_threads(0, 1, unit=cuda_thread):\n"
                   "    Sm90_tma_store_2d_f32(gw[:, 16:32], s[:, :])",
                   params=params, tasks="N / 16")
    (loop,) = [s for s in stmts if isinstance(s, M.Loop)]
    (dst,) = {s.access for s in loop.body if isinstance(s, M.RecordMutate)}
    assert dst == amir("ClearReads(G2[task * 16:task * 16 + 16, 16:32])")[0].access


def test_origins_are_gpuir_lines():
    """Every AMIR statement keeps the span of the GPU IR statement it came from."""
    src = kernel_source("x: f32[128] @ CudaSmemLinear\n"
                        "for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                        "    x[t] = A[t]\n"
                        "Fence(cuda_in_order, cuda_in_order)\n"
                        "for t in cuda_threads(0, 128, unit=cuda_thread):\n"
                        "    B[t] = x[127 - t]")
    lines = src.splitlines()
    prog = convert_src(src)
    for s in M.walk(prog.body):
        assert s.origin is not NO_SPAN, s
        text = lines[s.origin.line - 1].strip()
        match s:
            case M.RecordMutate(access=a) | M.ClearReads(access=a):
                assert text.startswith(a.name)
            case M.Fence(threads=th) if not th.cpu:
                assert text.startswith("Fence(")
            case M.IncTaskID():
                assert text.startswith("for task in cuda_tasks")


# ------------------------------------------------------------------- exhaustiveness

# One program per GPU IR statement class (STYLE 9: a new AST class without a
# conversion arm fails here, not in a user's hands).
SAMPLES = {
    G.For: "for i in seq(0, 2):\n    Fence(cuda_in_order, cuda_in_order)",
    G.CudaDeviceFunction: "",
    G.CudaWarps: "with CudaWarps(0, 1):\n    Fence(cuda_in_order, cuda_in_order)",
    G.If: "if task < 1:\n    Fence(cuda_in_order, cuda_in_order)",
    G.Assign: "for t in cuda_threads(0, 1, unit=cuda_thread):\n    B[t] = 1.0",
    G.Reduce: "for t in cuda_threads(0, 1, unit=cuda_thread):\n    B[t] += 1.0",
    G.WindowStmt: "w = A[0:16] @ Sm90_tensorMap(0, 16)",
    G.Alloc: "x: f32[4] @ CudaSmemLinear",
    G.BarrierAlloc: "z: barrier @ CudaMbarrier",
    G.Fence: "Fence(cuda_in_order, cuda_in_order)",
    G.Arrive: "z: barrier @ CudaMbarrier\nArrive(cuda_in_order, 1) >> z",
    G.Await: "z: barrier @ CudaMbarrier\nAwait(z, cuda_in_order, 0)",
    G.InstrCall: "x: f32[4] @ CudaSmemLinear\n"
                 "for t in cuda_threads(0, 1, unit=cuda_thread):\n"
                 "    cuda_copy_f32(x[0:4], A[0:4])",
}


@pytest.mark.parametrize("cls", [c for c in G.Stmt.__args__ if c is not G.Free],
                         ids=lambda c: c.__name__)
def test_every_statement_class_converts(cls):
    """Each GPU IR statement class has a T_s arm that produces well-formed AMIR (the
    printed form parses back). `free` is the one form users may not write."""
    from gpusem.calculus.amir.printer import print_proc

    text = kernel_source(SAMPLES[cls] or "Fence(cuda_in_order, cuda_in_order)")
    assert any(isinstance(s, cls) for s in walk(parse_proc(text, "t.gpuir").body))
    prog = convert_src(text)
    assert parse_amir(print_proc(prog)) == prog


def test_conversion_is_deterministic_and_needs_no_defines_without_sizes():
    src = ("proc p(A: f32[128] @ CudaGmemLinear):\n"
           "    with CudaDeviceFunction(blockDim=128):\n"
           "        for task in cuda_tasks(0, 1):\n"
           "            for t in cuda_threads(0, 128, unit=cuda_thread):\n"
           "                A[t] = A[127 - t] + 1.0\n")
    proc = parse_proc(src, "t.gpuir")
    assert convert(proc) == convert(proc, {}) == convert(proc, {}, rules="fixed")
    assert convert(proc).params == ()
