"""The fused mma, end to end (errata "Extension: fused mma"): Cypress's leaf `mma_fma`
(C = fma(A, B, C) for k ascending, one rounding a step), GPU IR's
`Sm90_wgmma_m64nNk8_f32_fma` with the same meaning, the lowering of the one to the
other, and gpuir_cuda's emulation of it with `gs_ffma` (__fmaf_rn: FFMA).

The reference fma (calculus/fma32.py) is checked here on vectorised batches of hard
cases against exact rational arithmetic, beside tests/bundl/test_fma.py's hypothesis
triples: ties and a hair off them (where a binary64 sum rounds twice), cancellation of
the product's own rounding error, subnormal results, overflow and its undoing by c;
and against C's `fmaf` built by g++ with `-ffp-contract=off`. The same checks reject
the naive `float32(double(a) * b + c)`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gpusem.api import exec_file
from gpusem.api.options import ExecOptions
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import BadInput, Trap
from gpusem.calculus.fma32 import fma32, fma32_vec
from gpusem.calculus.gpuir.instructions import INSTRUCTIONS
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda import instr
from gpusem.compiler.gpuir_cuda.instr import FUSED_PAIRS, FusedNest
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from gpusem.compiler.gpuir_cuda.run import Verdict, check_batch
from gpusem.interpreter.cypress.leaf import mma_fused
from gpusem.interpreter.gpuir.sequential import run_sequential

from tests.bundl.test_fma import fma_exact
from tests.cypress.gpuir_reading import reading_case
from tests.script_module import load_script

F32 = np.float32
FUSED, PLAIN = "Sm90_wgmma_m64nNk8_f32_fma", "Sm90_wgmma_m64nNk8_f32"


def _f32(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, np.uint32).view(F32)


def _naive(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """What the brief warns of: the exact product, one binary64 sum, then float32:
    two roundings."""
    with np.errstate(all="ignore"):
        return (a.astype(np.float64) * b + c.astype(np.float64)).astype(F32)


def per_batch() -> int:
    return 1500


def hard_triples(per: int = 1500, seed: int = 30) -> dict[str, tuple[np.ndarray, ...]]:
    """Batches of float32 triples (a, b, c), each where an fma is easy to get wrong."""
    rng = np.random.default_rng(seed)
    out = {}
    # ties: (1 + 2^-k)(1 + 2^-(24-k)) = 1 + 2^-k + 2^-(24-k) + 2^-24, the last term
    # half an ulp of 1; c puts it on the tie, a product bit past it, or 2^-60 / 2^-70
    # off it (a binary64 sum drops those and lands on the tie: double rounding)
    k = rng.integers(1, 24, per)
    sign = rng.choice([-1.0, 1.0], per)
    scale = 2.0 ** rng.integers(-60, 61, per)
    offs = np.array([0.0, 2.0**-23, -(2.0**-23), 2.0**-48, -(2.0**-48), 2.0**-60,
                     -(2.0**-60), 2.0**-70, -(2.0**-70), -1.0])
    out["ties"] = (((1 + 2.0**-k) * sign * scale).astype(F32),
                   (1 + 2.0 ** -(24 - k)).astype(F32),
                   (rng.choice(offs, per) * sign * scale).astype(F32))
    # cancellation: c = -round(a * b), so a * b + c is the product's rounding error
    # (exactly representable; a mul + add gives 0), and c a few ulps away from it
    a = _f32(rng.integers(0x3F000000, 0x40000000, per))
    b = _f32(rng.integers(0x3F000000, 0x40000000, per)) * rng.choice([-1, 1], per)
    ab = (a * b).astype(F32)
    ulps = rng.integers(-3, 4, per).astype(np.int64)
    c = _f32((np.abs(ab).view(np.uint32).astype(np.int64) + ulps).astype(np.uint32)) \
        * -np.sign(ab)
    out["cancellation"] = (a, b.astype(F32), c.astype(F32))
    # subnormal results: |a b| about 2^-150 .. 2^-126, c subnormal or zero
    ea = rng.integers(-80, -60, per)
    a = (rng.uniform(1, 2, per) * 2.0**ea).astype(F32)
    b = (rng.uniform(1, 2, per) * 2.0 ** (rng.integers(-150, -126, per) - ea)
         * rng.choice([-1, 1], per)).astype(F32)
    c = _f32(rng.integers(0, 0x00800000, per) | (rng.integers(0, 2, per) << 31))
    out["subnormal"] = (a, b, c)
    # overflow: |a b| from just below FLT_MAX to 4x past it, c undoing part of it or
    # not (6e38 - 3e38 is finite: a rounded product would already be inf)
    a = _f32(rng.integers(0x5F000000, 0x5F800000, per))  # [2^63, 2^64)
    b = _f32(rng.integers(0x5F000000, 0x60000000, per)) * rng.choice([-1, 1], per)
    c = (-np.sign(b) * rng.choice([0.0, 1e38, 3.0e38, 3.4e38], per)).astype(F32)
    out["overflow"] = (a, b.astype(F32), c)
    # anything: raw bits (zeros of both signs, inf, nan, subnormals)
    out["raw bits"] = tuple(_f32(rng.integers(0, 2**32, per, dtype=np.uint64))
                            for _ in range(3))
    return out


def _same_bits(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (np.isnan(x) & np.isnan(y)) | (x.view(np.uint32) == y.view(np.uint32))


def _exact(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.array([fma_exact(*t) for t in zip(a, b, c, strict=True)], F32)


def test_fma32_vec_is_exact_on_hard_cases_and_the_naive_sum_is_not() -> None:
    wrong_naive, wrong_unfused = {}, {}
    for kind, (a, b, c) in hard_triples().items():
        want = _exact(a, b, c)
        got = fma32_vec(a, b, c)
        bad = ~_same_bits(got, want)
        assert not bad.any(), (kind, a[bad][:3], b[bad][:3], c[bad][:3])
        wrong_naive[kind] = int((~_same_bits(_naive(a, b, c), want)).sum())
        with np.errstate(all="ignore"):
            unfused = (a * b).astype(F32) + c
        wrong_unfused[kind] = int((~_same_bits(unfused, want)).sum())
    # the same check rejects the double-rounding fma (binary64 sum, then float32)
    # on the ties a hair off (about a fifth of them), and a multiply and an add in
    # float32 on cancellation (the product's rounding error) and overflow
    assert wrong_naive["ties"] > per_batch() // 10, wrong_naive
    assert min(wrong_unfused["cancellation"], wrong_unfused["overflow"]) > \
        per_batch() // 10, wrong_unfused
    # the batches are hard ones: subnormal results, exact cancellation, infinities
    a, b, c = hard_triples()["subnormal"]
    r = fma32_vec(a, b, c)
    assert ((r != 0) & (np.abs(r) < np.finfo(F32).tiny)).sum() > 100
    a, b, c = hard_triples()["overflow"]
    r = fma32_vec(a, b, c)
    assert np.isinf(r).sum() > 100 and np.isfinite(r).sum() > 100


def test_fma32_equals_c_fmaf_built_with_g_plus_plus(tmp_path: Path) -> None:
    """glibc's fmaf (correctly rounded), contraction off: bit for bit, every batch."""
    gxx = shutil.which("g++")
    assert gxx, "g++ (the cpu harness's compiler) is needed"
    src = tmp_path / "fmaf.cpp"
    src.write_text(
        "#include <cmath>\n#include <cstdio>\n#include <cstring>\n#include <cstdint>\n"
        "int main() { uint32_t x[3]; float f[3];\n"
        "  while (scanf(\"%x %x %x\", &x[0], &x[1], &x[2]) == 3) {\n"
        "    std::memcpy(f, x, sizeof f); float r = fmaf(f[0], f[1], f[2]);\n"
        "    uint32_t o; std::memcpy(&o, &r, 4); printf(\"%08x\\n\", o); }\n}\n")
    exe = tmp_path / "fmaf"
    subprocess.run([gxx, "-O2", "-ffp-contract=off", "-fno-fast-math", str(src),
                    "-o", str(exe)], check=True, timeout=120)
    batches = hard_triples(per=800, seed=31)
    a, b, c = (np.concatenate([t[i] for t in batches.values()]) for i in range(3))
    stdin = "".join(f"{x:08x} {y:08x} {z:08x}\n" for x, y, z in zip(
        a.view(np.uint32), b.view(np.uint32), c.view(np.uint32), strict=True))
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    theirs = np.array([int(w, 16) for w in out], np.uint32).view(F32)
    assert theirs.shape == a.shape
    ours = fma32_vec(a, b, c)
    assert _same_bits(ours, theirs).all()
    assert not _same_bits(_naive(a, b, c), theirs).all()


# ------------------------------------------------------------------ the two meanings


def _floats(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """float32 with full 24-bit significands: every product rounds."""
    return rng.uniform(-2, 2, shape).astype(F32)


def _loop_fma(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The leaf's meaning written out one element and one k at a time."""
    out = c.copy()
    for m, n in np.ndindex(*c.shape):
        for k in range(a.shape[1]):
            out[m, n] = fma32(a[m, k], b[k, n], out[m, n])
    return out


def test_the_fused_leaf_is_one_fma_a_step_in_k_order() -> None:
    rng = np.random.default_rng(4)
    c, a, b = _floats(rng, (5, 6)), _floats(rng, (5, 9)), _floats(rng, (9, 6))
    got = mma_fused(c, a, b)
    assert np.array_equal(got.view(np.uint32), _loop_fma(c, a, b).view(np.uint32))
    # not the plain leaf's float64 sum rounded once, nor a multiply and an add a step
    plain = (c.astype(np.float64) + a.astype(np.float64) @ b).astype(F32)
    twice = c.copy()
    for k in range(a.shape[1]):
        twice = twice + np.multiply.outer(a[:, k], b[k]).astype(F32)
    assert not np.array_equal(got, plain) and not np.array_equal(got, twice)


def test_both_meanings_agree_on_integer_data() -> None:
    """The benchmark's data: integers in [-3, 3]; every partial sum is exact, so the
    fused leaf, the plain leaf and the exact product are one matrix (what lets
    scripts/cypress_gemm_gpu.py check fused rows against the exact product)."""
    rng = np.random.default_rng(5)
    c = np.zeros((64, 32), F32)
    a = rng.integers(-3, 4, (64, 128)).astype(F32)
    b = rng.integers(-3, 4, (128, 32)).astype(F32)
    exact = (a.astype(np.float64) @ b).astype(F32)
    assert np.array_equal(mma_fused(c, a, b), exact)
    d, d2 = np.zeros((64, 32), F32), np.zeros((64, 32), F32)
    INSTRUCTIONS[FUSED].behaviour(d=d, a=a[:, :8], b=b[:8].T.copy())
    INSTRUCTIONS[PLAIN].behaviour(d=d2, a=a[:, :8], b=b[:8].T.copy())
    assert np.array_equal(d, d2) and np.array_equal(d, a[:, :8] @ b[:8])


def test_the_integer_shortcut_is_the_loop_bit_for_bit() -> None:
    """fma32.mma_fused takes one matrix product on integer data where no step can
    round (fma32._integer_mma); it must give the element-by-element loop's bits,
    the zero's sign included (a -0 in C must come out -0 when every product is
    -0), and rounding data just past 2^24 must still round as the loop does."""
    from gpusem.calculus import fma32 as fma_mod

    rng = np.random.default_rng(11)
    cases = []
    for scale in (1, 3, 1000, 2**11):  # the last: sums up to about 2^24 and past it
        a = rng.integers(-scale, scale + 1, (6, 9)).astype(F32)
        b = rng.integers(-scale, scale + 1, (9, 5)).astype(F32)
        c = rng.integers(-scale, scale + 1, (6, 5)).astype(F32)
        cases.append((c, a, b))
    # zeros: -0 products (-0 * 3, 0 * -3) onto +0 accumulators (the shortcut) and
    # onto -0 ones (the loop)
    neg_zero, three = np.full((2, 3), -0.0, F32), np.full((3, 2), 3.0, F32)
    cases.append((np.array([[0.0, 0.0], [2.0, 1.0]], F32), neg_zero, three))
    cases.append((np.array([[-0.0, 0.0], [-0.0, 1.0]], F32), neg_zero, three))
    cases.append((np.array([[-0.0, 0.0], [-0.0, 1.0]], F32), np.zeros((2, 3), F32),
                  -three))
    # just past 2^24: 2^24 + 1 is not a float32, so the loop rounds
    cases.append((np.full((1, 1), 2.0**24, F32), np.ones((1, 3), F32),
                  np.ones((3, 1), F32)))
    took = []
    for c, a, b in cases:
        took.append(fma_mod._integer_mma(c, a, b) is not None)
        got = mma_fused(c, a, b)
        want = _loop_fma(c, a, b)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (c, a, b)
    # the shortcut was taken on the small cases and the +0 C (the fourth, near
    # 2^24, either way), refused on the -0 C and past 2^24
    assert took == [True] * 3 + [took[3], True, False, False, False], took


def test_the_fused_wgmma_means_the_fused_leaf() -> None:
    rng = np.random.default_rng(6)
    d, a, bt = _floats(rng, (64, 16)), _floats(rng, (64, 8)), _floats(rng, (16, 8))
    want = mma_fused(d, a, bt.T)
    plain = d.copy()
    INSTRUCTIONS[PLAIN].behaviour(d=plain, a=a, b=bt)
    INSTRUCTIONS[FUSED].behaviour(d=d, a=a, b=bt)
    assert np.array_equal(d.view(np.uint32), want.view(np.uint32))
    assert not np.array_equal(d, plain)
    g, h = INSTRUCTIONS[FUSED], INSTRUCTIONS[PLAIN]
    assert (g.params, g.unit, g.barrier, g.sizes) == (h.params, h.unit, h.barrier,
                                                      h.sizes)


def test_the_reader_takes_mma_fma_and_refuses_a_wrong_arity() -> None:
    src = ("@task(\"g\", Leaf, reads=[\"A\", \"B\", \"C\"], writes=[\"C\"])\n"
           "def g(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32]):\n"
           "    {call}\n")
    read_program(src.replace("{call}", "mma_fma(C, A, B)"), "fused.cyp")
    with pytest.raises(BadInput):
        read_program(src.replace("{call}", "mma_fma(C, A)"), "fused.cyp")


def test_the_fused_leaf_refuses_int32_and_bad_shapes() -> None:
    from gpusem.calculus.span import NO_SPAN
    from gpusem.interpreter.cypress.leaf import apply
    from gpusem.interpreter.cypress.views import View, root_view

    def view(a: np.ndarray) -> View:
        return root_view("X", a)

    ints = [np.zeros((2, 2), np.int32) for _ in range(3)]
    with pytest.raises(Trap, match="leaf mma_fma: fused mma of int32"):
        apply("mma_fma", tuple(view(x) for x in ints), NO_SPAN)
    fl = [np.zeros(s, F32) for s in ((2, 2), (2, 3), (2, 2))]
    with pytest.raises(Trap, match="leaf mma_fma: shapes"):
        apply("mma_fma", tuple(view(x) for x in fl), NO_SPAN)


# --------------------------------------------------------- lowering and compiling


@pytest.fixture(scope="module")
def lowered() -> dict[bool, str]:
    """The GPU IR of Fig. 5 (N = 256, the 64 x 64 tile: the smallest kernel) and of
    our fused variant."""
    mod = load_script("cypress_gemm_gpu")
    m = mod.MAPPINGS["u64-v64-wgs1-p4"]
    return {f: mod.lower(mod.render(256, m.as_fused() if f else m), "hopper")[3]
            for f in (False, True)}


def test_the_fused_leaf_lowers_to_the_fused_wgmma_alone(
        lowered: dict[bool, str]) -> None:
    plain, fused = lowered[False], lowered[True]
    assert f"{PLAIN}(D[" in plain and FUSED not in plain
    assert f"{FUSED}(D[" in fused
    assert fused.replace(FUSED, PLAIN) == plain  # nothing else moves
    mod = load_script("cypress_gemm_gpu")
    text = mod.render(256, mod.VARIANTS["fig5-hopper"].as_fused())
    assert text.startswith("# OURS, NOT THE PAPER'S") and "    mma_fma(C, A, B)\n" \
        in text
    with pytest.raises(BadInput, match="not lowered: the fused mma leaf"):
        mod.lower(mod.render(256, mod.VARIANTS["fig5-fma"].as_fused()), "fma")


def test_gpuir_cuda_emits_one_ffma_a_step_for_the_fused_wgmma_only(
        lowered: dict[bool, str]) -> None:
    def cuda(text: str) -> str:
        proc = parse_module(text, "fig5.gpuir").procs[-1]
        return compile_proc(proc, {"M": 256, "N": 256, "K": 256}, source=text).source

    plain, fused = cuda(lowered[False]), cuda(lowered[True])
    step = "gs_ffma(gs_a0[gs_k], gs_b[gs_k], gs_d0)"
    assert step in fused and step not in plain
    assert "gs_fadd(gs_d0, gs_fmul(gs_a0[gs_k], gs_b[gs_k]))" in plain
    assert "gs_fmul" not in fused.split("gs_ffma", 1)[1].split("gs_kc", 1)[0]


SIZES = {"M": 256, "N": 256, "K": 256}


def _grouped_nest(text: str, a_copy: bool = True) -> str:
    """The first wgmma nest of the CUDA with cyperf4's grouped nest on (whatever
    the compiler's default, instr.FUSED_NEST)."""
    proc = parse_module(text, "fig5.gpuir").procs[-1]
    cuda = compile_proc(proc, SIZES, source=text,
                        fused=FusedNest(grouped=True, a_copy=a_copy)).source
    return cuda.split("float gs_a0[", 2)[1]


def _agrees(text: str, nest: FusedNest) -> Verdict:
    """`gpusem exec`'s check (its full-significand inputs, the GPU IR reading, the
    cpu harness under 3 schedules) of the CUDA compiled with `nest`."""
    case = reading_case(text, SIZES, "fig5.gpuir")   # one reading a text and sizes
    case.compiled = compile_proc(case.proc, SIZES, source=text, fused=nest)
    return check_batch([case], "cpu")[0]


def test_the_fused_nest_interleaves_independent_accumulators(
        lowered: dict[bool, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiles of FUSED_MIN_SHARE registers a thread or more (Fig. 5's 64 x 256):
    per k of a chunk, one FFMA into each of a group's 4 x FUSED_PAIRS accumulators
    in turn, so no FFMA waits on the one before it (cyperf4); smaller tiles keep
    the element-pair nest (the test above: 64 x 64 tiles, 32 registers)."""
    monkeypatch.setattr(instr, "FUSED_MIN_SHARE", 32)
    nest = _grouped_nest(lowered[True])
    k_loop = nest.index("for (int gs_k = 0; gs_k < 4; gs_k++) {\n")
    pairs = nest.index(f"for (int gs_p = 0; gs_p < {2 * FUSED_PAIRS}; gs_p++)",
                       k_loop)
    assert k_loop < pairs < nest.index("gs_ffma(", pairs)  # k outside, elements in
    assert FUSED_PAIRS >= 2 and "gs_d0" not in nest


@pytest.mark.parametrize("a_copy", [False, True])
def test_the_grouped_fused_nest_equals_its_reading_on_the_cpu_harness(
        lowered: dict[bool, str], monkeypatch: pytest.MonkeyPatch,
        a_copy: bool) -> None:
    """The grouped nest (forced on the 64 x 64 tiles) keeps each element's k order:
    on `gpusem exec`'s floats with full significands, where any other order of an
    element's fmas gives other bits, it agrees with the GPU IR reading."""
    monkeypatch.setattr(instr, "FUSED_MIN_SHARE", 32)
    assert "gs_b[gs_p][gs_k]" in _grouped_nest(lowered[True], a_copy)
    v = _agrees(lowered[True], FusedNest(grouped=True, a_copy=a_copy))
    assert v.agree, v.describe()


def test_fig5s_own_fused_tiles_take_the_grouped_nest_and_agree(
        tmp_path: Path) -> None:
    """Fig. 5's mapping fused (64 x 256 tiles, 128 registers a thread) gets the
    grouped nest without forcing FUSED_MIN_SHARE, and `gpusem exec` (the
    compiler's default nest) on full-significand floats agrees with its GPU IR
    reading on the cpu harness."""
    mod = load_script("cypress_gemm_gpu")
    text = mod.lower(mod.render(256, mod.VARIANTS["fig5-hopper"].as_fused()),
                     "hopper")[3]
    assert "gs_b[gs_p][gs_k]" in _grouped_nest(text)
    out = tmp_path / "fig5_hopper_fused.gpuir"
    out.write_text(text)
    run = exec_file(str(out), ExecOptions(backend="cpu"))
    assert run.agree, run


def test_the_fused_gemm_equals_its_reading_on_the_cpu_harness_on_any_floats(
        lowered: dict[bool, str], tmp_path: Path) -> None:
    """`gpusem exec` draws floats with full 24-bit significands (not integers), so
    the compiled FFMA nest must round exactly as the fused reading; and that
    reading is not the plain one on these inputs (the check is not vacuous)."""
    out = tmp_path / "fig5_fused.gpuir"
    out.write_text(lowered[True])
    run = exec_file(str(out), ExecOptions(backend="cpu"))
    assert run.agree, run
    mod = parse_module(lowered[True], "fig5_fused.gpuir")
    plain = parse_module(lowered[False], "fig5.gpuir")
    defines = {"M": 256, "N": 256, "K": 256}
    rng = np.random.default_rng(7)
    arrays = {"A": _floats(rng, (256, 256)), "B": _floats(rng, (256, 256)),
              "C": np.zeros((256, 256), F32), "Bt": np.zeros((256, 256), F32)}
    got = {}
    for name, m in (("fused", mod), ("plain", plain)):
        got[name] = run_sequential(m.procs[-1], defines, arrays)["C"].reshape(256, 256)
    exact = (arrays["A"].astype(np.float64) @ arrays["B"]).astype(F32)
    assert not np.array_equal(got["fused"], got["plain"])
    # one rounding a step is closer to the exact product than two
    err = {k: float(np.abs(v.astype(np.float64) - exact).mean()) for k, v in got.items()}
    assert err["fused"] < err["plain"], err


def test_the_lowering_keeps_the_fused_k_order_on_any_floats() -> None:
    """The Cypress reading of our fused Fig. 5 and the GPU IR reading of its lowering
    agree bit for bit on floats with full significands, where the order of the
    fmas is the result: the leaf's k ascending within a K step and across them is
    the four k8 wgmmas' order."""
    mod = load_script("cypress_gemm_gpu")
    from gpusem.interpreter.cypress.seq import seq

    m = mod.MAPPINGS["u64-v64-wgs1-p4"].as_fused()
    program, _, scalars, gpuir = mod.lower(mod.render(128, m), "hopper")
    rng = np.random.default_rng(8)
    floats = {"A": _floats(rng, (128, 128)), "B": _floats(rng, (128, 128)),
              "C": np.zeros((128, 128), F32)}
    cypress = seq(program, {k: v.copy() for k, v in floats.items()}, scalars)[0]["C"]
    proc = parse_module(gpuir, "fig5_fused.gpuir").procs[-1]
    gpu_ir = run_sequential(proc, {"M": 128, "N": 128, "K": 128}, floats)["C"]
    assert np.array_equal(cypress.view(np.uint32),
                          gpu_ir.reshape(128, 128).view(np.uint32))
    assert not np.array_equal(cypress, (floats["A"].astype(np.float64)
                                        @ floats["B"]).astype(F32))


def test_the_fused_gemm_on_the_cpu_harness_equals_the_cypress_reading() -> None:
    """scripts/cypress_gemm_gpu.py's row on the cpu backend: the fused Fig. 5
    (64 x 64 tiles) compiled, run, equal to the Cypress reading and the exact
    product; the benchmark's check of every fused row on the GPU."""
    import argparse

    from gpusem.compiler.backends.registry import shared_backend

    mod = load_script("cypress_gemm_gpu")
    args = argparse.Namespace(check_upto=256, timeout=300.0, warmup=0, iters=1)
    m = mod.MAPPINGS["u64-v64-wgs1-p4"].as_fused()
    r = mod.row(256, "u64-v64-wgs1-p4-fused", m, args, shared_backend("cpu"))
    assert r["mapping"]["leaf"] == "mma_fma"
    assert r["lowered"] == "yes" and r["agree_reading"] is True, r
    assert r["agree_exact"] is True, r


def test_exo_gpu_has_no_fused_wgmma_and_its_emitter_refuses_it() -> None:
    """Exo-GPU's wgmma is tf32 on a tensor core (compiler/gpuir_exo/emit_wgmma.py):
    a GEMM its emitter maps with the plain wgmma is unexpressible with ours."""
    from gpusem.compiler.gpuir_exo.emit import Unexpressible, emit_proc
    from gpusem.fuzz.exo.wgmma_gemms import WgmmaGemm

    src = WgmmaGemm(wgs=2, n=16, ksteps=2, stages=2, tasks=2).source()
    assert f"{PLAIN}(" in src
    emit_proc(parse_module(src, "w.gpuir").procs[-1], {}, "pldi26")
    fused = parse_module(src.replace(f"{PLAIN}(", f"{FUSED}("), "w.gpuir").procs[-1]
    with pytest.raises(Unexpressible):
        emit_proc(fused, {}, "pldi26")
