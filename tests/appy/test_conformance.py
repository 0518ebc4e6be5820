"""Conformance: every `tests/appy/conformance/*.py` and `examples/appy/*.py` states its
expectation in a header (`# expect: legal | illegal RULE | bad-input PREFIX`) and its
inputs (`# inputs: A=float32[8] N=8`); one runner reads them all (STYLE 19)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.errors import BadInput
from gpusem.fuzz.appy.inputs import make_inputs
from gpusem.interpreter.appy.legality import check_legal
from gpusem.interpreter.appy.machine import run_machine

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "tests/appy/conformance").glob("*.py")) + sorted(
    (ROOT / "examples/appy").glob("*.py"))


def header(text: str, key: str) -> str | None:
    m = re.search(rf"^# {key}: (.*)$", text, re.MULTILINE)
    return m[1].strip() if m else None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_conformance(path: Path) -> None:
    text = path.read_text()
    expect = header(text, "expect")
    assert expect is not None, f"{path.name} has no '# expect:' header"
    if expect.startswith("bad-input"):
        with pytest.raises(BadInput) as err:
            parse_program(text, path.name)
        assert err.value.prefix == expect.removeprefix("bad-input").strip()
        return
    fn = parse_program(text, path.name)
    arrays, scalars = make_inputs(header(text, "inputs") or "")
    verdict = check_legal(fn, arrays, scalars)
    if expect == "legal":
        assert verdict.legal, verdict.message
        # ... and the abstract machine, any worker order, computes the same.
        for seed in (1, 2):
            out = run_machine(fn, arrays, scalars, seed=seed)
            for k, v in verdict.expected.items():
                np.testing.assert_allclose(out[k], v, rtol=1e-5, atol=1e-5)
    else:
        rule = expect.removeprefix("illegal").strip()
        assert not verdict.legal and verdict.rule == rule, verdict
