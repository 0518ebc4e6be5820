"""The instruction library: each declaration is consistent with the tables it names
(Figures 11-16), its declared access modes agree with its behaviour (Section 5.2.3
derives them from g.s; we check ours by running it), and the behaviours compute what
the PTX instructions define, with float32 rounding at every step."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.gpuir import memtypes
from gpusem.calculus.gpuir.instructions import (
    INSTRUCTIONS,
    Instr,
    ext_quals,
    initial_qual,
)
from gpusem.calculus.gpuir.timelines import QualTL
from gpusem.calculus.gpuir.units import UNITS

DECLS = list(INSTRUCTIONS.values())
RNG = np.random.default_rng(7)


@pytest.mark.parametrize("g", DECLS, ids=lambda g: g.name)
def test_declaration_names_exist(g: Instr) -> None:
    assert g.unit.name in UNITS
    assert g.barrier is None or g.barrier in memtypes.BARRIER_MEMORIES
    assert len({p.name for p in g.params}) == len(g.params)
    assert g.cuda and g.ptx
    symbols = {x for p in g.params for x in p.shape if isinstance(x, str)}
    assert set(g.sizes) <= symbols
    for p in g.data_params:
        for m in p.mems:
            assert m in memtypes.DATA_MEMORIES or m in memtypes.WINDOW_MEMORIES
        for u in p.dist_units:
            assert u in UNITS
        assert len(p.dist_units) <= len(p.shape)
        for q in (p.ext_qual_tl or frozenset()) | p.atomic_qual_tl:
            QualTL.parse(q)
        for mem in ("CudaRmem", "CudaSmemLinear"):
            QualTL.parse(initial_qual(p, memtypes.DATA_MEMORIES[mem]))
            assert initial_qual(p, memtypes.DATA_MEMORIES[mem]) in \
                ext_quals(p, memtypes.DATA_MEMORIES[mem])
        if p.out_of_order:  # async parameters name their timeline explicitly
            assert p.initial_qual_tl is not None


def _arguments(g: Instr) -> dict:
    sizes = {s: allowed[len(allowed) // 2] for s, allowed in g.sizes.items()}
    args = {}
    for p in g.params:
        if p.kind == "ctrl":
            args[p.name] = p.values[len(p.values) // 3] if p.values else 1
            continue
        dims = [d if isinstance(d, int) else sizes.setdefault(d, 4) for d in p.shape]
        if p.dist_units == ("cuda_cta_in_cluster",):
            dims[0] = 2
        args[p.name] = RNG.standard_normal(dims).astype(np.float32)
    return args


def _run(g: Instr, args: dict) -> dict:
    copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    g.behaviour(**copies)
    return copies


@pytest.mark.parametrize("g", DECLS, ids=lambda g: g.name)
def test_declared_access_agrees_with_behaviour(g: Instr) -> None:
    args = _arguments(g)
    out = _run(g, args)
    for p in g.data_params:
        changed = not np.array_equal(out[p.name], args[p.name])
        if p.access == "read":
            assert not changed, f"{p.name} is declared read-only but is written"
            continue
        assert changed, f"{p.name} is declared written but is not"
        other = dict(args)
        other[p.name] = RNG.standard_normal(args[p.name].shape).astype(np.float32)
        out2 = _run(g, other)
        depends = not all(np.array_equal(out[q.name], out2[q.name])
                          for q in g.data_params if q.access != "read")
        if p.access == "write":
            assert not depends, f"{p.name} is declared write-only but is read"
        else:
            assert depends, f"{p.name} is declared read-write but is never read"


def _mma_reference(d, a, b):
    """D[m, n] + sum_k A[m, k] * B[n, k], one float32 rounding per step, k ascending."""
    out = d.copy()
    for m in range(a.shape[0]):
        for n in range(b.shape[0]):
            acc = np.float32(d[m, n])
            for k in range(a.shape[1]):
                acc = np.float32(acc + np.float32(a[m, k] * b[n, k]))
            out[m, n] = acc
    return out


@pytest.mark.parametrize("name,m,n", [("Sm80_mma_m16n8k8_f32", 16, 8),
                                      ("Sm90_wgmma_m64nNk8_f32", 64, 16)])
def test_mma_is_exact_float32(name: str, m: int, n: int) -> None:
    g = INSTRUCTIONS[name]
    d = RNG.standard_normal((m, n)).astype(np.float32)
    a = (RNG.standard_normal((m, 8)) * 1e3).astype(np.float32)
    b = (RNG.standard_normal((n, 8)) * 1e-3).astype(np.float32)
    expect = _mma_reference(d, a, b)
    got = d.copy()
    g.behaviour(d=got, a=a, b=b)
    assert got.dtype == np.float32
    assert np.array_equal(got, expect)


def test_shuffles_follow_ptx() -> None:
    src = np.arange(32, dtype=np.float32) * 10
    dst = np.zeros(32, np.float32)
    INSTRUCTIONS["cuda_shfl_down_f32"].behaviour(dst=dst, src=src, delta=5)
    assert list(dst) == [src[i + 5] if i + 5 < 32 else src[i] for i in range(32)]
    INSTRUCTIONS["cuda_shfl_xor_f32"].behaviour(dst=dst, src=src, mask=3)
    assert list(dst) == [src[i ^ 3] for i in range(32)]


def test_load_b_transposes_into_n_by_k() -> None:
    src = RNG.standard_normal((8, 8)).astype(np.float32)  # K x N
    dst = np.zeros((8, 8), np.float32)
    INSTRUCTIONS["Sm80_mma_load_b_f32"].behaviour(dst=dst, src=src)
    assert dst[3, 5] == src[5, 3]
