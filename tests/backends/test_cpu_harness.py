"""The cpu backend on hand-written kernels: right answers, and bugs that show.

Each determined kernel must give its NumPy reference on every schedule (forward,
reverse, random); each buggy kernel (missing barrier, missing cp.async wait, wrong
mbarrier parity, barrier in divergent code) must be caught: a wrong result or a
detected deadlock on at least one schedule, and on the forward schedule where the
harness's design makes that certain.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.compiler.backends.cpu import CpuBackend
from gpusem.compiler.backends.kernel import Job

from . import cases

SEEDS = (0, 1, 2, 3)
LOOP = cases.spec(
    "infinite_loop", 1, 4, (cases.ptr("flag", "int32", 1), cases.ptr("out", "int32", 4))
)
SPIN = cases.spec(
    "spin_atomic", 2, 32, (cases.ptr("flag", "int32", 1), cases.ptr("out", "int32", 32))
)
CRASH = cases.spec("null_write", 1, 32, (cases.ptr("out", "int32", 32),))
DIV0 = cases.spec(
    "div_by_zero", 1, 32, (cases.ptr("a", "int32", 32), cases.ptr("out", "int32", 32))
)
DIVERGENT = cases.spec("divergent_barrier", 1, 128, (cases.ptr("out", "int32", 128),))


@pytest.fixture(scope="module", autouse=True)
def _prebuilt(cpu):
    """Build every kernel in one batch (one g++ run), as a fuzzing campaign would."""
    specs = [f(seed=0).job.spec for f in cases.DETERMINED.values()]
    specs += [cases.reduce_case("reduce_nosync").job.spec]
    specs += [cases.mbarrier_case("mbarrier_phase_bug").job.spec]
    specs += [cases.cp_async_case("cp_async_nowait").job.spec, cases.wgmma_job().spec]
    specs += [LOOP, SPIN, CRASH, DIV0, DIVERGENT]
    built = cpu.build(specs)
    assert all(b.kind == "ok" for b in built.values()), built


@pytest.mark.parametrize("name", sorted(cases.DETERMINED))
def test_determined_kernel_matches_numpy_on_every_schedule(cpu, name):
    made = [cases.DETERMINED[name](seed=s) for s in SEEDS]
    results = cpu.run([c.job for c in made])
    for case, result in zip(made, results, strict=True):
        assert result.kind == "ok", (case.job.schedule_seed, result.message)
        assert cases.matches(case, result.outputs), (
            case.job.schedule_seed,
            {k: result.outputs[k][:16] for k in case.expect},
        )


def _caught(case, result) -> bool:
    return result.kind == "deadlock" or (
        result.kind == "ok" and not cases.matches(case, result.outputs)
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda s: cases.reduce_case("reduce_nosync", seed=s),
        lambda s: cases.cp_async_case("cp_async_nowait", seed=s),
        lambda s: cases.mbarrier_case("mbarrier_phase_bug", seed=s),
    ],
    ids=["missing_syncthreads", "missing_cp_async_wait", "mbarrier_wrong_parity"],
)
def test_synchronisation_bug_is_caught(cpu, make):
    made = [make(s) for s in range(6)]
    results = cpu.run([c.job for c in made])
    caught = [_caught(c, r) for c, r in zip(made, results, strict=True)]
    assert all(r.kind in ("ok", "deadlock") for r in results), [
        r.message for r in results
    ]
    assert sum(caught) >= 3, caught  # not luck: most schedules expose it


def test_missing_barrier_is_wrong_on_the_forward_schedule(cpu):
    # Forward order runs thread 0 to completion first: it reads s[128] while poisoned.
    case = cases.reduce_case("reduce_nosync", seed=0)
    (result,) = cpu.run([case.job])
    assert result.kind == "ok"
    assert not np.array_equal(result.outputs["out"], case.expect["out"])


def test_missing_cp_async_wait_reads_stale_shared_memory(cpu):
    case = cases.cp_async_case("cp_async_nowait", seed=0)
    (result,) = cpu.run([case.job])
    poison = np.frombuffer(bytes([0xA5] * 4), dtype=np.int32)[0]
    assert result.kind == "ok"
    assert np.all(result.outputs["out"] == cases.wrap32([2 * int(poison)])[0])


def test_barrier_in_divergent_code_is_a_detected_deadlock(cpu):
    results = cpu.run([Job(DIVERGENT, {}, s) for s in SEEDS])
    for r in results:
        assert r.kind == "deadlock", r
        assert r.message.startswith("deadlock: block (0,0,0):")
        assert "barrier 0" in r.message
        assert "(64 threads; 64 of 128 arrived)" in r.message
        assert "64 threads exited" in r.message


def test_wgmma_is_reported_unsupported(cpu):
    (r,) = cpu.run([cases.wgmma_job()])
    assert r.kind == "unsupported"
    assert r.message.startswith("unsupported: wgmma")


def test_raw_inline_asm_is_unsupported_without_building(cpu):
    src = (
        '#include "gpusem_rt.cuh"\n'
        'extern "C" __global__ void raw(int* o) {\n'
        '  asm volatile("bar.sync 0;");  // PTX\n  o[0] = 1;\n}\n'
    )
    spec = cases.KernelSpec("raw", src, 1, 32, 0, (cases.ptr("o", "int32", 1),))
    (r,) = cpu.run([Job(spec)])
    assert r.kind == "unsupported" and "inline asm" in r.message


def test_ptx_only_statement_aborts_only_when_executed(cpu):
    src = (
        '#include "gpusem_rt.cuh"\n'
        'extern "C" __global__ void ptx_only(int* o, int go) {\n'
        "  o[threadIdx.x] = 5;\n"
        '  if (go) GS_PTX_ONLY("setmaxnreg", asm volatile("setmaxnreg.inc.sync.aligned.u32 240;"));\n'
        "}\n"
    )
    params = (cases.ptr("o", "int32", 32), cases.scalar("go", "int32"))
    spec = cases.KernelSpec("ptx_only", src, 1, 32, 0, params)
    skipped, taken = cpu.run([Job(spec, {"go": 0}), Job(spec, {"go": 1})])
    assert skipped.kind == "ok" and np.all(skipped.outputs["o"] == 5)
    assert taken.kind == "unsupported" and "setmaxnreg" in taken.message


def test_division_by_zero_traps(cpu):
    (r,) = cpu.run([Job(DIV0, {"a": np.zeros(32, np.int32)})])
    assert r.kind == "runtime_error"
    assert r.message.startswith("trap: division by zero (thread (")


def test_infinite_loop_is_a_timeout_and_the_batch_goes_on(cpu):
    after = cases.reduce_case()
    r1, r2 = cpu.run([Job(LOOP, {}, 0, timeout_s=0.5), after.job])
    assert r1.kind == "timeout" and r1.message.startswith("timeout:")
    assert r2.kind == "ok" and cases.matches(after, r2.outputs)


def test_inter_block_spin_wait_is_a_timeout(cpu):
    (r,) = cpu.run([Job(SPIN, {}, 0, timeout_s=0.3)])
    assert r.kind == "timeout"
    assert r.message.startswith("timeout: time budget")


def test_crash_is_reported_and_the_batch_goes_on(cpu):
    after = cases.shuffles_case()
    r1, r2 = cpu.run([Job(CRASH), after.job])
    assert r1.kind == "crash" and "SIGSEGV" in r1.message
    assert r2.kind == "ok" and cases.matches(after, r2.outputs)


def test_build_error_is_attributed_to_its_kernel(cpu):
    bad = cases.KernelSpec(
        "bad",
        '#include "gpusem_rt.cuh"\nextern "C" __global__ void bad(int* o) {\n'
        "  o[0] = no_such_name;\n}\n",
        1,
        1,
        0,
        (cases.ptr("o", "int32", 1),),
    )
    good = cases.int_arith_case()
    r_bad, r_good = cpu.run([Job(bad), good.job])
    assert r_bad.kind == "build_error"
    assert "k" in r_bad.message and "_bad.cu:3:" in r_bad.message
    assert "no_such_name" in r_bad.message
    assert r_good.kind == "ok" and cases.matches(good, r_good.outputs)


def test_the_whole_api_surface_builds_on_the_harness(cpu):
    spec = cases.spec(
        "api_surface",
        1,
        32,
        (
            cases.ptr("f", "float32", 16),
            cases.ptr("i", "int32", 16),
            cases.ptr("u", "uint32", 16),
            cases.ptr("q", "uint64", 16),
            cases.ptr("tmap", "float32", 32),
        ),
    )
    (built,) = cpu.build([spec]).values()
    assert built.kind == "ok", built.message


def test_kernels_that_clash_only_when_batched_get_libraries_of_their_own(tmp_path):
    # A const and a mutable variable in one named section: fine in separate translation
    # units, a "section type conflict" in one.
    def spec(name, decl, value):
        return cases.KernelSpec(
            name,
            f'#include "gpusem_rt.cuh"\n__attribute__((used, section("gs_test"))) {decl};\n'
            f'extern "C" __global__ void {name}(int* o) {{ o[0] = {value}; }}\n',
            1,
            1,
            0,
            (cases.ptr("o", "int32", 1),),
        )

    a, b = spec("ka", "const int ca = 1", "ca"), spec("kb", "int cb = 2", "cb")
    backend = CpuBackend(cache_dir=tmp_path, parallel=1)
    try:
        ra, rb = backend.run([Job(a), Job(b)])
        built = backend.build([a, b])
    finally:
        backend.close()
    assert ra.kind == rb.kind == "ok", (ra.message, rb.message)
    assert len({x.library for x in built.values()}) == 2  # not one shared batch
    assert ra.outputs["o"][0] == 1 and rb.outputs["o"][0] == 2


@pytest.mark.parametrize(
    "params",
    [
        (cases.ptr("o", "int32", 4), cases.scalar("x", "int32")),  # float x as int32
        (cases.ptr("o", "uint32", 4), cases.scalar("x", "float32")),  # int* as uint32
        (cases.ptr("o", "int32", 4),),  # a parameter missing
    ],
)
def test_spec_that_disagrees_with_the_kernel_signature_is_a_build_error(cpu, params):
    src = (
        '#include "gpusem_rt.cuh"\n'
        'extern "C" __global__ void sig(int* o, const float x) { o[0] = (int)x; }\n'
    )
    (r,) = cpu.run(
        [
            Job(cases.KernelSpec("sig", src, 1, 1, 0, params), {"x": 1})
            if len(params) > 1
            else Job(cases.KernelSpec("sig", src, 1, 1, 0, params))
        ]
    )
    assert r.kind == "build_error"
    assert "kernel parameters differ from KernelSpec.params" in r.message


def test_cv_qualified_kernel_parameters_match_plain_spec_types(cpu):
    src = (
        '#include "gpusem_rt.cuh"\n'
        'extern "C" __global__ void cv(const float* __restrict__ i, volatile int* o,\n'
        "                              const int n) { o[0] = (int)i[0] + n; }\n"
    )
    params = (
        cases.ptr("i", "float32", 1),
        cases.ptr("o", "int32", 1),
        cases.scalar("n", "int32"),
    )
    (r,) = cpu.run(
        [
            Job(
                cases.KernelSpec("cv", src, 1, 1, 0, params),
                {"i": np.array([2.0], np.float32), "n": 3},
            )
        ]
    )
    assert r.kind == "ok", r.message
    assert r.outputs["o"][0] == 5
