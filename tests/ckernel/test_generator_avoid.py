"""A campaign steers the CKernel generator away from a known bug's templates
(GPUSEM_CKERNEL_AVOID), so that T1 (issue 23) does not hide other findings."""

from __future__ import annotations

import pytest
from gpusem.calculus.errors import BadInput
from gpusem.fuzz.ckernel import templates
from gpusem.fuzz.ckernel.coverage import coverage_of
from gpusem.fuzz.ckernel.templates import kernels
from hypothesis import HealthCheck, given, settings


def _draw_idioms(n: int) -> set[str]:
    seen: set[str] = set()

    @settings(max_examples=n, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(kernels())
    def run(k) -> None:
        seen.update(coverage_of(k))

    run()
    return seen


def test_avoided_templates_are_never_drawn(monkeypatch) -> None:
    before = _draw_idioms(150)
    assert {"idiom:t1-branch", "idiom:ptr-select-written"} <= before
    monkeypatch.setenv(templates.AVOID_ENV, "t1,psel")
    after = _draw_idioms(150)
    t1_shapes = {"idiom:t1-branch", "idiom:t1-branch-store", "idiom:ptr-select",
                 "idiom:ptr-select-written"}
    assert not t1_shapes & after, sorted(after)
    assert len(after) >= 15  # the rest of the generator still reaches its idioms


def test_an_unknown_template_is_bad_input(monkeypatch) -> None:
    monkeypatch.setenv(templates.AVOID_ENV, "t1,nope")
    with pytest.raises(BadInput, match="unknown template"):
        templates.allowed(templates.TEMPLATES)
