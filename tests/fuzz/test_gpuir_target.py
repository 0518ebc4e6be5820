"""The GPU IR target's own methods, as the campaign and `gpusem replay` call them."""

from __future__ import annotations

from pathlib import Path

from gpusem.fuzz.gpuir.target import GpuirTarget
from gpusem.fuzz.targets import replayed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gpuir"


def test_replay_is_the_targets_own() -> None:
    """`replay` had slid under `defines_of` (after its return), so the target fell
    back to Target.replay and every gpuir bundle replayed as an internal error."""
    target = GpuirTarget("cpu")
    try:
        meta = {"property": "seqpar", "backend": "cpu", "signature": "seqpar:x"}
        held = replayed(target, {"program.gpuir": (
            EXAMPLES / "fence_broadcast.gpuir").read_text()}, meta)
        witness = replayed(target, {"program.gpuir": (
            EXAMPLES / "fence_broadcast_missing_fence.gpuir").read_text()}, meta)
    finally:
        target.close()
    assert held.status == "pass", held
    assert witness.status == "pass", witness  # rejected, and a schedule shows why


def _items() -> list[tuple[str, str, dict]]:
    from gpusem.typing_rules.gpuir.frontend import header_defines

    out = []
    for name in ("fence_broadcast.gpuir", "fence_broadcast_missing_fence.gpuir"):
        text = (EXAMPLES / name).read_text()
        out.append((name, text, header_defines(text)))
    return out


def test_a_round_is_one_build_and_one_front_end_per_program(monkeypatch) -> None:
    """Accepted and rejected programs (4 and 6 schedules) share one backend build per
    launch stage (one NVRTC module on cuda; it was one per group of seeds), and the
    compiler lowers by the sync check's front-end analysis (it analysed again)."""
    from gpusem.compiler.backends.registry import shared_backend
    from gpusem.fuzz.gpuir import seqpar
    from gpusem.typing_rules.gpuir import frontend

    backend = shared_backend("cpu")
    builds, analyses = [], []
    build, check_proc = backend.build, frontend.check_proc
    monkeypatch.setattr(backend, "build", lambda specs: builds.append(len(specs))
                        or build(specs))
    monkeypatch.setattr(frontend, "check_proc", lambda *a, **k: analyses.append(1)
                        or check_proc(*a, **k))
    outcomes = seqpar.check_sources(_items(), "cpu")
    assert [(o.sync, o.classification) for o in outcomes] == [
        ("accepted", "holds"), ("rejected", "witness")]
    assert builds == [4 + 6]  # one call: every job of both programs
    assert len(analyses) == 2


def test_prefetch_keeps_only_the_batch_it_checked() -> None:
    """The verdict cache held every batch of a campaign (it grew ~8 KB a program,
    without bound, in every worker); now only the last batch's verdicts."""
    from gpusem.fuzz.gpuir.target import SourceKernel

    first, second = (SourceKernel((EXAMPLES / name).read_text()) for name in (
        "fence_broadcast.gpuir", "fence_broadcast_missing_fence.gpuir"))
    target = GpuirTarget("cpu")
    try:
        target.prefetch([first], "seqpar")
        target.prefetch([second], "seqpar")
        assert list(target._cache) == [second]
        assert target.check(second, "seqpar").status == "pass"
    finally:
        target.close()


def test_barrier_only_fence_pairs_are_the_unwitnessable_ones(monkeypatch) -> None:
    """The generator's BARRIER_ONLY pairs are exactly those that, alone ordering a
    phase, make a rejection no schedule witnesses (they lower to __syncthreads); the
    generator now follows them with a cuda_in_order Fence, which makes such a phase
    hold (issue 31.6: they were a third of the false positives on cpu)."""
    from gpusem.fuzz.gpuir import seqpar, strategies
    from gpusem.fuzz.gpuir.strategies import FENCE_PAIRS, Kernel, Phase

    def kernel(i: int) -> Kernel:  # a cross-thread read ordered by pair i alone
        return Kernel(64, 1, (Phase(3, 5, False, False, "+", "cta", fence=i),
                              Phase(5, 7, False, False, "*", "cta")))

    n = len(FENCE_PAIRS)
    with monkeypatch.context() as m:
        m.setattr(strategies, "BARRIER_ONLY", frozenset())
        alone = [(f"a{i}.gpuir", kernel(i).source(), {}) for i in range(n)]
    now = [(f"n{i}.gpuir", kernel(i).source(), {}) for i in range(n)]
    outcomes = seqpar.check_sources(alone + now, "cpu")
    unwitnessed = {i for i, o in enumerate(outcomes[:n])
                   if o.classification == "false-positive"}
    assert unwitnessed == strategies.BARRIER_ONLY
    assert all(o.classification in ("holds", "witness")
               for i, o in enumerate(outcomes[:n]) if i not in unwitnessed)
    assert {o.classification for o in outcomes[n:]} <= {"holds", "witness"}
    assert all(outcomes[n + i].classification == "holds"
               for i in strategies.BARRIER_ONLY)


def test_arrive_only_no_longer_deadlocks_a_later_barrier_pair() -> None:
    """An arrive-only phase (CheckBarrier's near miss) before an Arrive/Await pair on
    the same mbarrier shifted the pair's phase: its Await waited forever, which on a
    GPU costs a watchdog timeout and a new CUDA worker per program. It arrives on a
    barrier of its own now: still rejected by CheckBarrier, and no run deadlocks."""
    from gpusem.fuzz.gpuir import seqpar
    from gpusem.fuzz.gpuir.strategies import Kernel, Phase

    def own(sync: str) -> Phase:  # each thread reads its own cell: no data race
        return Phase(1, 0, True, False, "+", sync)

    k = Kernel(32, 1, (own("arrive-only"), own("mbarrier"), own("cta")))
    (o,) = seqpar.check_sources([("k.gpuir", k.source(), {})], "cpu")
    assert o.verdict.kind != "kernel-failed", o.verdict.describe()
    assert o.sync == "rejected" and "CheckBarrier" in o.reason, o.reason
    assert "lone: barrier @ CudaMbarrier" in k.source()
