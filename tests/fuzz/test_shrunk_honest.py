"""`shrunk` is honest (issue 31.1): a shrink that its deadline stopped before it made
any step is not `shrunk`, and its bundle is marked `shrink_cut`, as the local
engine's shrinker marks a job it had no time for. Before, a shrink job handed over
with no time left ran nothing and reported its finding `shrunk` (so the Dask budget
test's `found["shrunk"]` could pass with nothing shrunk).

The toy target is tests/fuzz/test_campaign.py's: `big7` shrinks to 2 elements."""

from __future__ import annotations

import time

from gpusem.fuzz.bundle import read_bundle
from gpusem.fuzz.shrink_jobs import Deferred
from gpusem.fuzz.shrinker import ProcessShrinker, run_job
from tests.fuzz.test_campaign import campaign


def big_job(tmp_path):
    """The job a campaign hands over for its first `big7` finding that is not yet
    minimal (more than 2 elements)."""
    deferred = Deferred()
    campaign(tmp_path, shrinker=deferred).run()
    return next(j for j in deferred.jobs
                if j.signature == "wrong:big7" and j.res.size > 2)


def test_a_shrink_with_no_time_is_not_shrunk_and_is_cut(tmp_path) -> None:
    job = big_job(tmp_path)
    out = run_job(job, time.monotonic() - 1.0)  # its deadline already past
    (f,) = [f for f in out.findings if f.signature == job.signature]
    meta = read_bundle(f.bundle).meta
    assert f.size == job.res.size and not f.shrunk
    assert meta["state"] == "done" and meta["shrink_cut"] is True
    assert meta["shrunk"] is False


def test_the_local_engines_shrinker_says_the_same_of_a_job_it_had_no_time_for(
        tmp_path) -> None:
    ran = run_job(big_job(tmp_path / "a"), time.monotonic() - 1.0)
    shrinker = ProcessShrinker("toy")
    job = big_job(tmp_path / "b")
    shrinker.submit(job)
    (out,) = shrinker.finish(time.monotonic() - 1.0)  # none of it begun
    local = read_bundle(out.findings[0].bundle).meta
    mine = read_bundle(ran.findings[0].bundle).meta
    assert (mine["shrunk"], mine["shrink_cut"], mine["size"]) == (
        local["shrunk"], local["shrink_cut"], local["size"]) == (
        False, True, job.res.size)


def test_a_shrink_with_time_is_shrunk(tmp_path) -> None:
    job = big_job(tmp_path)
    out = run_job(job, time.monotonic() + 60.0)
    (f,) = [f for f in out.findings if f.signature == job.signature]
    meta = read_bundle(f.bundle).meta
    assert f.shrunk and f.size == 2 < job.res.size
    assert meta["shrunk"] is True and "shrink_cut" not in meta
