"""Removing any single Fence, Arrive or Await from an accepted example leaves it
accepted or makes it rejected (a failing check, or a front-end analysis error); it
never crashes (issue 3). Removing a synchronisation statement cannot make a program
*more* synchronised, so this exercises the conversion and the machine on many
near-miss programs, most of them racy."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from gpusem.calculus.errors import BudgetExhausted, IllTyped
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.calculus.gpuir.walk import sub_bodies
from gpusem.interpreter.amir.synccheck import synccheck_proc
from gpusem.typing_rules.gpuir.frontend import header_defines

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "gpuir")
                  .glob("*.gpuir"))

SYNC = (G.Fence, G.Arrive, G.Await)
Path_ = tuple[int, ...]


def sync_sites(body: tuple[G.Stmt, ...], at: Path_ = ()) -> list[Path_]:
    """Paths (indices through nested bodies) of every Fence / Arrive / Await."""
    out: list[Path_] = []
    for i, s in enumerate(body):
        if isinstance(s, SYNC):
            out.append(at + (i,))
        for inner in sub_bodies(s):
            out += sync_sites(inner, at + (i,))
    return out


def without(body: tuple[G.Stmt, ...], path: Path_) -> tuple[G.Stmt, ...]:
    """`body` with the statement at `path` removed."""
    i, rest = path[0], path[1:]
    if not rest:
        return body[:i] + body[i + 1:]
    s = body[i]
    return body[:i] + (replace(s, body=without(s.body, rest)),) + body[i + 1:]


# Smaller sizes than the headers' (the verdict of these examples does not depend on
# the number of tasks), so that each mutant runs in well under a second; the baseline
# is re-checked at these sizes below.
SMALL = {"gemv_shfl": {"M": 4, "K": 64}, "fence_broadcast": {"N": 128},
         "mbarrier_broadcast": {"N": 128}, "cp_async_pipeline": {"N": 512},
         "producer_consumer": {"N": 1024}, "gemm_tiled": {"N": 128},
         "multicast_cluster_sync": {"T": 1}}


def accepted_examples() -> list[Path]:
    """Examples whose header says `# expect: accepted` (see test_examples.py)."""
    return [p for p in EXAMPLES
            if re.search(r"^#\s*expect:\s*accepted\b", p.read_text(), re.MULTILINE)]


def test_sites_and_removal():
    """The helpers themselves: every site is found and removal drops exactly it."""
    src = ("proc p(N: size):\n    with CudaDeviceFunction(blockDim=32):\n"
           "        for t in cuda_tasks(0, N):\n            Fence(cuda_in_order, "
           "cuda_in_order)\n            for i in cuda_threads(0, 32, unit=cuda_thread):\n"
           "                Fence(cuda_in_order, cuda_in_order)\n")
    proc = parse_module(src).procs[0]
    sites = sync_sites(proc.body)
    assert sites == [(0, 0, 0), (0, 0, 1, 0)]
    for s in sites:
        assert len(sync_sites(without(proc.body, s))) == 1


VERDICTS = ("accepted", "rejected (front end)", "CheckReads", "CheckMutates",
            "CheckBarrier")


# A budget of AMIR statement executions per run keeps this test cheap; an example too
# large for it at its header sizes needs an entry in SMALL (the failure says so).
BUDGET = 3_000_000


def outcome(proc: G.Proc, defines: dict[str, int]) -> str:
    """The verdict on `proc`; any exception other than a front-end rejection fails
    the test (that is the crash this property rules out)."""
    try:
        res = synccheck_proc(proc, defines, max_steps=BUDGET)
    except IllTyped:
        return "rejected (front end)"
    return "accepted" if res.verdict.accepted else res.verdict.violation.check


@pytest.mark.parametrize("path", accepted_examples(), ids=lambda p: p.stem)
def test_removing_one_sync_never_crashes(path):
    text = path.read_text()
    defines = {**header_defines(text), **SMALL.get(path.stem, {})}
    proc = parse_module(text, str(path)).procs[-1]
    sites = sync_sites(proc.body)
    try:
        baseline = outcome(proc, defines)
    except BudgetExhausted:
        pytest.fail(f"{path.name} runs more than {BUDGET} AMIR statements at "
                    f"{defines}: give it smaller sizes in SMALL")
    outcomes = [outcome(replace(proc, body=without(proc.body, site)), defines)
                for site in sites]
    assert baseline in VERDICTS and all(o in VERDICTS for o in outcomes), outcomes
    # The examples' synchronisation is not decoration: some removal must be caught.
    if sites and baseline == "accepted":
        assert any(o != "accepted" for o in outcomes), outcomes
