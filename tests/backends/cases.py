"""The hand-written test kernels: their launch specs, inputs and NumPy references.

Shared by the cpu harness tests, the nvcc compile check and the gpu tests. Every
reference is computed independently of the backends, in NumPy with explicit int32 /
float32 semantics (`c_div`, `c_rem`, `f2i` below spell out C and PTX meanings).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gpusem.compiler.backends.kernel import Job, KernelSpec, Param, ptr, scalar

KERNELS = Path(__file__).parent / "kernels"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def source(name: str) -> str:
    return (KERNELS / f"{name}.cu").read_text()


def spec(name: str, grid, block, params: tuple[Param, ...], dyn: int = 0) -> KernelSpec:
    return KernelSpec(name, source(name), grid, block, dyn, params)


def all_sources() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(KERNELS.glob("*.cu"))}


# ------------------------------------------------------------------ exact references
def wrap32(values) -> np.ndarray:
    """Python ints -> int32 with two's complement wrap-around."""
    return np.array(
        [((int(v) + 2**31) % 2**32) - 2**31 for v in values], dtype=np.int32
    )


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    q = q if (a < 0) == (b < 0) else -q
    return ((q + 2**31) % 2**32) - 2**31  # INT_MIN / -1 wraps


def f2i(x: np.float32) -> int:
    """cvt.rzi.s32.f32: truncate, saturate, NaN -> 0."""
    if np.isnan(x):
        return 0
    if x >= np.float32(2.0**31):
        return INT_MAX
    if x <= np.float32(-(2.0**31)):
        return INT_MIN
    return int(np.trunc(x))


def same_bits_or_both_nan(a: np.ndarray, b: np.ndarray) -> bool:
    """float32 arrays equal bit for bit, except that any NaN matches any NaN."""
    nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(nan | (a.view(np.uint32) == b.view(np.uint32))))


# ------------------------------------------------------------------ cases
@dataclass(frozen=True)
class Case:
    """A kernel run whose outcome is fully determined (same on every schedule/GPU)."""

    job: Job
    expect: dict[str, np.ndarray]
    check: Callable[[dict[str, np.ndarray]], bool] | None = None


def reduce_case(name: str = "reduce_sync", seed: int = 0) -> Case:
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, 1024).astype(np.float32)  # integer sums: exact
    s = spec(name, 4, 256, (ptr("in", "float32", 1024), ptr("out", "float32", 4)))
    expect = x.reshape(4, 256).sum(axis=1, dtype=np.float64).astype(np.float32)
    return Case(Job(s, {"in": x}, seed), {"out": expect})


def div0_job(seed: int = 0) -> Job:
    """`div_by_zero` on zero divisors: the launch traps (a CUDA error on a GPU)."""
    s = spec("div_by_zero", 1, 32, (ptr("a", "int32", 32), ptr("out", "int32", 32)))
    return Job(s, {"a": np.zeros(32, np.int32)}, seed)


def named_barriers_case(seed: int = 0) -> Case:
    rounds = 3
    x = np.arange(rounds * 64, dtype=np.int32) * 7 - 100
    s = spec(
        "named_barriers",
        1,
        96,
        (
            ptr("in", "int32", rounds * 64),
            ptr("out", "int32", rounds * 64),
            scalar("rounds", "int32"),
        ),
    )
    expect = x * 2 + np.repeat(np.arange(rounds, dtype=np.int32), 64)
    return Case(Job(s, {"in": x, "rounds": rounds}, seed), {"out": expect})


def mbarrier_case(
    name: str = "mbarrier_pipeline", seed: int = 0, rounds: int = 6
) -> Case:
    x = np.linspace(-3.0, 5.0, rounds * 32, dtype=np.float32)
    s = spec(
        name,
        1,
        64,
        (
            ptr("in", "float32", rounds * 32),
            ptr("out", "float32", rounds * 32),
            scalar("rounds", "int32"),
        ),
    )
    expect = (x * np.float32(3.0)) + np.float32(1.0)
    return Case(Job(s, {"in": x, "rounds": rounds}, seed), {"out": expect})


def cp_async_case(name: str = "cp_async_pipeline", seed: int = 0) -> Case:
    x = (np.arange(256, dtype=np.int64) * 1_000_003 % 9973 - 5000).astype(np.int32)
    s = spec(name, 1, 128, (ptr("in", "int32", 256), ptr("out", "int32", 128)))
    t = np.arange(128)
    expect = x[(t + 1) % 128] + x[128 + (t + 5) % 128]
    return Case(Job(s, {"in": x}, seed), {"out": expect.astype(np.int32)})


def shuffles_case(seed: int = 0) -> Case:
    x = (np.arange(64, dtype=np.int32) * 37 % 101) - 50
    s = spec("shuffles", 1, 64, (ptr("in", "int32", 64), ptr("out", "int32", 320)))
    out = np.zeros((64, 5), dtype=np.int64)
    for w in range(2):
        lanes = x[w * 32 : (w + 1) * 32].astype(np.int64)
        odd = sum(1 << lane for lane in range(32) if lanes[lane] % 2 != 0)
        for lane in range(32):
            t = w * 32 + lane
            out[t] = [
                lanes.sum(),
                lanes.sum() if lane == 0 else 0,
                lanes[7],
                lanes[lane - 1] if lane > 0 else lanes[0],
                odd,
            ]
    return Case(Job(s, {"in": x}, seed), {"out": wrap32(out.reshape(-1))})


def atomics_case(seed: int = 0) -> Case:
    rng = np.random.default_rng(5)
    x = rng.integers(-500, 500, 256).astype(np.int32)
    s = spec(
        "atomics",
        2,
        128,
        (
            ptr("in", "int32", 256),
            ptr("hist", "int32", 8),
            ptr("stats", "int32", 3),
            ptr("fsum", "float32", 1),
            ptr("lock", "int32", 1),
            ptr("locked_count", "int32", 1),
        ),
    )
    stats = np.array([INT_MIN, INT_MAX, 0], dtype=np.int32)
    inputs = {"in": x, "stats": stats}
    expect = {
        "hist": np.bincount(x & 7, minlength=8).astype(np.int32),
        "stats": np.array([x.max(), x.min(), 7], dtype=np.int32),
        "fsum": np.array([np.sum(x & 15)], dtype=np.float32),
        "lock": np.zeros(1, dtype=np.int32),
        "locked_count": np.array([256], dtype=np.int32),
    }
    return Case(Job(s, inputs, seed), expect)


def int_arith_case(seed: int = 0) -> Case:
    edge = [0, 1, -1, 2, -2, 7, -7, INT_MAX, INT_MIN, INT_MAX - 1, INT_MIN + 1, 65536]
    pairs = [(a, b) for a in edge for b in edge]
    rng = np.random.default_rng(3)
    pairs += [(int(a), int(b)) for a, b in rng.integers(INT_MIN, INT_MAX, (56, 2))]
    n = len(pairs)
    a = np.array([p[0] for p in pairs], dtype=np.int32)
    b = np.array([p[1] for p in pairs], dtype=np.int32)
    rows = []
    for x, y in pairs:
        rows.append(
            [
                x + y,
                x - y,
                x * y,
                -x,
                c_div(x, y) if y else 0,
                (x - y * c_div(x, y)) if y else 0,
                (x << (y & 31)),
                x >> (y & 31),
            ]
        )
    s = spec(
        "int_arith",
        (n + 63) // 64,
        64,
        (
            ptr("a", "int32", n),
            ptr("b", "int32", n),
            ptr("out", "int32", n * 8),
            scalar("n", "int32"),
        ),
    )
    expect = wrap32([v for row in rows for v in row])
    return Case(Job(s, {"a": a, "b": b, "n": n}, seed), {"out": expect})


def float_arith_case(seed: int = 0) -> Case:
    rng = np.random.default_rng(11)
    n = 256
    special = np.array(
        [
            0.0,
            -0.0,
            1e-40,
            -1e-45,
            3.4e38,
            np.inf,
            -np.inf,
            np.nan,
            1.0,
            3.0,
            0.1,
            1e10,
        ],
        dtype=np.float32,
    )
    a = np.concatenate([special, rng.standard_normal(n - 12).astype(np.float32) * 100])
    b = np.concatenate([special[::-1], rng.standard_normal(n - 12).astype(np.float32)])
    c = rng.standard_normal(n).astype(np.float32) * np.float32(1e-3)
    with np.errstate(all="ignore"):
        f1000 = a * np.float32(1000.0)
        out = (
            np.stack(
                [
                    (a * b) + c,
                    a - b,
                    a / b,
                    np.sqrt(a * a),
                    (a * b) + c,
                    np.array([np.float32(f2i(v)) for v in f1000], dtype=np.float32),
                ],
                axis=1,
            )
            .astype(np.float32)
            .reshape(-1)
        )
        conv = np.array([f2i(v) for v in a * np.float32(1e9)], dtype=np.int32)
    s = spec(
        "float_arith",
        4,
        64,
        (
            ptr("a", "float32", n),
            ptr("b", "float32", n),
            ptr("c", "float32", n),
            ptr("out", "float32", n * 6),
            ptr("conv", "int32", n),
            scalar("n", "int32"),
        ),
    )
    return Case(
        Job(s, {"a": a, "b": b, "c": c, "n": n}, seed),
        {"out": out, "conv": conv},
        check=lambda got: (
            same_bits_or_both_nan(got["out"], out) and np.array_equal(got["conv"], conv)
        ),
    )


def dynamic_smem_case(seed: int = 0) -> Case:
    x = np.arange(3 * 96, dtype=np.float32) * np.float32(0.5)
    s = spec(
        "dynamic_smem",
        3,
        96,
        (ptr("in", "float32", 288), ptr("out", "float32", 288)),
        dyn=96 * 4,
    )
    expect = x.reshape(3, 96)[:, ::-1].reshape(-1).copy()
    return Case(Job(s, {"in": x}, seed), {"out": expect})


def bulk_copy_case(seed: int = 0) -> Case:
    x = np.arange(128, dtype=np.int32) * 5 - 17
    s = spec("bulk_copy", 1, 128, (ptr("in", "int32", 128), ptr("out", "int32", 128)))
    return Case(Job(s, {"in": x}, seed), {"out": (x[::-1] * 3).astype(np.int32)})


def warp_sync_case(seed: int = 0) -> Case:
    x = np.arange(64, dtype=np.int32) - 20
    s = spec("warp_sync", 1, 64, (ptr("in", "int32", 64), ptr("out", "int32", 64)))
    t = np.arange(64)
    nb = np.where(t % 32 == 31, t - 31, t + 1)
    expect = x[nb] + np.int32((x > 0).sum())
    return Case(Job(s, {"in": x}, seed), {"out": expect.astype(np.int32)})


def wgmma_job(seed: int = 0) -> Job:
    # one full warpgroup (4 warps): the .aligned wgmma instructions need all of it
    return Job(spec("wgmma_fence", 1, 128, (ptr("out", "float32", 128),)), {}, seed)


# Cases whose result is the same on every schedule and on a real GPU.
DETERMINED: dict[str, Callable[..., Case]] = {
    "reduce_sync": reduce_case,
    "named_barriers": named_barriers_case,
    "mbarrier_pipeline": mbarrier_case,
    "cp_async_pipeline": cp_async_case,
    "shuffles": shuffles_case,
    "atomics": atomics_case,
    "int_arith": int_arith_case,
    "float_arith": float_arith_case,
    "dynamic_smem": dynamic_smem_case,
    "bulk_copy": bulk_copy_case,
    "warp_sync": warp_sync_case,
}


def matches(case: Case, outputs: dict[str, np.ndarray]) -> bool:
    if case.check is not None:
        return case.check(outputs)
    return all(np.array_equal(outputs[k], v) for k, v in case.expect.items())
