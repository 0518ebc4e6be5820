"""The incremental fingerprint (interpreter/amir/symbolic_state.py `Fingerprinter`)
equals the fingerprint computed from scratch (`fingerprint`) at every snapshot the
symbolic proof takes: the loop invariant's equality is unchanged by the speed-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusem.interpreter.amir import symbolic_proof
from gpusem.interpreter.amir.symbolic_sizes import symbolic_synccheck
from gpusem.interpreter.amir.symbolic_state import fingerprint

from tests.amir.test_symbolic_sizes import _sized

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gpuir"


def _checked_snaps(monkeypatch) -> list[Any]:
    """Every snapshot the proof takes from now on is also taken from scratch and
    compared; the list of (incremental) snapshots comes back for the counts."""
    seen: list[Any] = []

    def snap(self) -> None:
        got = self.fingerprint(self)
        want = fingerprint(self)
        assert got[0] == want[0] and got[1] == want[1], len(seen)
        seen.append(got[0])
        self.snaps[-1].append(got[0])
        self.counts[-1].append(got[1])

    monkeypatch.setattr(symbolic_proof._Probe, "_snap", snap)
    return seen


def test_incremental_fingerprint_equals_the_full_one_on_generated_programs(
        monkeypatch) -> None:
    """Three generated programs of test_symbolic_sizes.py (seed 27) whose proofs go
    through the loop invariant (the others of that kind take 1,728 snapshots each,
    too many to take twice here): hundreds of snapshots, each equal to the one from
    scratch; the states change along the runs (records made, lifted by fences,
    barrier counts advancing), so the caches are exercised on changing states, not
    only on one repeated state."""
    seen = _checked_snaps(monkeypatch)
    inducted = 0
    for i in (3, 9, 14):                 # 13, 13 and 864 snapshots
        source = _sized(27, i)
        r = symbolic_synccheck(source, f"gen{i}.gpuir", ["T"], {}, up_to=6, sizes=7)
        inducted += bool(r.proved and r.proof is not None and r.proof.loop)
    assert inducted == 3, inducted
    assert len(seen) >= 300, len(seen)
    assert len(set(seen)) >= 30, len(set(seen))   # 37 different states compared


def test_incremental_fingerprint_equals_the_full_one_on_the_hopper_gemm(
        monkeypatch) -> None:
    """Exo-GPU's Hopper GEMM (barriers with arrive counts, multicast arrives, a ring
    of buffers: the p part of the records): the proof's snapshots agree too."""
    seen = _checked_snaps(monkeypatch)
    path = EXAMPLES / "gemm_hopper.gpuir"
    r = symbolic_synccheck(path.read_text(), str(path), ["N"], {}, sizes=1,
                           assume=["N % 256 == 0"])
    assert r.proved
    assert len(seen) >= 10 and len(set(seen)) >= 4, (len(seen), len(set(seen)))


def test_a_record_changed_in_place_is_described_anew(monkeypatch) -> None:
    """The reuse keys on `Rec.ver`: a record joined with a new block in place (what
    a Fence or Await lift does, records.Rec.join) between two snapshots of an
    otherwise unchanged state is described anew, as from scratch (the runs above
    need not meet that case alone: a lift usually comes with new records). Fails
    with join's version bump removed. (No record family occurs in these runs, so
    split's bump, like the Arrive lift's and the memo's, is not exercised here.)"""
    joined = 0

    def snap(self) -> None:
        nonlocal joined
        before = self.fingerprint(self)
        recs = [r for v in self.vars.values() for sid in set(v.rd.flat) | set(v.mu.flat)
                for r in (self.sets.sets[int(sid)] or ())]
        if recs and joined < 20:
            assert recs[0].join((100 + joined, 1), (1 << 29,) * 4)   # a new block
            after = self.fingerprint(self)
            assert after[0] == fingerprint(self)[0] != before[0]
            joined += 1
        got = self.fingerprint(self)
        self.snaps[-1].append(got[0])
        self.counts[-1].append(got[1])

    monkeypatch.setattr(symbolic_proof._Probe, "_snap", snap)
    for i in (3, 9, 14):
        symbolic_synccheck(_sized(27, i), f"gen{i}.gpuir", ["T"], {}, up_to=6, sizes=7)
    assert joined == 20, joined
