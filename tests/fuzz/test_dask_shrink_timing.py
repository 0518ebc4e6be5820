"""A Dask shrink task's time is counted from when the client submitted it, not from
when a worker began it (issue 31.1): a task that waited for a worker's piece to end
ran that much past the campaign's end and was reported cut."""

from __future__ import annotations

import time

import pytest
from gpusem.fuzz.engines import dask as dask_engine


@pytest.mark.parametrize(("waited", "given", "left"), [
    (0.0, 6.0, 6.0), (4.0, 6.0, 2.0), (9.0, 6.0, 0.0)])
def test_the_shrink_task_counts_its_time_from_its_submission(
        monkeypatch, waited, given, left) -> None:
    seen: list[float] = []
    monkeypatch.setattr(dask_engine, "shrink_remote",
                        lambda job, bundle, seconds, *a, **k: seen.append(seconds))
    dask_engine.shrink_task(None, ({}, {}), given, {}, None, time.time() - waited)
    assert seen[0] == pytest.approx(left, abs=0.2)


def test_without_a_submission_time_it_has_all_its_seconds(monkeypatch) -> None:
    seen: list[float] = []
    monkeypatch.setattr(dask_engine, "shrink_remote",
                        lambda job, bundle, seconds, *a, **k: seen.append(seconds))
    dask_engine.shrink_task(None, ({}, {}), 6.0, {})
    assert seen == [6.0]
