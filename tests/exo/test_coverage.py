"""Issue 26's constructs: the syntax reader of fuzz/exo/coverage.py on programs written
by hand, and the share of each construct the generator draws on a small census (rounds
0-2 of seed 0, the rounds a census starts with), held above `MIN_SHARE`. Runs without
Exo: coverage is a property of the generated GPU IR."""

from __future__ import annotations

import pytest
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_exo.emit import Unexpressible, emit_proc
from gpusem.fuzz.exo.census_tally import coverage_census
from gpusem.fuzz.exo.constructs import ConstructProgram
from gpusem.fuzz.exo.coverage import CONSTRUCTS, MIN_SHARE, constructs_of
from gpusem.fuzz.exo.pipelines import Pipeline
from gpusem.fuzz.exo.strategies import ExoProgram, Phase


def used(program) -> frozenset[str]:
    return constructs_of(parse_module(program.source(), "g.gpuir").procs[-1])


def test_fence_by_the_warps_that_did_not_write():
    k = ConstructProgram("subset", block=128, writers=2, issuer="others")
    assert "sync-by-non-writers" in used(k)
    assert "sync-by-non-writers" in used(ConstructProgram(
        "subset", block=128, writers=2, issuer="arrive-others"))
    # the writers' own fence, or the CTA's, is not one
    assert "sync-by-non-writers" not in used(
        ConstructProgram("subset", block=128, writers=2, issuer="writers"))
    assert "sync-by-non-writers" not in used(
        ConstructProgram("subset", block=128, writers=2, issuer="cta"))


def test_chain_needs_two_granularities():
    assert "sync-chain" in used(ConstructProgram("chain", chain=("warp", "temporal")))
    assert "sync-chain" not in used(ConstructProgram("chain", chain=("cta",)))


def test_two_awaits_by_threads_and_by_timelines():
    split = used(ConstructProgram("awaits", block=128, writers=1, split=True))
    assert {"two-awaits", "two-awaits-threads"} <= split
    assert "two-awaits-tls" not in split
    tls = used(ConstructProgram("awaits", split=False,
                                tls=("cuda_in_order", "cuda_temporal")))
    assert {"two-awaits", "two-awaits-tls"} <= tls
    assert "two-awaits-threads" not in tls


def test_pipeline_drain_is_not_a_second_await_of_one_arrival():
    # a commit group is awaited in the loop and again by the drain: by design
    assert used(Pipeline(block=32, stages=2, tiles=3)) == frozenset()


def test_host_code():
    assert used(ConstructProgram("host")) == {"host-dram", "host-copy", "host-loop",
                                              "host-fence"}
    assert "host-fence" not in used(ConstructProgram("host",
                                                     mutation="drop-host-fence"))


def test_atomics_are_unexpressible_and_tma_reductions_map_on_pldi26_only():
    for kind, name in (("atomic", "atomic"), ("tmared", "tma-reduce")):
        k = ConstructProgram(kind)
        assert name in used(k)
        proc = parse_module(k.source(), "g.gpuir").procs[-1]
        with pytest.raises(Unexpressible):
            emit_proc(proc, k.defines(), "endgame")
        if kind == "atomic":
            with pytest.raises(Unexpressible):
                emit_proc(proc, k.defines(), "pldi26")
        else:  # compiler/gpuir_exo/emit_tma.py
            text = emit_proc(proc, k.defines(), "pldi26").text
            assert "Sm90_reduce_tensor_to_gmem_linear_2f32(A_tma0[" in text


def test_phase_program_without_the_constructs():
    k = ExoProgram(64, 1, (Phase(sync="cta"),))
    assert used(k) == frozenset()


def test_census_draws_every_construct():
    cov = coverage_census(0, [0, 1, 2])
    n = cov["programs"]
    assert n == 300
    shares = {c: cov["coverage"][c] / n for c in CONSTRUCTS}
    low = {c: s for c, s in shares.items() if s < MIN_SHARE[c]}
    assert not low, f"constructs below their minimum share: {low}"
