"""A piece hands a new finding to the client as soon as it meets it (issue 31.1,
`fuzz/engines/handover.py`): its shrink task starts on the local cluster's shrink
worker while the piece goes on fuzzing. Before, the piece kept the finding until it
ended, so its shrinking began only then (15-20 s into a cold 20 s campaign).

The toy target is tests/fuzz/test_campaign.py's, each check made slow, so one piece
of one round lasts seconds; its reducer says in the finding's detail when it began."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.client import run_campaign
from gpusem.fuzz.engines import pieces
from gpusem.fuzz.engines.dask import DaskEngine
from gpusem.fuzz.engines.dask_cluster import local_cluster
from gpusem.fuzz.targets import register_target
from tests.fuzz.test_campaign import ToyTarget

CHECK_S, ROUND = 0.08, 100  # a piece of one round: 8 s and more


class SlowToy(ToyTarget):
    hypothesis_share = 0.0  # the reducer at once: it says when it began

    def check(self, program, prop="compile"):
        time.sleep(CHECK_S)
        return super().check(program, prop)

    def minimise(self, program, res, prop="compile", budget_s=None):
        return dataclasses.replace(res, detail=f"shrink began {time.time():.3f}")


register_target("slowtoy", SlowToy)


@pytest.fixture(scope="module")
def cluster():
    c = local_cluster("cpu", jobs=1)  # one fuzzing worker and the shrink worker
    try:
        yield c
    finally:
        c.close()


def test_a_finding_shrinks_while_its_piece_goes_on(cluster, tmp_path) -> None:
    spec = {"target_name": "slowtoy", "backend": "cpu", "prop": "compile",
            "budget_s": 60, "seed": 7, "shard": (0, 1), "out_dir": str(tmp_path),
            "round_size": ROUND, "max_programs": ROUND}  # one piece
    engine = DaskEngine(scheduler=cluster.scheduler_address, rounds_per_piece=1)
    out = run_campaign(spec, engine, 1)
    assert not out.failed and out.programs == ROUND
    (line,) = [json.loads(x) for x in pieces.record_path(
        tmp_path, "compile", (0, 1)).read_text().splitlines()]
    ended = line["at"]  # when the client took the piece's result
    assert line["seconds"] >= ROUND * CHECK_S
    first = min(out.findings, key=lambda f: f.found_after_s)
    assert first.found_after_s < 0.5 * line["seconds"]  # met early in the piece
    began = float(first.detail.removeprefix("shrink began "))
    # its shrink began seconds before its piece ended: within a second or two of
    # its meeting, not at the piece's end (before: after it)
    assert began < ended - 0.3 * line["seconds"], (began, ended, line["seconds"])
    # each finding written once, by the piece that met it (not as its sighting)
    assert sorted(line["wrote"]) == sorted(line["found"]) == sorted(
        f.signature for f in out.findings)
    assert len(list_bundles(tmp_path)) == len(out.findings)
    assert all(f.new and f.duplicates >= 0 for f in out.findings)
