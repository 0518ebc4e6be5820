"""Appendix B of the Prism paper (examples/prism/appendix_b, CORRECTIONS.md): every
printed listing is parsed or rejected with its named reason; every corrected program
runs on the Bundl machine and ends in the memory NumPy computes from the program's
specification (SGEMM: C = alpha A B + beta C; B.4: a copy), with the inputs of its own
`# arg` header."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gpusem.api.prism import parse
from gpusem.calculus.errors import GpusemError
from gpusem.calculus.prism.parser import parse_prism
from gpusem.fuzz.bundl.compile_property import check_program as compile_check
from gpusem.interpreter.bundl.big_step import run_big_step
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program
from gpusem.typing_rules.prism.surface import check_surface

ROOT = Path(__file__).resolve().parents[2] / "examples" / "prism" / "appendix_b"

PRINTED = {
    "b1_tf32_mma": ("Printed-Empty-Level", 60, 14),
    "b2_sgemm_1_naive": ("Surface-Toplevel", 28, 4),
    "b2_sgemm_2_coalesced": ("Surface-Syntax", 4, 30),
    "b2_sgemm_3_blocktiling": ("Surface-Syntax", 4, 13),
    "b2_sgemm_4_float4": ("Printed-Empty-Level", 20, 32),
    "b3_scan": ("Printed-Empty-Level", 3, 14),
    "b4_block_load": ("Surface-Syntax", 13, 14),
    "b4_warp_load": ("Surface-Syntax", 13, 14),
    "b4_thread_load": None,
    "b4_thread_store": None,
    "b4_block_store": None,
    "b4_warp_store": None,
    "b5_h100_gemm": ("Printed-Continuation-Mark", 174, 17),
}


def test_every_printed_listing_is_accounted_for():
    assert sorted(p.stem for p in (ROOT / "printed").glob("*.prism")) == sorted(PRINTED)


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_printed_is_parsed_or_rejected_with_its_reason(name):
    path = ROOT / "printed" / f"{name}.prism"
    want = PRINTED[name]
    if want is None:
        check_surface(parse_prism(path.read_text(), str(path)))
        return
    with pytest.raises(GpusemError) as e:
        check_surface(parse_prism(path.read_text(), str(path)))
    got = (e.value.rule, e.value.span.line, e.value.span.column)
    assert got == want, e.value.one_line()


def args(path: Path) -> dict[str, np.ndarray | float]:
    launch = parse_prism(path.read_text(), str(path)).launch
    assert launch is not None
    out: dict[str, np.ndarray | float] = {}
    for a in launch.args:
        if a.elem is None:
            assert a.values is not None
            out[a.name] = a.values[0]
        elif a.iota:
            out[a.name] = np.arange(a.size, dtype=np.float64)
        elif a.values is None:
            out[a.name] = np.zeros(a.size)
        else:
            out[a.name] = np.array(a.values, dtype=np.float64)
    return out


def sgemm(a: dict) -> np.ndarray:
    # float32 is exact here: small integer inputs, sums far below 2^24
    A = np.asarray(a["A"], np.float32).reshape(a["M"], a["K"])
    B = np.asarray(a["B"], np.float32).reshape(a["K"], a["N"])
    C = np.asarray(a["C"], np.float32).reshape(a["M"], a["N"])
    return (np.float32(a["alpha"]) * (A @ B) + np.float32(a["beta"]) * C).ravel()


def matmul(a: dict) -> np.ndarray:
    # B.1 computes C = A B (C starts at zero); exact on the small integers of the header
    A = np.asarray(a["A"], np.float32).reshape(a["M"], a["K"])
    B = np.asarray(a["B"], np.float32).reshape(a["K"], a["N"])
    return (A @ B).ravel()


def gemm_abt(a: dict) -> np.ndarray:
    # B.5 computes C = A B^T, A (M x K) and B (N x K) row-major as its tensor maps
    # load them, C column-major (C[n * M + m]); exact on the header's small integers
    A = np.asarray(a["A"], np.float32).reshape(a["M"], a["K"])
    B = np.asarray(a["B"], np.float32).reshape(a["N"], a["K"])
    return (A @ B.T).T.ravel()


CORRECTED = {
    "b1_tf32_mma": ("C", matmul),
    "b2_sgemm_1_naive": ("C", sgemm),
    "b2_sgemm_2_coalesced": ("C", sgemm),
    "b2_sgemm_3_blocktiling": ("C", sgemm),
    "b2_sgemm_4_float4": ("C", sgemm),
    "b3_scan": ("x", lambda a: np.cumsum(a["x"])),
    "b4_cub_copy": ("out", lambda a: a["inp"]),
    "b5_h100_gemm": ("C", gemm_abt),
}


def test_every_corrected_program_has_an_expectation():
    assert sorted(p.stem for p in (ROOT / "corrected").glob("*.prism")) == sorted(
        CORRECTED)


@pytest.mark.parametrize("name", sorted(CORRECTED))
def test_corrected_runs_and_matches_numpy(name):
    path = ROOT / "corrected" / f"{name}.prism"
    prog = parse(path.read_text(), str(path))
    check_program(prog)
    out, spec = CORRECTED[name]
    want = np.asarray(spec(args(path)), np.float64)
    big = run_big_step(prog)
    assert big.kind == "terminated", big.message
    assert np.array_equal(np.asarray(big.globals[out], np.float64), want)


@pytest.mark.parametrize("name", ["b2_sgemm_1_naive", "b4_cub_copy"])
def test_corrected_small_step_agrees(name):
    path = ROOT / "corrected" / f"{name}.prism"
    prog = parse(path.read_text(), str(path))
    out, spec = CORRECTED[name]
    small = run_program(prog, "random:2", max_steps=5_000_000)
    assert small.kind == "terminated", small.message
    assert np.array_equal(np.asarray(small.globals[out], np.float64),
                          np.asarray(spec(args(path)), np.float64))


@pytest.mark.parametrize("name", ["b2_sgemm_1_naive", "b2_sgemm_2_coalesced"])
def test_corrected_compiles_and_agrees_on_cpu(name):
    path = ROOT / "corrected" / f"{name}.prism"
    v = compile_check(parse(path.read_text(), str(path)), "cpu", (0, 1))
    assert v.agree, (v.kind, v.message)
