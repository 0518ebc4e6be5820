"""The seq = par property (DESIGN.md, AMIR row): a GPU IR program the sync checker
accepts, compiled and run in parallel on the cpu harness, ends in the memory of its
sequential reading; a rejected one has a witness or is counted as a false positive.
Plus exactness: compiled arithmetic is bit-identical with the sequential reading."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.run import check_proc
from gpusem.fuzz.gpuir.seqpar import (
    check_sources,
    example_items,
    generated_items,
    summary,
)
from gpusem.fuzz.gpuir.strategies import kernels
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

@pytest.mark.parametrize("n", [4, pytest.param(8, marks=pytest.mark.slow)])
def test_seq_equals_par_on_generated_programs(n):
    """Hypothesis-generated kernels (6 per example, n examples): none violates
    seq = par, and the run is not trivial: both of the checker's verdicts occur,
    accepted programs hold on the cpu harness and rejected ones show witnesses
    (issue 14 item 8: this used to run 2 examples and assert nothing of its count).
    4 examples by default (issue 32.11: the suite must fit 15 minutes), 8 under
    `-m slow`; the thresholds scale with n."""
    found: Counter = Counter()

    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.lists(kernels(), min_size=6, max_size=6))
    def run(ks):
        items = [(f"g{i}.gpuir", k.source(f"g{i}"), {}) for i, k in enumerate(ks)]
        outcomes = check_sources(items, "cpu")
        found.update(summary(outcomes))
        bad = [o.row() + "\n" + o.source for o in outcomes
               if o.classification == "VIOLATION"]
        assert not bad, bad[0]

    run()
    total = sum(found.values())
    assert total == 6 * n, found
    assert found[("accepted", "holds")] >= 10 * n // 8, found
    assert found[("rejected", "witness")] >= 5 * n // 8, found


def test_examples_seq_equals_par_with_the_real_sync_check():
    """examples/gpuir through the real checker (not the header): every accepted one
    holds or is unsupported on cpu (what the compiler does not lower: the Hopper GEMM's
    host code); the rejected ones that run have witnesses or count as false positives
    (recorded, not required; at the time of writing fence_broadcast_missing_fence,
    cp_async_pipeline_unwaited, tmp_broadcast and multicast_race show witnesses)."""
    outcomes = check_sources(example_items(), "cpu")
    by = {o.name: o for o in outcomes}
    assert not [o.row() for o in outcomes if o.classification == "VIOLATION"]
    assert by["fence_broadcast.gpuir"].classification == "holds"
    assert by["producer_consumer.gpuir"].classification == "holds"
    for o in outcomes:
        if o.sync == "accepted":
            assert o.classification in ("holds", "unsupported"), o.row()
        else:  # recorded, not required (the checker may be conservative)
            assert o.classification in ("witness", "false-positive", "unsupported")
    print(summary(outcomes))


def test_seeded_campaign_holds_and_finds_witnesses():
    """24 generated programs (seed 3): no violation, and enough accepted ones that
    the property is exercised (the faults test shows it has teeth)."""
    outcomes = check_sources(generated_items(24, 3), "cpu")
    counts = Counter(o.classification for o in outcomes)
    assert counts["VIOLATION"] == 0, [o.row() for o in outcomes
                                      if o.classification == "VIOLATION"]
    assert counts["holds"] >= 5, counts
    print(counts)  # witnesses vs false positives: recorded (errata "seq = par")


def test_generator_makes_both_accepted_and_rejected_programs():
    """The generator's programs parse, pass the front end, and split between the
    checker's verdicts (both occur among the first 20 of a fixed seed)."""
    from gpusem.interpreter.amir.synccheck import synccheck

    verdicts = {synccheck(src, name, d).verdict.accepted
                for name, src, d in generated_items(20, 9)}
    assert verdicts == {True, False}


def test_front_end_rejected_register_broadcast_has_a_witness():
    """Section 2.1's inset: `tmp` is one register per thread, so the broadcast the
    sequential reading performs does not happen in parallel."""
    (item,) = example_items("tmp_broadcast.gpuir")
    (o,) = check_sources([item], "cpu")
    assert o.sync == "front-end-rejected"
    # it still compiles (the analysis' mappings suffice) and runs on cpu
    assert o.classification in ("witness", "false-positive"), o.row()


EXACT = """\
proc exact(A: f32[64] @ CudaGmemLinear, I: i32[64] @ CudaGmemLinear, B: f32[64] @ CudaGmemLinear, J: i32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            for t in cuda_threads(0, 64, unit=cuda_thread):
                acc: f32 @ CudaRmem
                k: i32 @ CudaRmem
                acc = A[t] * 0.1 + A[63 - t] * 3.3
                k = I[t] * 65537 * 65537
                for r in seq(0, 20):
                    acc += acc * 0.37 - A[r] / 7.0
                    k += k * 3 + I[r] / (0 - 3)
                B[t] = acc
                J[t] = k - I[t] / 7 + I[t]
"""


def test_arithmetic_is_bit_identical_with_the_sequential_reading():
    """Rounding after every float32 operation (no FMA), int32 wrap-around and C
    truncating division, through a chain long enough to expose any difference."""
    proc = parse_module(EXACT, "exact.gpuir").procs[0]
    v = check_proc(proc, {}, "cpu", (0,))
    assert v.agree, v.describe()
    # the inputs do overflow int32 and are not exactly representable sums
    from gpusem.compiler.gpuir_cuda.run import make_inputs
    from gpusem.interpreter.gpuir.sequential import run_sequential

    ins = make_inputs(proc, {})
    out = run_sequential(proc, {}, ins)
    wide = ins["I"].astype(np.int64) * 65537 * 65537
    assert np.any(wide != wide.astype(np.int32)) and out["J"].dtype == np.int32


def test_removing_a_fence_never_breaks_the_compiler():
    """Every single-Fence deletion of the accepted cpu examples still compiles (the
    compiler does not depend on synchronisation being right)."""
    from gpusem.calculus.gpuir import ast as A
    from gpusem.calculus.gpuir.walk import walk
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
    from gpusem.typing_rules.gpuir.frontend import analyse

    names = ("fence_broadcast.gpuir", "gemv_shfl.gpuir", "producer_consumer.gpuir")
    for name, source, defines in (x for n in names for x in example_items(n)):
        proc = parse_module(source, name).procs[-1]
        syncs = [s for s in walk(proc.body) if isinstance(s, (A.Fence, A.Await))]
        assert syncs
        for victim in syncs:
            mutated = _without(proc, victim)
            text = compile_proc(mutated, defines, analysis=analyse(mutated, defines))
            assert "__global__" in text.source


def _without(proc, victim):
    from dataclasses import replace

    from gpusem.calculus.gpuir import ast as A

    def block(body):
        out = []
        for s in body:
            if s is victim:
                continue
            if isinstance(s, (A.For, A.CudaDeviceFunction, A.CudaWarps, A.If)):
                s = replace(s, body=block(s.body))
            out.append(s)
        return tuple(out)

    return replace(proc, body=block(proc.body))


def test_a_violation_becomes_a_replayable_bundle(tmp_path, monkeypatch):
    """A seeded miscompilation (the Fence dropped) turns an accepted example into a
    VIOLATION; its bundle replays while the fault is on, and not once it is off."""
    from gpusem.fuzz.gpuir.seqpar import replay_finding, write_finding

    monkeypatch.setenv("GPUSEM_FAULT", "gpuir-fence-dropped")
    (o,) = check_sources(example_items("fence_broadcast.gpuir"), "cpu")
    assert o.sync == "accepted" and o.classification == "VIOLATION"
    path = write_finding(tmp_path, o, "cpu")
    assert (path / "program.gpuir").read_text() == o.source
    assert "__syncthreads" not in (path / "kernel.cu").read_text()
    assert replay_finding(path)
    monkeypatch.delenv("GPUSEM_FAULT")
    assert not replay_finding(path)


def test_generated_kernels_build_with_nvcc():
    """CUDA the fuzzer generates must build for sm_90a too (batched nvcc -c)."""
    from gpusem.compiler.backends.nvcc import compile_check, nvcc_available
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
    from gpusem.typing_rules.gpuir.frontend import analyse

    assert nvcc_available(), "nvcc not on PATH (CI has it; pip: nvidia-cuda-nvcc)"
    from gpusem.compiler.gpuir_cuda.errors import CompileError

    sources = []
    for name, source, defines in generated_items(12, 4):
        proc = parse_module(source, name).procs[-1]
        try:
            sources.append(compile_proc(proc, defines,
                                        analysis=analyse(proc, defines)).source)
        except CompileError as err:  # host code: generated, but not lowered
            assert "CPU code" in str(err), err
    assert len(sources) >= 8, len(sources)
    errors = [e for e in compile_check(sources) if e is not None]
    assert not errors, errors[0][:600]


@pytest.mark.gpu
def test_seq_equals_par_on_the_gpu():
    outcomes = check_sources(example_items() + generated_items(24, 3), "cuda")
    bad = [o.row() for o in outcomes if o.classification == "VIOLATION"]
    assert not bad, bad


def test_a_generated_violation_shrinks_to_a_small_program(monkeypatch):
    """With a seeded miscompilation (every Fence dropped) some generated kernel
    violates seq = par; greedy shrinking leaves one phase (a handful of statements)
    that still does."""
    from gpusem.fuzz.gpuir.seqpar import generated_kernels, shrink_violation

    monkeypatch.setenv("GPUSEM_FAULT", "gpuir-fence-dropped")
    ks = generated_kernels(8, 3)
    outs = check_sources([(f"k{i}.gpuir", k.source(f"k{i}"), {})
                          for i, k in enumerate(ks)], "cpu")
    victim = next(k for k, o in zip(ks, outs, strict=True)
                  if o.classification == "VIOLATION")
    small, o = shrink_violation(victim)
    assert o.classification == "VIOLATION"
    assert len(small.phases) == 1 and small.tasks == 1 and small.block == 32
    assert o.source.count("\n") <= 11, o.source


BULK_FENCE = """\
proc gen(A: f32[64] @ CudaGmemLinear, B: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[64] @ CudaSmemLinear
            for tid in cuda_threads(0, 64, unit=cuda_thread):
                buf[tid] = A[task * 64 + tid]
            Fence(tma_to_gmem_async, cuda_in_order)
            Fence(cuda_in_order, cuda_in_order)
            for tid in cuda_threads(0, 64, unit=cuda_thread):
                B[task * 64 + tid] = buf[(3 * tid + 5) % 64] + 1.5
            Fence(cuda_in_order, cuda_in_order)
"""


def test_a_bulk_group_wait_runs_on_the_cpu_harness():
    """A Fence whose pre holds tma_to_gmem_async waits for the thread's bulk groups
    (cp.async.bulk.wait_group 0); no lowering issues a bulk store, so on the harness
    that is a no-op (gs_bulk_wait_all), not "unsupported: no CPU meaning" (11% of the
    generated programs were not compared on cpu for it); on a GPU the same PTX."""
    from pathlib import Path

    from gpusem.compiler.backends.cpu import HERE
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc

    compiled = compile_proc(parse_module(BULK_FENCE).procs[-1], {})
    assert "gs_bulk_wait_all();" in compiled.source
    (o,) = check_sources([("bulk.gpuir", BULK_FENCE, {})], "cpu")
    assert (o.sync, o.classification) == ("accepted", "holds"), o.verdict.describe()
    header = (Path(HERE) / "gpusem_rt.cuh").read_text()
    cuda = header.index("GS_DEV void gs_bulk_wait_all() {\n")  # the GS_CUDA half
    cpu = header.index("GS_DEV void gs_bulk_wait_all() {}")
    wait = header.index('asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");')
    assert cuda < wait < cpu
