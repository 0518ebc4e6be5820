"""Blind spots of the GPU IR generator (issue 14 item 7): every Figure 5 row, Figure 19
case, Figure 16 row, AMIR check (met with a record, and failing) and machine rule is
reached by some generated program. A label at 0 fails: extend fuzz/gpuir/strategies.py.
"""

from __future__ import annotations

import random
from pathlib import Path

from gpusem.fuzz.gpuir.coverage import LABELS, blind_spots, coverage_of, table
from gpusem.fuzz.gpuir.strategies import kernels_from_random
from gpusem.fuzz.gpuir.target import GpuirTarget


def test_campaign_generator_has_no_blind_spot():
    """400 programs of the campaign's generator (fixed seed) reach every label."""
    rng = random.Random(20_240_314)
    per_10k = table(coverage_of(kernels_from_random(rng).source()) for _ in range(400))
    assert not blind_spots(per_10k), blind_spots(per_10k)
    # and the checker's two verdicts both occur often (near misses are generated)
    assert per_10k["rejects:CheckMutates"] >= 500 and per_10k["fig5:x = e"] == 10_000


def test_target_exposes_coverage():
    """The target reports a program's labels and the universe (campaign reports
    include the table; fuzz/campaign.py is not this module's)."""
    t = GpuirTarget("cpu")
    assert t.coverage_labels() == LABELS
    k = kernels_from_random(random.Random(1))
    labels = t.coverage(k)
    assert labels <= set(LABELS) | {"front-end-rejected"}
    assert {"fig5:CudaDeviceFunction", "fig16:cuda_stream_sync", "fig5:cuda_tasks"} \
        <= labels


def test_coverage_labels_of_a_known_program():
    """Labels are the rules the program reaches, read off the paper's figures: a CTA
    fence broadcast (Section 2.1) has Figure 5's loops, assignments, allocation and
    inserted free, one Figure 16 row, and both data checks meet records."""
    src = (Path(__file__).resolve().parents[2] / "examples" / "gpuir" /
           "fence_broadcast.gpuir").read_text()
    labels = coverage_of(src)
    assert {"fig5:cuda_threads", "fig5:seq", "fig5:x = e", "fig5:x += e",
            "fig5:alloc x", "fig5:free x", "fig5:Fence", "fig16:cuda_in_order",
            "check:CheckReads", "check:CheckMutates", "machine:Fence"} <= labels
    assert not any(x.startswith("rejects:") for x in labels)
    missing = coverage_of(src.replace("            Fence(cuda_in_order, cuda_in_order)\n"
                                      "            for tid", "            for tid", 1))
    assert "rejects:CheckMutates" in missing
