"""A Dask piece reports its findings' times in its campaign's seconds, not its own.

A piece begins seconds into its campaign (the cluster's start, the pieces before it
on its worker) and runs its Campaign on a clock of its own. Before, it reported
`found_after_s` from that clock: on a cold 2-core run a finding met 16.5 s into a
20 s campaign was reported at 8 s (its piece had begun at 8.5 s), so the report said
its shrink had 12 s where it had 4 (the flake of test_budget_kept's Dask test: a
shrink "begun late" that had begun at once)."""

from __future__ import annotations

import time

from gpusem.fuzz.client import shard_tasks
from gpusem.fuzz.engines.pieces import Piece, run_piece
from gpusem.fuzz.targets import register_target
from tests.fuzz.test_campaign import ToyTarget

register_target("toy", ToyTarget)

LATE_S = 100.0  # how far into its campaign the piece begins


def test_a_piece_reports_found_after_s_from_its_campaigns_start(tmp_path) -> None:
    spec = {"target_name": "toy", "budget_s": 5.0, "seed": 7, "out_dir": str(tmp_path),
            "round_size": 50}
    task = shard_tasks(spec, 1)[0]
    began = time.time()
    piece = Piece(task.spec, (0, 1), (0, 2), until=began + 5.0,
                  campaign_start=began - LATE_S)
    result = run_piece(piece, [])
    found = result.summary.findings
    assert {f.signature for f in found} >= {"wrong:big7"}, found  # the toy's bugs
    for f in found:
        # met within the piece's few seconds, so LATE_S .. LATE_S + the piece's time
        assert LATE_S <= f.found_after_s <= LATE_S + (time.time() - began), f
    for meta, _ in result.bundles:  # the bundles say the same
        assert meta["found_after_s"] >= LATE_S, meta
    for job in result.jobs:  # and the shrink tasks count from there too
        assert job.first_seen >= LATE_S, job


def test_a_piece_without_its_campaigns_start_counts_from_its_own() -> None:
    # the local engine's shards and a piece of old: their own clock, as before
    spec = {"target_name": "toy", "budget_s": 5.0, "seed": 7, "out_dir": "/nonexistent",
            "round_size": 50}
    task = shard_tasks(spec, 1)[0]
    began = time.time()
    result = run_piece(Piece(task.spec, (0, 1), (0, 2), until=began + 5.0), [])
    assert result.summary.findings
    for f in result.summary.findings:
        assert 0.0 <= f.found_after_s <= time.time() - began, f
