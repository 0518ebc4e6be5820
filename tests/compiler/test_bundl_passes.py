"""Each pass of the Bundl -> CUDA pipeline alone: KIR in, KIR out (STYLE 13)."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest
from gpusem.calculus.bundl.ast import BaseType
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.barriers import lower_barriers
from gpusem.compiler.bundl_cuda.emit import const, expr
from gpusem.compiler.bundl_cuda.errors import CompileError
from gpusem.compiler.bundl_cuda.lower_code import lower_code_perspectives
from gpusem.compiler.bundl_cuda.lower_data import lower_data_perspectives
from gpusem.compiler.bundl_cuda.smem import assign_smem_offsets
from gpusem.compiler.bundl_cuda.sync import barriers, place_sync

INT = BaseType.INT
T = lambda n: Perspective(Level.THREAD, n)  # noqa: E731


def program(body, threads=128, functions=()):
    kernel = K.KFunction("k", (), tuple(body), Perspective(Level.GRID, 1), True)
    return K.KProgram((*functions, kernel), blocks=1, threads=threads)


def kernel_body(prog):
    return next(f for f in prog.functions if f.is_kernel).body


def store(name="g_out"):
    return K.KStore(K.KVar(name), K.KConst(0, INT), K.KPerspId())


# ------------------------------------------------------------ lower_code_perspectives


def test_destruct_introduces_thread_id_and_group_takes_modulus():
    body = [K.KDestruct(Perspective(Level.BLOCK, 1),
                        (K.KGroup(4, T(32), (store(),)),))]
    out = kernel_body(lower_code_perspectives(program(body)))
    destruct_block = out[0]
    decl = destruct_block.body[1]
    assert decl == K.KDecl("p1", "const int", K.KBuiltin("threadIdx.x"))
    group_block = destruct_block.body[2]
    assert group_block.body[1] == K.KDecl("p2", "const int", K.KRaw("p1 % 32"))
    assert group_block.body[2].value == K.KVar("p2")  # KPerspId resolved


def test_split_guards_left_with_p_and_right_with_shifted_p():
    body = [K.KSplit(32, 64, (store("a"),), (store("b"),))]
    (top,) = kernel_body(lower_code_perspectives(program(body)))
    assert top.cond == K.KRaw("0 < 32")
    assert top.then[0].value == K.KConst(0, INT)  # S-Split-Left keeps p
    (right,) = top.orelse
    assert right.cond == K.KRaw("0 < 96")
    shifted, write = right.then
    assert shifted.init == K.KRaw("0 - 32")  # S-Split-Right: p - n1
    assert write.value == K.KVar(shifted.name)


# ------------------------------------------------------------ lower_data_perspectives


def test_partition_views_piece_p_div_n_over_c_and_ends_with_barrier():
    node = K.KPartition("x", "y", 4, K.KConst(128, INT), INT, T(128),
                        (store("y"),))
    block, barrier = kernel_body(lower_data_perspectives(program([node])))
    length, pointer = block.body[1], block.body[2]
    assert length.init == K.KBin("/", K.KConst(128, INT), K.KConst(4, INT), INT)
    # piece k = p div (n / c) = p div 32, offset k * len(y)
    piece = K.KBin("/", K.KPerspId(), K.KConst(32, INT), INT)
    assert pointer.init == K.KPtrAdd(K.KVar("x"),
                                     K.KBin("*", piece, K.KVar("y_len"), INT))
    assert barrier == K.KBarrier(T(128), K.KPerspId(), "partition y")


def test_claim_guards_body_to_first_n_threads():
    node = K.KClaim("x", "y", 32, K.KConst(64, INT), INT, T(128), (store("y"),))
    _, guarded, barrier = kernel_body(lower_data_perspectives(program([node])))
    assert guarded.cond == K.KBin("<", K.KPerspId(), K.KConst(32, INT), INT)
    assert isinstance(barrier, K.KBarrier) and barrier.persp == T(128)


# ---------------------------------------------------------------------- place_sync


def barrier(n=128):
    return K.KBarrier(T(n), K.KConst(0, INT), "partition y")


def local_work():
    return K.KDecl("v", "int", K.KConst(1, INT))


def test_trailing_barrier_is_dropped_even_without_motion():
    out = place_sync(program([store(), barrier()]), sync_motion=False)
    assert barriers(kernel_body(out)) == []


def test_barrier_before_memory_access_is_kept_without_motion():
    prog = program([store(), barrier(), local_work(), store()])
    out = kernel_body(place_sync(prog, sync_motion=False))
    assert isinstance(out[1], K.KBarrier) and isinstance(out[2], K.KDecl)


def test_wait_motion_sinks_barrier_past_local_work_to_first_access():
    prog = program([store(), barrier(), local_work(), store()])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert [type(s).__name__ for s in out] == ["KStore", "KDecl", "KBarrier", "KStore"]


def test_wait_motion_merges_barriers_of_the_same_instance():
    prog = program([store(), barrier(), local_work(), barrier(), store()])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert len(barriers(out)) == 1


def test_wait_motion_never_crosses_control_flow():
    loop = K.KWhile(K.KConst(False, BaseType.BOOL), (store(),))
    prog = program([store(), barrier(), loop])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert isinstance(out[1], K.KBarrier) and isinstance(out[2], K.KWhile)


# ------------------------------------------------------------------- lower_barriers


@pytest.mark.parametrize(("n", "expected"), [
    (128, "__syncthreads();"),
    (32, "__syncwarp(0xffffffffu);"),
    (8, "__syncwarp((0xffu << ((threadIdx.x - 0) & 31)));"),
    (64, "gs_bar_sync(1 + (threadIdx.x - 0) / 64, 64);"),
])
def test_barrier_shape_picks_the_cheapest_primitive(n, expected):
    out = kernel_body(lower_barriers(program([store(), barrier(n), store()])))
    prims = [s.text for s in out if isinstance(s, K.KPrim)]
    assert prims == [expected]


def test_one_thread_barrier_is_program_order():
    out = kernel_body(lower_barriers(program([barrier(1)])))
    assert not any(isinstance(s, K.KPrim) for s in out)


def test_irregular_shape_gets_an_mbarrier_with_phase():
    prog = lower_barriers(program([store(), barrier(48), store()], threads=96))
    out = kernel_body(prog)
    texts = [s.text for s in out if isinstance(s, K.KPrim)]
    assert any("gs_mbar_arrive" in t for t in texts)
    assert any("gs_mbar_wait_parity" in t and "^= 1u" in t for t in texts)
    assert prog.smem_bytes == 16  # 2 instances x 8 bytes, 16-aligned


def test_named_barrier_ids_run_out_into_mbarriers():
    sites = [x for _ in range(5) for x in (barrier(64), store())]
    out = kernel_body(lower_barriers(program([store(), *sites], threads=256)))
    texts = [s.text for s in out if isinstance(s, K.KPrim)]
    assert sum("gs_bar_sync" in t for t in texts) == 3  # 3 sites x 4 ids = 12 <= 15
    assert sum("gs_mbar_arrive" in t for t in texts) == 2


def test_barrier_among_blocks_before_kernel_end_is_rejected():
    grid = K.KBarrier(Perspective(Level.BLOCK, 2), K.KConst(0, INT), "partition y")
    with pytest.raises(CompileError, match="unsupported: a barrier among blocks"):
        lower_barriers(program([store(), grid, store()]))


# ---------------------------------------------------------------------- smem offsets


def test_shared_allocations_stack_and_siblings_reuse_space():
    inner = K.KSharedAlloc("b", INT, 8, (store("b"),))
    outer = K.KSharedAlloc("a", INT, 5, (inner,))
    sibling = K.KSharedAlloc("c", INT, 4, ())
    prog = assign_smem_offsets(program([outer, sibling]))
    # a: 5 ints = 20 bytes, aligned to 32; b stacks on it (32 bytes at 32); the
    # sibling c reuses offset 0 once a's scope has ended.
    assert prog.smem_bytes == 32 + 32
    text = str(kernel_body(prog))
    assert text.count("gs_smem + 0)") == 2 and text.count("gs_smem + 32)") == 1


# ----------------------------------------------------------------------------- emit


def test_int_arithmetic_goes_through_wrapping_helpers():
    e = K.KBin("+", K.KVar("a"), K.KBin("*", K.KVar("b"), K.KVar("c"), INT), INT)
    assert expr(e) == "gs_add_i32(a, gs_mul_i32(b, c))"


def test_int_min_literal_is_not_a_negated_overflowing_literal():
    assert const(-(2**31), INT) == "(-2147483647 - 1)"


@pytest.mark.parametrize("value", [0.1, 1e-45, 3.4028234663852886e38, -2.5, 1 / 3])
def test_float_literals_round_trip_to_the_same_float32(value):
    f32 = struct.unpack("<f", struct.pack("<f", value))[0]
    text = const(f32, BaseType.FLOAT)
    text = text.strip("()")
    assert text.endswith("f")
    back = struct.unpack("<f", struct.pack("<f", float(text[:-1])))[0]
    assert back == f32


# ------------------------------------------------ data-control-flow graph (Sec. 5)


def read_of(array: str, into: str = "g_out"):
    return K.KStore(K.KVar(into), K.KConst(0, INT), K.KLoad(K.KVar(array),
                                                             K.KConst(1, INT)))


def partition_then_barrier(body, n=128):
    return [K.KBlock(tuple(body)), barrier(n)]


def test_read_partition_then_read_partition_needs_no_barrier_between():
    """Fig. 16: a sync point is needed only where a write is involved."""
    prog = program([*partition_then_barrier([read_of("s", "g_a")]),
                    *partition_then_barrier([read_of("s", "g_b")]),
                    store("g_c")])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert [type(s).__name__ for s in out] == ["KBlock", "KBlock", "KStore"]


def test_write_partition_then_reader_keeps_the_barrier_between():
    write_s = K.KStore(K.KVar("s"), K.KConst(0, INT), K.KConst(1, INT))
    prog = program([*partition_then_barrier([write_s]), read_of("s"), store()])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert [type(s).__name__ for s in out][:3] == ["KBlock", "KBarrier", "KStore"]


def test_read_partition_then_writer_keeps_the_barrier_between():
    """Write after read: the readers must be done before the array is overwritten."""
    write_s = K.KStore(K.KVar("s"), K.KConst(0, INT), K.KConst(1, INT))
    prog = program([*partition_then_barrier([read_of("s", "g_a")]), write_s, store()])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert [type(s).__name__ for s in out][:3] == ["KBlock", "KBarrier", "KStore"]


def test_independent_write_partitions_share_one_barrier_before_the_use():
    write = lambda a: K.KStore(K.KVar(a), K.KConst(0, INT), K.KConst(1, INT))  # noqa
    prog = program([*partition_then_barrier([write("s")]),
                    *partition_then_barrier([write("r")]),
                    read_of("s"), read_of("r")])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert [type(s).__name__ for s in out] == ["KBlock", "KBlock", "KBarrier", "KStore",
                                                "KStore"]


def test_views_alias_their_root_array():
    """A write through a partition view of s conflicts with a read of s itself."""
    view = K.KDecl("s1", "int*", K.KPtrAdd(K.KVar("s"), K.KConst(4, INT)))
    write_view = K.KStore(K.KVar("s1"), K.KConst(0, INT), K.KConst(1, INT))
    prog = program([*partition_then_barrier([view, write_view]), read_of("s"), store()])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert isinstance(out[1], K.KBarrier)


def test_loop_body_keeps_its_barrier_for_the_back_edge():
    """Fig. 6's backedge sync point: a write partition at the end of a loop body is
    read again by the next iteration, so its barrier stays inside the body."""
    write_s = K.KStore(K.KVar("s"), K.KConst(0, INT), K.KConst(1, INT))
    loop = K.KWhile(K.KVar("c"), (read_of("s"), *partition_then_barrier([write_s])))
    out = kernel_body(place_sync(program([loop, store()]), sync_motion=True))
    assert isinstance(out[0].body[-1], K.KBarrier)


def test_hand_written_init_dec_wait_never_moves():
    hand = K.KBarrier(T(128), K.KConst(0, INT), "init/dec/wait b")
    prog = program([store("g_a"), hand, store("g_b"), store()])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert isinstance(out[1], K.KBarrier)


def test_arrive_motion_splits_a_moved_barrier_into_arrive_and_wait():
    """Sec. 5: arrive where the construct ends, wait before the first conflicting use;
    independent work runs between them (shape thread[64] of 256: no special case)."""
    write = lambda a: K.KStore(K.KVar(a), K.KConst(0, INT), K.KConst(1, INT))  # noqa
    prog = program([K.KBlock((write("s"),)), barrier(64), write("r"), read_of("s"),
                    store()], threads=256)
    out = kernel_body(place_sync(prog, sync_motion=True))
    kinds = [type(s).__name__ for s in out]
    assert kinds[:5] == ["KBlock", "KArrive", "KStore", "KWait", "KStore"]
    lowered = kernel_body(lower_barriers(replace(prog, functions=(
        replace(prog.functions[0], body=out),))))
    texts = [s.text for s in lowered if isinstance(s, K.KPrim)]
    assert any("gs_mbar_arrive" in t for t in texts)
    assert any("gs_mbar_wait_parity" in t for t in texts)


def test_block_wide_barriers_are_never_split():
    write = lambda a: K.KStore(K.KVar(a), K.KConst(0, INT), K.KConst(1, INT))  # noqa
    prog = program([K.KBlock((write("s"),)), barrier(128), write("r"), read_of("s"),
                    store()])
    out = kernel_body(place_sync(prog, sync_motion=True))
    assert not any(isinstance(s, (K.KArrive, K.KWait)) for s in out)
