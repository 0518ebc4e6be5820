"""T_arg (Figure 19) with its helpers (Figure 20), and the Figure 17/18 helpers,
tested directly on synthetic parameters: every row of Figure 19 (non-atomic read-only,
non-atomic write-only, non-atomic read-write, atomic), τ_v^post by T_ooo, the t flag by
T_cvg, the barrier set by T_e(e_z), and the sync-exempt / shared-memory lists of
Section 5.2.2."""

from __future__ import annotations

import pytest
from gpusem.calculus.amir import ast as M
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir.instructions import INSTRUCTIONS, InstrParam
from gpusem.calculus.gpuir.timelines import VL, QualTL
from gpusem.interpreter.amir.from_gpuir_args import (
    Scope,
    VarInfo,
    arg_case,
    compose_window,
    is_ex,
    is_smem,
    t_arg,
    t_e,
    t_ex,
    t_qin,
    t_smem,
)

TH = M.ThreadMap((M.ThreadRange(G.CVar("w"), 32, 1),))
VARS = {
    "s": VarInfo("s", "CudaSmemLinear", False, 1),
    "g": VarInfo("g", "CudaGmemLinear", False, 1),
    "c": VarInfo("c", "CudaGridConstant", False, 1),
    "r": VarInfo("r", "CudaRmem", False, 0),
    "m": VarInfo("m", "CudaMbarrier", True, 1),
    "cg": VarInfo("cg", "CudaCommitGroup", True, 0),
    "cs": VarInfo("cs", "CudaClusterSync", True, 0),
}
SCOPE = Scope(dict(VARS), threads=TH)
TMAS, WGS = "tma_to_smem_async_qual", "wgmma_async_smem_qual"


def read(name: str, *coords: G.WCoord) -> G.DRead:
    return G.DRead(name, coords)


def pt(i: int) -> G.WPoint:
    return G.WPoint(G.CInt(i))


def iv(lo: int | None, hi: int | None) -> G.WInterval:
    return G.WInterval(None if lo is None else G.CInt(lo),
                       None if hi is None else G.CInt(hi))


def acc(name: str, *coords: G.WCoord, barrier: bool = False) -> M.Access:
    return M.Access(name, coords, barrier)


def param(access="read", **kw) -> InstrParam:
    return InstrParam("p", "data", shape=(8,), access=access, **kw)


E = acc("s", iv(0, 8))
Z = (acc("m", pt(1), barrier=True),)
NONE: frozenset = frozenset()


ARG = read("s", iv(0, 8))
EZ = G.ZRead("m", (pt(1),))


def conv(p: InstrParam, arg: G.DRead = ARG, ez: G.ZRead | None = EZ):
    return t_arg(p, arg, ez, SCOPE, None)


# ------------------------------------------------------------------- Figure 19 rows


def test_non_atomic_read_only_row():
    """CheckMutates(full_ordered, T_cvg, e#, T_ext); RecordRead(τ_v^post, T_cvg, e#,
    T_init, ∅, T_e(e_z)), with τ_v^post = fully_ordered when not out of order."""
    p = param(initial_qual_tl=TMAS, ext_qual_tl=frozenset({TMAS, WGS}))
    q, ext = QualTL.TMA_TO_SMEM_ASYNC, frozenset({QualTL.TMA_TO_SMEM_ASYNC,
                                                  QualTL.WGMMA_ASYNC_SMEM})
    assert arg_case(p) == "non-atomic read-only"
    assert conv(p) == [M.CheckMutates(VL.FULLY_ORDERED, False, E, ext, TH),
                       M.RecordRead(VL.FULLY_ORDERED, False, E, q, NONE, Z, TH)]


@pytest.mark.parametrize("access,pre", [("write", VL.TEMPORALLY_ORDERED),
                                        ("readwrite", VL.FULLY_ORDERED)])
def test_non_atomic_non_read_only_row(access, pre):
    """CheckMutates(τ_v^pre) (temporal for write-only, full otherwise);
    CheckReads(temporal_ordered); ClearReads; ClearMutates; RecordMutate(τ_v^post)."""
    p = param(access)
    q = QualTL.CUDA_IN_ORDER_RAM  # the in-order default: T_qin of shared memory
    assert arg_case(p) == "non-atomic non-read-only"
    assert conv(p) == [M.CheckMutates(pre, False, E, frozenset({q}), TH),
                       M.CheckReads(VL.TEMPORALLY_ORDERED, False, E, frozenset({q}), TH),
                       M.ClearReads(E), M.ClearMutates(E),
                       M.RecordMutate(VL.FULLY_ORDERED, False, E, q, NONE, Z, TH)]


def test_atomic_row():
    """CheckMutates(atomic_only); CheckReads(temporal_ordered); ClearReads (no
    ClearMutates); RecordMutate(τ_v^post, ..., T_atom(g.p_i), T_e(e_z)). Atomic is
    chosen exactly when T_atom ≠ ∅, whatever the access mode."""
    atom = frozenset({"tma_to_gmem_async_qual"})
    p = param("readwrite", out_of_order=True, initial_qual_tl="tma_to_gmem_async_qual",
              ext_qual_tl=atom, atomic_qual_tl=atom)
    q = QualTL.TMA_TO_GMEM_ASYNC
    assert arg_case(p) == arg_case(param("read", atomic_qual_tl=atom)) == "atomic"
    assert conv(p) == [M.CheckMutates(VL.ATOMIC_ONLY, False, E, frozenset({q}), TH),
                       M.CheckReads(VL.TEMPORALLY_ORDERED, False, E, frozenset({q}), TH),
                       M.ClearReads(E),
                       M.RecordMutate(VL.UNORDERED, False, E, q, frozenset({q}), Z, TH)]


def test_out_of_order_and_convergent_flags():
    """τ_v^post = unordered iff T_ooo; the t argument of every check and record is
    T_cvg."""
    for ooo in (False, True):
        for cvg in (False, True):
            out = conv(param("write", out_of_order=ooo, convergent=cvg))
            assert out[-1].vl is (VL.UNORDERED if ooo else VL.FULLY_ORDERED)
            assert all(s.t is cvg for s in out if hasattr(s, "t"))


def test_no_barrier_means_empty_barrier_set():
    out = conv(param("read"), ez=None)
    assert out[-1].barriers == ()


def test_exempt_argument_converts_to_nothing():
    """T_arg ranges over T_ex(e_i): a grid-constant argument has no accesses."""
    assert conv(param("read"), arg=read("c", iv(0, 8))) == []


def test_library_cp_async_is_out_of_order():
    """The Sm80 cp.async declaration: both parameters on Sm80_cp_async_qual, out of
    order, so their records are unordered until a Sm80 fence or arrive."""
    g = INSTRUCTIONS["Sm80_cp_async_f32"]
    dst, src = g.params
    out = t_arg(dst, read("s", iv(0, 4)), None, SCOPE, None)
    assert isinstance(out[-1], M.RecordMutate)
    assert (out[-1].vl, out[-1].qual) == (VL.UNORDERED, QualTL.SM80_CP_ASYNC)
    out = t_arg(src, read("g", iv(0, 4)), None, SCOPE, None)
    assert [type(s) for s in out] == [M.CheckMutates, M.RecordRead]
    assert out[0].quals == frozenset({QualTL.SM80_CP_ASYNC})


# ------------------------------------------------------------- Figures 17 and 18


def test_t_e_rows():
    """T_e: d -> ∅; x -> {x[<>]} (a whole array for a non-scalar, errata "Bare array
    names"); x[w*] -> {x[w*]}; e1 op e2 -> union; z -> {z[<>]}; z[w*] -> {z[w*]}."""
    assert t_e(G.DConst(1.0), SCOPE) == ()
    assert t_e(read("r"), SCOPE) == (acc("r"),)
    assert t_e(read("s"), SCOPE) == (acc("s", G.WInterval(None, None)),)
    e = G.DBin("+", read("g", pt(3)), G.DBin("*", read("r"), read("g", pt(3))))
    assert t_e(e, SCOPE) == (acc("g", pt(3)), acc("r"))
    assert t_e(G.ZRead("cg"), SCOPE) == (acc("cg", barrier=True),)
    assert t_e(G.ZRead("m", (pt(0),)), SCOPE) == (acc("m", pt(0), barrier=True),)


def test_sync_exempt_and_shared_memory_lists():
    """Section 5.2.2: sync-exempt = CudaGridConstant, CudaClusterSync,
    CudaCommitGroup; shared = CudaSmemLinear, ..., CudaMbarrier."""
    exempt = {n for n in VARS if is_ex(acc(n), SCOPE)}
    smem = {n for n in VARS if is_smem(acc(n), SCOPE)}
    assert exempt == {"c", "cg", "cs"}
    assert smem == {"s", "m"}
    e = G.DBin("+", read("c", pt(0)), read("s", pt(1)))
    assert t_ex(e, SCOPE) == t_smem(e, SCOPE) == (acc("s", pt(1)),)
    assert t_ex(G.ZRead("cs"), SCOPE) == ()


def test_t_qin_by_scope_and_memory():
    gpu = SCOPE
    cpu = Scope(dict(VARS), threads=M.CPU)
    assert t_qin(acc("r"), gpu) is QualTL.CUDA_IN_ORDER_RMEM
    assert t_qin(acc("g"), gpu) is QualTL.CUDA_IN_ORDER_RAM
    assert t_qin(acc("s"), gpu) is QualTL.CUDA_IN_ORDER_RAM
    assert t_qin(acc("g"), cpu) is QualTL.CPU_IN_ORDER


# -------------------------------------------------------------------- windows


def test_compose_window():
    """w = x[2, 4:12, :] then w[i, 1:3] = x[2, 4 + i, 1:3]; w[:, 5] = x[2, 4:12, 5];
    a use with fewer coordinates leaves the rest of the window whole."""
    src = read("x", pt(2), iv(4, 12), iv(None, None))
    i = G.CVar("i")
    use = compose_window(src, (G.WPoint(i), iv(1, 3)))
    assert use == read("x", pt(2), G.WPoint(G.CBin("+", G.CInt(4), i)), iv(1, 3))
    assert compose_window(src, (iv(None, None), pt(5))) == read(
        "x", pt(2), iv(4, 12), pt(5))
    assert compose_window(src, (iv(2, 4),)) == read(
        "x", pt(2), G.WInterval(G.CBin("+", G.CInt(4), G.CInt(2)),
                                G.CBin("+", G.CInt(4), G.CInt(4))), iv(None, None))
    assert compose_window(src, ()) == src


def test_window_use_resolves_to_underlying_memory():
    scope = Scope(dict(VARS), {"win": read("s", iv(8, 16))}, threads=TH)
    (a,) = t_e(read("win", pt(3)), scope)
    assert a == acc("s", G.WPoint(G.CBin("+", G.CInt(8), G.CInt(3))))
    assert is_smem(a, scope)
