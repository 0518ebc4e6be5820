"""The seeded faults of Prism's Sec. 5 barrier placement (`--sync prism`): a short cpu
campaign of the `prism` target's prism-sync property finds each (issue 28: the
generator's blind spot). Before the exchange shapes of fuzz/prism/strategies.py no
generated surface program could show them: the elaboration gives every partition
reached across a level a destruct of its own, whose barrier is placed at the end of
that list whatever rules 1 and 2 say."""

import json

import pytest
from gpusem.compiler.bundl_cuda.faults import FAULTS
from gpusem.fuzz.campaign import Campaign
from gpusem.fuzz.prism.strategies import PrismProgram
from gpusem.fuzz.prism.target import PrismTarget

PRISM_FAULTS = sorted(f for f in FAULTS if f.startswith("prism-drop-rule-"))


def test_both_rules_have_a_fault():
    assert PRISM_FAULTS == ["prism-drop-rule-1", "prism-drop-rule-2"]


@pytest.mark.parametrize("fault", PRISM_FAULTS)
def test_a_short_cpu_campaign_finds_the_fault(fault, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", fault)
    # 1 s, not 5: the shrinking is asserted below under a candidate cap, from the
    # finding as the campaign left it (unshrunk, or a step or two in; see there), so
    # the campaign's own shrink is only waited for (as tests/lambdacu's faults do)
    monkeypatch.setenv("GPUSEM_SHRINK_S", "1")
    # one round of ten: with seed 4 each rule's fault shows in the first round (seed 1
    # needed four rounds, ~28 s of a 55 s test; of seeds 1-5, ten programs each, rule 1
    # shows with 3, 4 and 5, rule 2 with 4 and 5), and its finding is smaller
    # (39 and 34 lines, 56 with seed 1), so the shrink below starts nearer its goal.
    # Only the round's first four programs: rule 1's fault shows at the third
    # (index 2), rule 2's at the fourth (index 3), and a round cut short holds the
    # first programs of the whole one (hunt.generate_round), so these are the same
    # programs and findings as with ten; the six after them found nothing more and
    # cost ~60% of the campaign's CPU
    summary = Campaign("prism", prop="prism-sync", budget_s=60, max_programs=4,
                       seed=4, out_dir=str(tmp_path), round_size=10).run()
    assert summary.findings, f"{fault} went unnoticed in {summary.programs} programs"
    bundles = [json.loads(p.read_text()) for p in tmp_path.glob("*/bundle.json")]
    first = min(bundles, key=lambda b: b["found_after_s"])
    assert first["signature"] == "prism:prism-sync:disagree"
    assert first["fault"] == fault
    # whether the surface reducer even starts within 5 s of wall time, and how far
    # it gets, depend on the machine's load (56 -> 56 lines at load 15; not started
    # in a suite run beside two other jobs at load 3.7 on 2 cores), so the shrinking
    # itself is asserted below under a candidate cap, which load does not move
    assert first["size"] <= first.get("size_before", first["size"]), first
    print(f"{fault}: found after {first['found_after_s']} s in "
          f"{summary.programs} programs, {first['size_before']} -> {first['size']} "
          f"lines")
    _shrinks_to_a_small_program(fault, first, tmp_path)


CAP = {"prism-drop-rule-1": 120, "prism-drop-rule-2": 50}  # (why: below)
SMALL = 32  # lines: the scaffold (launch comments, def, block, warp and shared
#             partitions, O's per-thread piece) is about 24 of them


def _shrinks_to_a_small_program(fault, first, tmp_path):
    """The finding, reduced further under a candidate cap (load does not move it),
    ends small and still shows the same signature."""
    path = next(p for p in tmp_path.glob("*/bundle.json")
                if json.loads(p.read_text()) == first).parent / "program.prism"
    target = PrismTarget("cpu")
    # candidates: from seed 4's unshrunk findings (the start when load keeps the
    # campaign's shrink from running) the reducer is at <= SMALL after 81 (rule 1,
    # 39 -> 28 lines) and 17 (rule 2, 34 -> 32); seed 1's 56-line ones needed 113
    # and 144 of the 200 this cap was. Rule 2's 120 ran ~100 candidates past its
    # goal (18.8 s of a 28.8 s test on a loaded machine): 50 is still three times
    # what it needs
    target.shrink_max_tried = CAP[fault]
    text = path.read_text()
    res = target.check_text(text, "prism-sync")
    assert res.signature == "prism:prism-sync:disagree"
    small = target.minimise(PrismProgram(text, frozenset()), res, "prism-sync",
                            budget_s=600)
    stats = target.shrink_stats[res.signature]
    assert small.signature == res.signature
    assert small.size <= SMALL, (stats, small.files["program.prism"])
    again = target.check_text(small.files["program.prism"], "prism-sync")
    assert again.signature == res.signature  # it replays
    print(f"{fault}: {stats}")
