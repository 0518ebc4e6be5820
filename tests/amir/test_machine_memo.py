"""The AMIR machine's iteration memo (interpreter/amir/memo.py) against the machine that
steps every statement, which stays the definition: identical verdicts, violation
reports (check, cell, threads, both spans, message), statistics, traps and budget
exhaustions, on every machine-reaching example, on the ragged
Hopper GEMM of the speed table and sync bugs seeded into it, and on generated
pipelines (the Exo differential's cp.async and mbarrier rings, tests below), with the
memo made to engage on short loops (memo_min=2) and checked to have replayed
iterations, not only stepped them. errata "AMIR iteration memo"."""

from __future__ import annotations

import functools
import gc
import random
import re
import weakref
from pathlib import Path

import pytest
from gpusem.calculus.errors import GpusemError
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.fuzz.exo.pipelines import (
    MBAR_MUTATIONS,
    PIPE_MUTATIONS,
    MbarPipeline,
    Pipeline,
)
from gpusem.interpreter.amir.from_gpuir import convert
from gpusem.interpreter.amir.machine import Machine, check_amir
from gpusem.typing_rules.gpuir.frontend import check_proc, header_defines

from tests.amir.test_fast_machine import outcome

ROOT = Path(__file__).resolve().parents[2]
RAGGED = ROOT / "examples" / "gpuir" / "bench" / "gemm_hopper_ragged.gpuir"


def reaches_machine(path: Path) -> bool:
    head = re.search(r"^# expect: (\w+) ?(\w*)", path.read_text(), re.MULTILINE)
    return head is not None and (head.group(1) == "accepted" or head.group(2) in
                                 ("CheckReads", "CheckMutates", "CheckBarrier"))


# Every example the machine runs (the conformance programs are the fast machine's
# test's; two of them take seconds of stepping, and their loops are short).
GPUIR = [p for p in sorted((ROOT / "examples" / "gpuir").glob("*.gpuir"))
         if reaches_machine(p)]


def converted(source: str, name: str, defines: dict[str, int] | None = None):
    proc = parse_module(source, name).procs[-1]
    env = {**header_defines(source), **(defines or {})}
    return convert(proc, env, analysis=check_proc(proc, env)), env


def both(prog, env, max_steps: int = 200_000_000,
         memo_min: int = 2) -> tuple[tuple, tuple, tuple[int, int]]:
    """(stepped outcome, memoised outcome, (replayed, stepped) iterations)."""
    return (stepped(prog, env, max_steps), *memo_run(prog, env, max_steps, memo_min)[:2])


def stepped(prog, env, max_steps: int = 200_000_000) -> tuple:
    """The outcome of the machine that steps every statement (the definition)."""
    return outcome(lambda: check_amir(prog, env, max_steps=max_steps, memo=False))


def memo_run(prog, env, max_steps: int = 200_000_000, memo_min: int = 2
             ) -> tuple[tuple, tuple[int, int], Machine | None]:
    """(memoised outcome, (replayed, stepped) iterations, the machine that ran, None
    if it could not be built): tests that read the memos after the run read this
    machine's, not those of a second run of the same program."""
    ms: list[Machine] = []

    def memo():
        ms.append(Machine(prog, env, max_steps=max_steps, memo_min=memo_min))
        return ms[-1].run()

    got = outcome(memo)
    hits = sum(x.hits for m in ms for x in m.memos)
    return got, (hits, sum(x.stepped for m in ms for x in m.memos)), \
        (ms[0] if ms else None)


@functools.cache
def ragged_512() -> tuple:
    """(prog, env, stepped outcome) of the ragged GEMM at N = 512: the reference
    run that tests here and in test_machine_memo_chain.py compare with, stepped
    once a process (the machine does not change `prog`)."""
    prog, env = converted(RAGGED.read_text(), str(RAGGED), {"N": 512})
    return prog, env, stepped(prog, env)


# Examples whose stepping alone takes seconds: run with -m slow (the whole sweep).
HEAVY = {"gemv_shfl"}


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.slow) if p.stem in HEAVY else p for p in GPUIR],
    ids=lambda p: p.stem)
def test_memo_same_as_stepping_on_gpuir_programs(path):
    prog, env = converted(path.read_text(), str(path))
    ref, got, _ = both(prog, env)
    assert got == ref


def test_memo_replays_the_ragged_gemm_across_tasks():
    """The speed table's kernel at N = 512 (6 tasks, 15 iterations of the main loop
    each): the same report and statistics, most iterations replayed (the entry
    images repeat from task to task), the default threshold engaged too."""
    prog, env, ref = ragged_512()
    got, (hits, stepped), _ = memo_run(prog, env, memo_min=8)
    assert got == ref and ref[0] == "accepted"
    assert hits >= 50 and hits > stepped, (hits, stepped)
    assert outcome(lambda: check_amir(prog, env)) == ref


def test_a_closed_machine_is_freed_by_reference_counting():
    """check_amir closes its machine (Machine.close breaks the cycles its closures
    and memos make with it), so that the machine and all it holds are freed in the
    call, not by a later collection that first traverses every object the run left
    alive. With the collector paused, nothing but reference counting frees it."""
    prog, env = converted(RAGGED.read_text(), str(RAGGED), {"N": 512})
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        m = Machine(prog, env, memo_min=2)
        assert m.run().violation is None
        assert sum(x.hits for x in m.memos) > 0
        m.close()
        ref = weakref.ref(m)
        del m
        assert ref() is None
    finally:
        if was_enabled:
            gc.enable()


# Sync bugs seeded into the ragged GEMM's main loop (the second `for k` loop), found
# by a check inside the memoised loop: early ones (in the first task's first
# iterations, stepped) and late ones (a later task or iteration, after replays).
W = " " * 28                                       # the producer's Await's indent
SEEDED = {
    "no-raw-wait": (f"{W}Await(raw[cta], cuda_generic_and_async_proxy, -1)\n", ""),
    "wrong-stage": ("As[cta, k % 4, 64 * wg", "As[cta, (k + 1) % 4, 64 * wg"),
    "late-war-skip": (f"{W}Await(war[cta], cuda_temporal, -4)\n",
                      (f"{W}if k != 13 or task_m != 1:\n"
                       f"{W}    Await(war[cta], cuda_temporal, -4)\n")),
    "late-cg-skip": ("if k >= 1:", "if k >= 1 and (k != 11 or task_n != 1):"),
    "ragged-tma": ("< N + 128:", "< N + 256:"),     # the TMA guard: the last row
}
LATE = ("late-war-skip", "late-cg-skip", "ragged-tma")


def seeded(name: str) -> str:
    """The kernel with one bug in its main loop (text after `for k in seq(1`)."""
    text = RAGGED.read_text()
    old, new = SEEDED[name]
    at = text.index("for k in seq(1, N / 32):")
    head, tail = text[:at], text[at:]
    assert old in tail
    return head + tail.replace(old, new, 1)


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_memo_finds_the_same_seeded_sync_bugs(name):
    prog, env = converted(seeded(name), f"{name}.gpuir", {"N": 512})
    ref, got, (hits, _) = both(prog, env)
    assert got == ref
    assert ref[0] == "rejected" or ref[1] == "Trap", ref
    assert hits > 0 or name not in LATE, hits


def test_memo_step_budget_is_the_steppings():
    """A step budget that runs out inside the memoised loop ends the run where and
    as the stepping machine ends it."""
    prog, env, stepped = ragged_512()
    full = stepped[1][0]
    for budget in (full // 3, full - 7):
        ref, got, _ = both(prog, env, max_steps=budget)
        assert got == ref and ref[1] == "BudgetExhausted", ref


def pipeline(rng: random.Random) -> str:
    """A cp.async or mbarrier ring of the Exo differential's generator
    (fuzz/exo/pipelines.py), with longer loops than its own draws so that entry
    images repeat, correct or with one of its near misses."""
    if rng.random() < .5:
        stages = rng.randint(2, 4)
        return Pipeline(block=32, stages=stages,
                        tiles=rng.randint(stages + 8, stages + 16),
                        mul=2 * rng.randint(0, 3) + 1, add=rng.randint(0, 40),
                        tasks=rng.randint(1, 2),
                        mutation=rng.choice(("",) * 3 + PIPE_MUTATIONS)).source()
    lag = rng.randint(1, 2)
    return MbarPipeline(lag=lag, iters=rng.randint(lag + 8, lag + 16), block=32,
                        mul=2 * rng.randint(0, 3) + 1, add=rng.randint(0, 40),
                        tasks=rng.randint(1, 2), cluster=rng.choice((1, 1, 2)),
                        mutation=rng.choice(("",) * 3 + MBAR_MUTATIONS)).source()


def test_memo_same_as_stepping_on_generated_pipelines():
    """12 generated rings: every outcome identical; the memo replayed iterations in
    some of them (not only a test of stepping against itself: the cp.async rings
    replay; the mbarrier rings end their iterations with records after the last
    lift, so their record cache carries over and they are stepped), and accepted
    and rejected programs met."""
    rng = random.Random(27)
    replayed = runs = 0
    seen: set[str] = set()
    for i in range(12):
        src = pipeline(rng)
        try:
            prog, env = converted(src, f"pipe{i}.gpuir")
        except GpusemError:
            seen.add("front end")
            continue
        budget = 200_000_000 if rng.random() < .85 else rng.randint(2000, 30000)
        ref, got, (hits, _) = both(prog, env, budget)
        assert got == ref, src
        replayed += hits > 0
        runs += 1
        seen.add(ref[1] if ref[0] == "error" else ref[0])
    assert replayed * 5 >= runs, (replayed, runs)
    assert {"accepted", "rejected"} <= seen, seen
