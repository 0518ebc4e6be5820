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


def _draw_t2(n: int) -> int:
    from gpusem.fuzz.ckernel.coverage import t2_ingredients

    count = 0

    @settings(max_examples=n, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(kernels())
    def run(k) -> None:
        nonlocal count
        count += t2_ingredients(k)

    run()
    return count


def test_t2_avoided_refuses_t2s_ingredients(monkeypatch) -> None:
    """`t2` is a shape, not a template: no kernel drawn with it avoided has a shuffle,
    a min/max and a subtraction together; without it some do."""
    assert _draw_t2(150) > 0
    monkeypatch.setenv(templates.AVOID_ENV, "t1,psel,t2")
    assert _draw_t2(150) == 0
    assert templates.avoided() == {"t1", "psel", "t2"}


def test_t2s_kernels_have_t2s_ingredients() -> None:
    """The two campaign kernels of T2 (results/toolchain/ckernel_cuda_avoid_t1)."""
    from pathlib import Path

    from gpusem.calculus.ckernel.parser import parse_kernel
    from gpusem.fuzz.ckernel.coverage import t2_ingredients

    base = Path(__file__).parents[2] / "results" / "toolchain" / "ckernel_cuda_avoid_t1"
    found = sorted(base.glob("*/program.ck"))
    assert len(found) == 2
    assert all(t2_ingredients(parse_kernel(p.read_text(), str(p))) for p in found)
