"""The iteration memo's chains across loops (interpreter/amir/memo.py,
LoopMemo.successor): a memoised loop hands its last state, virtual, to the loop right
after it, and a chain may start on a record cache holding records made before the
loop. Against the machine that steps every statement: identical verdicts, violation
reports and statistics, on the ragged GEMM (whose k = 0 prologue loop hands its chain
to the main loop), on sync bugs seeded before and after the main loop, at step
budgets that end where a handed-on chain waits, and on generated rings; each test
also checks that the hand-over happened (not only stepping against itself).
errata "AMIR iteration memo"."""

from __future__ import annotations

import random

import pytest
from gpusem.calculus.errors import GpusemError
from gpusem.interpreter.amir import machine as machine_mod
from gpusem.interpreter.amir import memo as memo_mod
from gpusem.interpreter.amir.machine import MEMO_MIN_ITERATIONS, Machine

from tests.amir.test_machine_memo import (
    RAGGED,
    both,
    converted,
    memo_run,
    pipeline,
    ragged_512,
    stepped,
)


@pytest.fixture(scope="module")
def ragged():
    """The ragged GEMM at N = 512 with the default threshold: (prog, env, stepped
    outcome, memoised outcome, the memoised run's machine), run once for the three
    tests below that compare the two and then read the memos (each ran both and
    then the memo a second time)."""
    prog, env, ref = ragged_512()
    got, _, m = memo_run(prog, env, memo_min=MEMO_MIN_ITERATIONS)
    return prog, env, ref, got, m


def test_prologue_loop_hands_its_chain_to_the_main_loop(ragged):
    """At N = 512 with the default threshold: the one-iteration k = 0 loop runs
    through the memo because the main loop after it will, is replayed in the
    second row of tasks (its entry holds D's initial records in the record cache),
    and the main loop starts from its chain, without a scan, in most tasks."""
    _, _, ref, got, m = ragged
    assert got == ref and ref[0] == "accepted"
    loops = [x for x in m.memos if x.loop.var == "k"]
    assert len(loops) == 2
    prologue, main = loops
    assert prologue.successor is main and main.successor is not None
    assert prologue.hits >= 2, (prologue.hits, prologue.stepped)
    assert main.taken >= 4 and main.hits > main.stepped, \
        (main.taken, main.hits, main.stepped)


def test_a_new_path_is_recorded_not_only_stepped(ragged):
    """A path never met (the first task's ring fill, k = 1 .. 4, and the ragged
    row's) is recorded, so the next task with that entry image replays it: every
    stepped iteration of the ragged GEMM is a recorded one, and the same verdict
    and statistics as stepping. Before, those were stepped unrecorded and recorded
    again by the next task of their row class (N = 512: 10 more stepped)."""
    _, _, ref, got, m = ragged
    assert got == ref and ref[0] == "accepted"
    stepped = sum(x.stepped for x in m.memos)
    recorded = sum(x.misses for x in m.memos)
    assert stepped == recorded and recorded > 0, (stepped, recorded)


def test_saturation_is_the_least_exact_distance(monkeypatch, ragged):
    """SAT at the least distance every Await allows (memo.saturation: n + 1 for
    n >= 0, |n| - 1 for n < 0): 3 on the ragged GEMM (Await(war, -4)), where it was
    2 + max |n| = 6, so its images repeat sooner (N = 512: 18 iterations recorded,
    22 before). One less is not exact: the memo then differs from stepping (the
    equivalence tests can see a wrong distance)."""
    prog, env, ref, got, m = ragged
    assert memo_mod.saturation(prog.body) == 3
    assert got == ref and ref[0] == "accepted"
    recorded = sum(x.misses for x in m.memos)
    assert 0 < recorded <= 18, recorded
    exact = memo_mod.saturation
    monkeypatch.setattr(memo_mod, "saturation", lambda body: exact(body) - 1)
    # Note: with A's and B's read records not stored (memo.unexamined) the
    # replays that differ are not met on this kernel; the images are the same
    # with them stored, and then they are.
    monkeypatch.setattr(machine_mod, "unexamined", lambda body: frozenset())
    _, short, _ = both(prog, env, memo_min=MEMO_MIN_ITERATIONS)
    assert short != ref


def _seed(old: str, new: str, after: str = "") -> str:
    text = RAGGED.read_text()
    at = text.index(after) if after else 0
    assert old in text[at:]
    return text[:at] + text[at:].replace(old, new, 1)


W = " " * 28
PROLOGUE = "for k in seq(0, 1):"
EPILOGUE = "Await(cg[cta, wg], cuda_in_order, 0)"
# Sync bugs outside the main loop: in the prologue iteration (found in the first task,
# stepped, or in a later one after handed-on chains) and after it (found once a
# handed-on chain was written back; the epilogue's wait on the wgmma commit groups
# made a Fence that does not wait for them).
EDGE = {
    "prologue-no-raw-wait": (f"{W}Await(raw[cta], cuda_generic_and_async_proxy, -1)\n",
                             "", PROLOGUE),
    "prologue-late-raw-skip": (
        f"{W}Await(raw[cta], cuda_generic_and_async_proxy, -1)\n",
        f"{W}if task_m != 2:\n{W}    Await(raw[cta], cuda_generic_and_async_proxy, -1)\n",
        PROLOGUE),
    "epilogue-no-cg-wait": (EPILOGUE, "Fence(cuda_in_order, cuda_in_order)", ""),
    "epilogue-late-cg-skip": (
        f"{W}{EPILOGUE}\n",
        f"{W}if task_m != 1 or task_n != 1:\n{W}    {EPILOGUE}\n", ""),
}
LATE = ("prologue-late-raw-skip", "epilogue-late-cg-skip")


@pytest.mark.parametrize("name", sorted(EDGE))
def test_memo_finds_sync_bugs_around_the_main_loop(name):
    old, new, after = EDGE[name]
    prog, env = converted(_seed(old, new, after), f"{name}.gpuir", {"N": 512})
    for memo_min in (2, MEMO_MIN_ITERATIONS):
        ref, got, (hits, _), m = _both_and_machine(prog, env, memo_min)
        assert got == ref, memo_min
        assert ref[0] == "rejected", ref
        assert hits > 0 or name not in LATE, hits
    if name in LATE:                 # chains were handed on before the violation
        # (the memo's machine of the default threshold's run above: a second run
        # of the same program was the same run)
        assert m is not None and sum(x.taken for x in m.memos) > 0


def _both_and_machine(prog, env, memo_min: int) -> tuple:
    """both(), and the machine of its memoised run."""
    return (stepped(prog, env), *memo_run(prog, env, memo_min=memo_min))


def test_step_budget_ending_where_a_chain_waits():
    """Budgets that run out at the LoopStep of a loop a chain was handed to (the
    main loop, which takes it; the epilogue's loop, which writes it back), or just
    before it: the run ends where and as the stepping machine ends it."""
    prog, env, _ = ragged_512()
    m = Machine(prog, env, memo_min=MEMO_MIN_ITERATIONS)
    main = [x for x in m.memos if x.loop.var == "k"][1]
    drain = main.successor
    assert drain is not None
    taken: list[int] = []
    settled: list[int] = []
    run, settle = main.run, drain.settle

    def run_spy(lo: int, hi: int, every: int) -> None:
        if main.pending is not None:
            taken.append(m.stats.statements)
        run(lo, hi, every)

    def settle_spy() -> None:
        if drain.pending is not None:
            settled.append(m.stats.statements)
        settle()

    main.run = run_spy                                    # type: ignore[method-assign]
    drain.settle = settle_spy                             # type: ignore[method-assign]
    m.run()
    assert len(taken) >= 4 and len(settled) >= 4, (taken, settled)
    for budget in (taken[0] - 1, taken[2] - 1, settled[1] - 1, settled[1]):
        ref, got, _ = both(prog, env, max_steps=budget, memo_min=MEMO_MIN_ITERATIONS)
        assert got == ref and ref[1] == "BudgetExhausted", (budget, ref)


def test_memo_chains_on_generated_rings():
    """12 generated rings (another seed than tests/amir/test_machine_memo.py's):
    identical outcomes, with chains handed from one loop to the next in some (the
    cp.async ring's main loop to its drain), iterations replayed in some."""
    rng = random.Random(2027)
    taken = replayed = runs = 0
    for i in range(12):
        src = pipeline(rng)
        try:
            prog, env = converted(src, f"chain{i}.gpuir")
        except GpusemError:
            continue
        ref, got, (hits, _), m = _both_and_machine(prog, env, 2)
        assert got == ref, src
        # the memos of the run just compared (a second run of the program, which
        # this read before, is the same run)
        taken += m is not None and sum(x.taken for x in m.memos) > 0
        replayed += hits > 0
        runs += 1
    assert runs >= 8 and taken >= 2 and replayed >= 2, (runs, taken, replayed)
