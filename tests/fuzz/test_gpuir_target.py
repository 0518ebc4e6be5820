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
