"""The sequential reading seq⟦p⟧ (interpreter/gpuir/sequential.py). Expected values come from
what each example computes (its header comment), written independently in NumPy with
the float32 operation order the sequential reading prescribes."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.errors import BadInput, BudgetExhausted, Trap
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.parser import parse_proc
from gpusem.calculus.gpuir.walk import walk
from gpusem.interpreter.gpuir.sequential import _Batch, run_sequential
from gpusem.typing_rules.gpuir.frontend import header_defines

EX = Path(__file__).parents[2] / "examples" / "gpuir"
RNG = np.random.default_rng(3)
f32 = np.float32


def load(name: str, **defines):
    text = (EX / f"{name}.gpuir").read_text()
    return parse_proc(text, name), {**header_defines(text), **defines}


def rand(*shape):
    return RNG.standard_normal(shape).astype(f32)


def run_both(proc, defines, inputs):
    """Vectorised and plain runs must agree bit for bit."""
    fast = run_sequential(proc, defines, inputs)
    slow = run_sequential(proc, defines, inputs, vectorise=False)
    for k in fast:
        assert fast[k].dtype == slow[k].dtype
        assert np.array_equal(fast[k], slow[k], equal_nan=True), k
    return fast


def test_fence_broadcast_sums_each_tile() -> None:
    proc, d = load("fence_broadcast")
    a = rand(d["N"])
    out = run_both(proc, d, {"A": a})["B"]
    for task in range(d["N"] // 128):
        acc = f32(0)
        for i in range(128):
            acc = f32(acc + a[task * 128 + i])
        assert np.all(out[task * 128:(task + 1) * 128] == acc)


def test_sequential_reading_ignores_missing_synchronisation() -> None:
    a = rand(256)
    good, d = load("fence_broadcast")
    bad, _ = load("fence_broadcast_missing_fence")
    assert np.array_equal(run_sequential(good, d, {"A": a})["B"],
                          run_sequential(bad, d, {"A": a})["B"])


def test_gemm_is_float32_k_sequential() -> None:
    proc, d = load("gemm_tiled", N=128)
    a, bt = rand(128, 128), rand(128, 128)
    c = run_sequential(proc, d, {"A": a, "Bt": bt})["C"]
    acc = np.zeros((128, 128), f32)
    for k in range(128):
        acc = acc + np.multiply.outer(a[:, k], bt[:, k])
    assert c.dtype == f32 and np.array_equal(c, acc)


def test_gemm_256_runs_quickly() -> None:
    proc, d = load("gemm_tiled")
    t0 = time.process_time()  # CPU seconds: a wall-clock bound depends on the load
    c = run_sequential(proc, d, {"A": rand(256, 256), "Bt": rand(256, 256)})["C"]
    assert c.shape == (256, 256) and time.process_time() - t0 < 20


def test_gemv_shuffle_butterfly() -> None:
    proc, d = load("gemv_shfl", M=8, K=64)
    a, x = rand(8, 64), rand(64)
    y = run_both(proc, d, {"A": a, "x": x})["y"]
    for r in range(8):
        part = np.zeros(32, f32)
        for j in range(2):
            part = part + a[r, j * 32:(j + 1) * 32] * x[j * 32:(j + 1) * 32]
        for mask in (16, 8, 4, 2, 1):
            part = part + part[np.arange(32) ^ mask]
        assert y[r] == part[0]


def test_pipelines_and_producer_consumer() -> None:
    proc, d = load("cp_async_pipeline")
    a = rand(d["N"])
    b = run_both(proc, d, {"A": a})["B"]
    idx = np.arange(d["N"])
    src = (idx // 128) * 128 + 127 - idx % 128
    assert np.array_equal(b, a[src] * f32(2))

    proc, d = load("producer_consumer")
    a = rand(d["N"])
    b = run_both(proc, d, {"A": a})["B"]
    idx = np.arange(d["N"])
    assert np.array_equal(b, a + a[(idx // 128) * 128 + 127 - idx % 128])


def test_multicast_and_wgmma_examples() -> None:
    proc, d = load("multicast_cluster_sync", T=2)
    g = rand(d["T"], 256, 32)
    out = run_sequential(proc, d, {"G": g})["Out"]
    assert np.array_equal(out, np.broadcast_to(g[:, None], out.shape))

    proc, d = load("wgmma_waited")
    ga, gb = rand(64, 8), rand(64, 8)
    out = run_both(proc, d, {"GA": ga, "GB": gb})["Out"]
    ref = np.zeros((64, 64), f32)
    for k in range(8):
        ref = ref + np.multiply.outer(ga[:, k], gb[:, k])
    assert np.array_equal(out, np.broadcast_to(ref, out.shape))


# Sizes small enough for the plain (one statement at a time) run.
SMALL = {"fence_broadcast": {"N": 256}, "fence_broadcast_missing_fence": {"N": 256},
         "mbarrier_broadcast": {"N": 256}, "cp_async_pipeline": {"N": 512},
         "cp_async_pipeline_unwaited": {"N": 512}, "producer_consumer": {"N": 1024},
         "gemv_shfl": {"M": 8, "K": 64}, "gemm_tiled": {"N": 128},
         "multicast_race": {"T": 1}, "multicast_cluster_sync": {"T": 1}}


@pytest.mark.parametrize("path", sorted(EX.glob("*.gpuir")), ids=lambda p: p.stem)
def test_vectorised_equals_plain_on_every_example(path: Path) -> None:
    from gpusem.calculus.gpuir.ctrl import eval_c

    proc = parse_proc(path.read_text(), str(path))
    defines = SMALL.get(path.stem, header_defines(path.read_text()))
    inputs = {p.name: RNG.standard_normal(
        [int(eval_c(c, defines)) for c in p.shape]).astype(f32) for p in proc.data_params}
    run_both(proc, defines, inputs)


INT_PROG = """
proc ints(X: i32[6] @ DRAM):
    X[0] = 2147483647 + 1
    X[1] = -7 / 2
    X[2] = 7 / -2
    X[3] = X[3] * 65536 * 65536
    X[4] = 0 - 2147483647 - 2
    X[5] = 1 / 3
"""


def test_int32_wraps_and_divides_like_c() -> None:
    out = run_sequential(parse_proc(INT_PROG), {}, {"X": np.full(6, 3, np.int32)})["X"]
    assert out.dtype == np.int32
    assert list(out) == [-2**31, -3, -3, 0, 2**31 - 1, 0]


def test_float32_rounds_every_operation() -> None:
    proc = parse_proc("proc p(X: f32[3] @ DRAM):\n    X[2] = X[0] + X[1] - X[0]\n")
    out = run_sequential(proc, {}, {"X": np.array([1e8, 1.0, 0], f32)})["X"]
    assert out[2] == f32(0.0)  # 1e8 + 1 rounds to 1e8 in float32 (it is 1 in float64)


@pytest.mark.parametrize("src,err,prefix", [
    ("proc p(X: f32[4] @ DRAM):\n    X[4] = 1.0\n", Trap, "out of bounds"),
    ("proc p(X: f32[4] @ DRAM):\n    for i in seq(0, 4):\n        X[i] = X[i - 1]\n",
     Trap, "out of bounds"),
    ("proc p(X: i32[4] @ DRAM):\n    X[0] = X[1] / X[2]\n", Trap, "division by zero"),
    ("proc p(N: size, X: f32[4] @ DRAM):\n    X[0] = 1.0\n", BadInput,
     "missing definition"),
])
def test_runtime_errors(src, err, prefix) -> None:
    with pytest.raises(err) as e:
        run_sequential(parse_proc(src), {}, {})
    assert e.value.prefix == prefix, e.value.one_line()


def test_step_budget() -> None:
    proc = parse_proc("proc p(X: f32[4] @ DRAM):\n    for i in seq(0, 100000):\n"
                      "        X[0] += 1.0\n")
    with pytest.raises(BudgetExhausted):
        run_sequential(proc, {}, {}, max_steps=1000)


def test_bad_inputs() -> None:
    proc = parse_proc("proc p(X: f32[4] @ DRAM):\n    X[0] = 1.0\n")
    with pytest.raises(BadInput):
        run_sequential(proc, {}, {"Y": np.zeros(4)})
    with pytest.raises(BadInput):
        run_sequential(proc, {}, {"X": np.zeros(5)})


def _loop(src: str) -> A.For:
    return next(s for s in walk(parse_proc(src).body) if isinstance(s, A.For))


@pytest.mark.parametrize("body,ok", [
    ("X[i] = Y[i] * 2.0", True),
    ("acc: f32 @ DRAM\n        acc = Y[i]\n        X[i] = acc", True),   # private scalar
    ("X[i + 1] = X[i]", False),       # reads a neighbour's cell
    ("X[0] = Y[i]", False),           # every iteration writes one cell
    ("X[i] = Y[i]\n        Y[i + 1] = 1.0", False),
    ("for k in seq(0, 4):\n            X[i] += Y[k]", True),
    ("for k in seq(0, 4):\n            X[i + k] += 1.0", False),
    ("if i < 2:\n            X[i] = 1.0", False),
    ("for k in seq(0, 4):\n            X[i * 4 + k] = Y[k]", True),   # tiles of 4
    ("for k in seq(0, 5):\n            X[i * 4 + k] = Y[k]", False),  # tiles overlap
    ("for k in seq(0, 4):\n            X[i * 4 + k] += X[i * 4 + k]", True),
    # an allocation whose extent is the iterator: one array per lane (found by
    # test_robustness on a clean clone: `int()` of a lane array)
    ("t: f32[i + 1] @ DRAM\n        t[0] = Y[i]\n        X[i] = t[0]", False),
])
def test_batching_only_when_iterations_are_independent(body: str, ok: bool) -> None:
    src = (f"proc p(X: f32[40] @ DRAM, Y: f32[40] @ DRAM):\n    for i in seq(0, 8):\n"
           f"        {body}\n")
    assert _Batch(_loop(src)).ok() is ok
    x, y = rand(40), rand(40)
    assert np.array_equal(run_sequential(parse_proc(src), {}, {"X": x, "Y": y})["X"],
                          run_sequential(parse_proc(src), {}, {"X": x, "Y": y},
                                         vectorise=False)["X"])


def test_control_arithmetic_wraps_at_32_bits() -> None:
    from gpusem.calculus.gpuir.ctrl import eval_c

    big = A.CBin("*", A.CInt(65536), A.CInt(65536))
    assert eval_c(big, {}) == 0
    assert eval_c(A.CBin("+", A.CInt(2**31 - 1), A.CInt(1)), {}) == -2**31
    assert eval_c(A.CBin("/", A.CInt(-7), A.CInt(2)), {}) == -3
    assert eval_c(A.CBin("%", A.CInt(-7), A.CInt(2)), {}) == -1


def test_warp_mma_gemm_is_float32_k_sequential() -> None:
    path = Path(__file__).parent / "conformance" / "gemm_sm80_mma.gpuir"
    proc = parse_proc(path.read_text(), str(path))
    a, b = rand(64, 64), rand(64, 64)
    c = run_sequential(proc, {"N": 64}, {"A": a, "B": b})["C"]
    acc = np.zeros((64, 64), f32)
    for k in range(64):
        acc = acc + np.multiply.outer(a[:, k], b[k, :])
    assert np.array_equal(c, acc)


def test_a_window_of_one_cell_aliases_it() -> None:
    """`w = X[1, 2]` names the cell, as every window names its cells: a write through
    w is a write of X[1, 2] (NumPy indexing by points alone would copy the value out;
    found by test_robustness: item assignment on a NumPy scalar)."""
    src = ("proc p(X: f32[4, 3] @ DRAM):\n    w = X[1, 2] @ DRAM\n    w = 5.0\n"
           "    X[0, 0] = w\n")
    x = run_sequential(parse_proc(src), {}, {"X": np.zeros((4, 3), f32)})["X"]
    assert x[1, 2] == 5.0 and x[0, 0] == 5.0 and np.count_nonzero(x) == 2


CONF = Path(__file__).parent / "conformance"


def _run_conf(name: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    text = (CONF / name).read_text()
    return run_sequential(parse_proc(text), header_defines(text), inputs)


def test_host_copies_atomics_and_tma_reduction_read_sequentially() -> None:
    """Issue 16's constructs in the sequential reading: stream-ordered copies copy,
    the memset zeroes, an atomic add adds (in program order), a TMA reduction adds
    its tile."""
    a = np.arange(64, dtype=np.float32)
    out = _run_conf("stream_copies.gpuir",
                    {"hA": a.copy(), "B": np.full(64, 7, np.float32)})
    assert np.array_equal(out["hB"], np.ones(64, np.float32))  # 0 (memset) + A = 1
    assert out["hA"][0] == out["hB"][3] and out["A"][5] == 1.0
    ints = np.arange(64, dtype=np.int32)
    out = _run_conf("atomic_sum_across_tasks.gpuir", {"A": ints})
    assert out["S"][0] == ints.sum() and out["hS"][0] == ints.sum() + 1
    out = _run_conf("atomic_sum_in_cta.gpuir", {"A": ints})
    assert list(out["B"][:2]) == [ints[:32].sum(), ints[32:].sum()]
    tiles = np.arange(2 * 64 * 32, dtype=np.float32).reshape(2, 64, 32)
    out = _run_conf("tma_reduce_split_k.gpuir",
                    {"A": tiles, "C": np.ones((64, 32), np.float32)})
    assert np.array_equal(out["C"], 1 + tiles[0] + tiles[1])
