"""The examples of examples/cypress (issue 30 item 5): each runs under seq and equals
its NumPy meaning: exactly for the GEMM family (integer data), within float32
rounding for FlashAttention (its `exp`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.cypress.inputs import header_inputs, make_inputs
from gpusem.calculus.cypress.reader import read_program
from gpusem.interpreter.cypress.seq import seq
from gpusem.interpreter.cypress.tree import check_tree, task_tree
from gpusem.typing_rules.cypress import check_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples/cypress"


def _softmax_v(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q.astype(np.float64) @ k.astype(np.float64).T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


EXACT = {
    "gemm": lambda a: {"C": a["A"] @ a["B"]},
    "batched_gemm": lambda a: {"C": a["A"] @ a["B"]},
    "dual_gemm": lambda a: {"C": a["A"] @ a["B1"] + a["A"] @ a["B2"]},
    "gemm_reduction": lambda a: {"C": a["A"] @ a["B"], "y": a["A"].sum(axis=1)},
}


def _read(name: str):  # type: ignore[no-untyped-def]
    text = (EXAMPLES / f"{name}.cyp").read_text()
    program = read_program(text, f"{name}.cyp")
    arrays, scalars = make_inputs(header_inputs(text) or "")
    return program, arrays, scalars


@pytest.mark.parametrize("name", [*EXACT, "flash_attention"])
def test_example_is_legal(name: str) -> None:
    program, arrays, scalars = _read(name)
    assert check_program(program) == []
    assert check_tree(task_tree(program, arrays, scalars)) == []


@pytest.mark.parametrize("name", list(EXACT))
def test_gemm_family_equals_numpy_exactly(name: str) -> None:
    program, arrays, scalars = _read(name)
    out, _ = seq(program, arrays, scalars)
    for tensor, want in EXACT[name](arrays).items():
        assert np.array_equal(out[tensor], want), tensor


def test_flash_attention_is_softmax_times_v() -> None:
    program, arrays, scalars = _read("flash_attention")
    out, _ = seq(program, arrays, scalars)
    want = _softmax_v(arrays["Q"], arrays["K"], arrays["V"])
    assert np.allclose(out["O"], want, rtol=0, atol=4 * np.finfo(np.float32).eps * 4)
    # the online rescaling matters: the first KV tile alone gives another answer
    first = _softmax_v(arrays["Q"], arrays["K"][:64], arrays["V"][:64])
    assert not np.allclose(out["O"], first, atol=1e-3)
