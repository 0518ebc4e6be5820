"""Every example's `check`/`run`/`synccheck`/`compile` output equals its golden, byte for
byte (issue 13: the re-layout must not change behaviour). A missing golden fails; the
test never writes one (regenerate with `python -m tests.golden.goldens --update`)."""

from __future__ import annotations

import pytest

from tests.golden.goldens import GOLDEN_DIR, cases, render

CASES = cases()


def test_every_example_kind_is_pinned():
    # The example folders hold dozens of programs of both languages and every verb
    # applies; a glob that silently matched nothing would pin nothing.
    verbs = {case.verb for case in CASES}
    assert verbs == {"check", "run", "synccheck", "compile"}
    assert len(CASES) >= 150


def test_no_stale_goldens():
    assert {p.name for p in GOLDEN_DIR.glob("*.txt")} == {c.golden.name for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_output_matches_golden(case):
    assert case.golden.exists(), (
        f"no golden for {case.id}: run `python -m tests.golden.goldens --update`")
    assert render(case) == case.golden.read_text(), f"{case.id}: output changed"
