"""`shrunk` is honest (issue 31.1): a shrink that its deadline stopped before it made
any step is not `shrunk`, and its bundle is marked `shrink_cut`, as the local
engine's shrinker marks a job it had no time for. Before, a shrink job handed over
with no time left ran nothing and reported its finding `shrunk` (so the Dask budget
test's `found["shrunk"]` could pass with nothing shrunk).

The toy target is tests/fuzz/test_campaign.py's: `big7` shrinks to 2 elements."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from gpusem.fuzz.bundle import read_bundle
from gpusem.fuzz.shrink_jobs import Deferred
from gpusem.fuzz.shrinker import ProcessShrinker, run_job
from gpusem.fuzz.targets import register_target
from tests.fuzz.test_campaign import ToyTarget, campaign


def big_job(tmp_path, target_name: str = "toy"):
    """The job a campaign hands over for its first `big7` finding that is not yet
    minimal (more than 2 elements)."""
    deferred = Deferred()
    campaign(tmp_path, shrinker=deferred, target_name=target_name).run()
    return next(j for j in deferred.jobs
                if j.signature == "wrong:big7" and j.res.size > 2)


def after_a_step(job, wait_s: float = 90.0) -> float:
    """Now, once the shrinker's child has written a step of `job` into its bundle
    (its reducer then sleeps until cut): a deadline after a step, however slowly a
    loaded machine starts the child (a fixed 5 s was too short under CI's load)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if read_bundle(job.bundle).meta["size"] < job.size_before:
            return time.monotonic()
        time.sleep(0.05)
    raise AssertionError(f"no step of {job.signature} within {wait_s} s")


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



class BudgetReducer(ToyTarget):
    """The toy, with a reducer that takes all the time it is given and finds
    nothing: a shrink job's deadline stops it, after hypothesis's steps."""

    def minimise(self, program, res, prop="compile", budget_s=0.0):
        time.sleep(max(0.0, budget_s))
        return res


register_target("budgetreducer", BudgetReducer)


def test_a_shrink_cut_after_a_step_says_the_same_whoever_writes_its_end(
        tmp_path) -> None:
    """A step made (hypothesis's: 2 elements), then a reducer stopped at the
    deadline: the shrink's own end (`run_job`, its reducer given what is left of its
    deadline) and the shrinker's cut of it (its reducer given a minute, the shrinker
    stops waiting once a step is in the bundle) say `shrunk` (a step was made) and `shrink_cut` (the
    deadline stopped it) alike. Which of the two writes the bundle is a race at the
    deadline (a SIGTERM during hypothesis's steps ends the shrink in the process):
    before, the first left `shrink_cut` out and the second said not `shrunk` (CI,
    stop 43, tests/fuzz/test_budget_kept.py)."""
    job = big_job(tmp_path / "a")
    ran = run_job(replace(job, spec=dict(job.spec, target_name="budgetreducer")),
                  time.monotonic() + 3.0)
    mine = read_bundle(ran.findings[0].bundle).meta
    shrinker = ProcessShrinker("budgetreducer")
    other = big_job(tmp_path / "b")
    shrinker.submit(replace(other, spec=dict(other.spec, target_name="budgetreducer"),
                            deadline=time.monotonic() + 60.0))
    (out,) = shrinker.finish(after_a_step(other))
    local = read_bundle(out.findings[0].bundle).meta
    assert out.cut and ran.findings[0].shrunk and out.findings[0].shrunk
    assert (mine["shrunk"], mine["shrink_cut"], mine["size"]) == (
        local["shrunk"], local["shrink_cut"], local["size"]) == (True, True, 2)


class BlamedBudgetReducer(BudgetReducer):
    """BudgetReducer with an attribution that quotes the program it was given."""

    def attribute(self, result, prop):
        return {"verdict": "ours", "rule": "cpu-harness",
                "evidence": [f"toy: {result.files['program.json']}"], "seconds": 0.01}


register_target("blamedbudgetreducer", BlamedBudgetReducer)


def test_a_cut_shrink_keeps_the_as_found_attribution_whoever_writes_its_end(
        tmp_path) -> None:
    """The same race with an attribution: the shrink's own end at its deadline and
    the shrinker's cut both keep the attribution of the program as found (the one
    attributed at claim time), and neither attributes again past the deadline.
    Before, the shrink's own end attributed its partly shrunk program ("shrunk"),
    the cut kept "as found" (tests/fuzz/test_attribution_cut.py failed under load)."""
    name = "blamedbudgetreducer"
    job = big_job(tmp_path / "a", name)
    ran = run_job(replace(job, spec=dict(job.spec, target_name=name)),
                  time.monotonic() + 3.0)
    shrinker = ProcessShrinker(name)
    other = big_job(tmp_path / "b", name)
    shrinker.submit(replace(other, spec=dict(other.spec, target_name=name),
                            deadline=time.monotonic() + 60.0))
    (out,) = shrinker.finish(after_a_step(other))
    for f in (ran.findings[0], out.findings[0]):
        b = read_bundle(f.bundle)
        found = json.loads(b.files["attribution.json"])
        assert b.meta["shrink_cut"] is True  # cut, after a step:
        assert len(json.loads(b.files["program.json"])) < b.meta["size_before"]
        assert found["program"] == b.meta["attribution"]["program"] == "as found"
        quoted = found["evidence"][0].removeprefix("toy: ")
        assert len(json.loads(quoted)) == b.meta["size_before"]  # the one found
        assert f.attribution == "ours"



def test_a_shrinker_that_cannot_start_raises_its_own_error(tmp_path,
                                                            monkeypatch) -> None:
    """A spawn that fails (multiprocessing's bootstrapping error for a script with no
    `__main__` guard) is the error the campaign's caller sees; `finish` then has
    nothing to stop (it used to join the process never started and raise
    AssertionError over the first error)."""
    import multiprocessing.process

    def refuse(self) -> None:
        raise RuntimeError("an attempt to start a new process before bootstrapping")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    shrinker = ProcessShrinker("toy")
    with pytest.raises(RuntimeError, match="before bootstrapping"):
        shrinker.submit(big_job(tmp_path))
    assert shrinker.finish(time.monotonic() + 1.0) == []
