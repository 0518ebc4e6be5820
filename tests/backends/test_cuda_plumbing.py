"""The cuda backend's machinery without a GPU: the spawned worker, NVRTC-style batch
builds with failure attribution, the watchdog for hung kernels, CUDA errors that
replace the worker, and event timing. `fake_cupy/` stands in for CuPy (its "NVRTC" is
a real NVRTC for sm_90a, nvcc -c where none is installed; its "GPU" is the cpu
harness); only the worker sees it."""

from __future__ import annotations

import dataclasses

import pytest
from gpusem.compiler.backends import nvcc
from gpusem.compiler.backends.kernel import Job

from . import cases
from .fake_gpu import fake_gpu_backend

pytestmark = pytest.mark.skipif(not nvcc.nvcc_available(), reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def fake_cache(tmp_path_factory):
    """The fake GPU's cpu-harness builds (its precompiled header, each kernel's
    library), one folder for the whole module: the cuda backend keeps its own
    modules in memory, so its build counts are each backend's own either way."""
    return tmp_path_factory.mktemp("fake-gpu-cache")


@pytest.fixture(scope="module")
def fake_gpu(fake_cache):
    with fake_gpu_backend(fake_cache, watchdog_slack_s=1.5) as backend:
        yield backend


def test_batch_of_kernels_runs_through_the_worker(fake_gpu):
    made = [cases.reduce_case(), cases.float_arith_case()]
    results = fake_gpu.run([c.job for c in made])
    for case, r in zip(made, results, strict=True):
        assert r.kind == "ok", r.message
        assert cases.matches(case, r.outputs)


def test_build_error_is_attributed_and_the_rest_run(fake_gpu):
    bad = cases.KernelSpec(
        "bad",
        '#include "gpusem_rt.cuh"\nextern "C" __global__ void bad(int* o) {\n'
        "  o[0] = no_such_name;\n}\n",
        1,
        1,
        0,
        (cases.ptr("o", "int32", 1),),
    )
    good = cases.shuffles_case()
    r_bad, r_good = fake_gpu.run([Job(bad), good.job])
    assert r_bad.kind == "build_error" and "no_such_name" in r_bad.message
    assert r_good.kind == "ok" and cases.matches(good, r_good.outputs)


def test_hung_kernel_times_out_and_a_new_worker_takes_over(fake_gpu):
    loop = cases.spec(
        "infinite_loop",
        1,
        4,
        (cases.ptr("flag", "int32", 1), cases.ptr("out", "int32", 4)),
    )
    after = cases.reduce_case()
    r1, r2 = fake_gpu.run([Job(loop, {}, 0, timeout_s=0.5), after.job])
    assert r1.kind == "timeout" and r1.message.startswith("timeout:")
    assert r2.kind == "ok" and cases.matches(after, r2.outputs), r2.message


def test_cuda_error_is_a_runtime_error(fake_gpu):
    (r,) = fake_gpu.run([cases.div0_job()])
    assert r.kind == "runtime_error"
    assert r.message.startswith("runtime error: RuntimeError: CUDA_ERROR_LAUNCH_FAILED")


def test_time_kernel(fake_gpu):
    assert fake_gpu.time_kernel(cases.reduce_case().job, warmup=1, iters=2) > 0.0


def test_time_kernel_each_gives_one_time_per_launch(fake_gpu):
    each = fake_gpu.time_kernel_each(cases.reduce_case().job, warmup=1, iters=3)
    assert len(each) == 3 and all(ms > 0.0 for ms in each)


def _fresh(job: Job, tag: str) -> Job:
    """The same launch of a kernel no earlier test built (its code key differs)."""
    spec = dataclasses.replace(job.spec, source=job.spec.source + f"// {tag}\n")
    return dataclasses.replace(job, spec=spec)


def test_a_new_worker_loads_the_kept_cubin_instead_of_building_again(fake_gpu):
    before = dict(fake_gpu.stats)
    good = [cases.reduce_case(), cases.shuffles_case()]
    jobs = [cases.div0_job(), *(c.job for c in good)]
    results = fake_gpu.run([_fresh(job, "kept-cubin") for job in jobs])
    assert results[0].kind == "runtime_error"
    for case, r in zip(good, results[1:], strict=True):
        assert r.kind == "ok" and cases.matches(case, r.outputs), r.message
    grew = {k: fake_gpu.stats[k] - before.get(k, 0) for k in ("builds", "loads", "replaced")}
    assert grew == {"builds": 1, "loads": 1, "replaced": 1}


def test_a_failed_launch_is_not_repeated_for_other_schedule_seeds(fake_gpu):
    before = dict(fake_gpu.stats)
    after = cases.reduce_case()
    results = fake_gpu.run([cases.div0_job(0), cases.div0_job(1), cases.div0_job(2), after.job])
    assert [r.kind for r in results[:3]] == ["runtime_error"] * 3
    assert results[3].kind == "ok" and cases.matches(after, results[3].outputs)
    assert fake_gpu.stats["replaced"] - before.get("replaced", 0) == 1
    assert fake_gpu.stats["repeats_skipped"] - before.get("repeats_skipped", 0) == 2


def test_after_a_replacement_a_warm_spare_takes_over(fake_gpu):
    # A replacement, then a run (its worker starts with a spare beside it), then a
    # second replacement: whatever tests ran before in this process (under pytest -n 2
    # this one may be the first of the module to lose a worker, and passed only after
    # others that had).
    fake_gpu.run([_fresh(cases.div0_job(), "spare-1")])
    fake_gpu.run([cases.reduce_case().job])
    fake_gpu.run([_fresh(cases.div0_job(), "spare-2")])
    spare = fake_gpu._spare
    assert spare is not None and spare[0].is_alive()
    (r,) = fake_gpu.run([cases.reduce_case().job])
    assert r.kind == "ok", r.message
    assert fake_gpu._worker is not None and fake_gpu._worker[0].pid == spare[0].pid


def test_a_run_sends_its_launches_in_one_message(fake_gpu):
    """Issue 19: one message to the worker per run, a reply per launch as it ends."""
    before = dict(fake_gpu.stats)
    made = [cases.reduce_case(), cases.float_arith_case(), cases.shuffles_case()]
    results = fake_gpu.run([_fresh(c.job, "one-message") for c in made])
    for case, r in zip(made, results, strict=True):
        assert r.kind == "ok" and cases.matches(case, r.outputs), r.message
    assert fake_gpu.stats["launch_batches"] - before.get("launch_batches", 0) == 1


def test_after_a_failed_launch_the_rest_of_the_message_runs_on_a_new_worker(fake_gpu):
    """The worker stops at a CUDA error (its context is unusable); the launches after
    it run on the next worker, a repeat of the failed launch does not run at all."""
    before = dict(fake_gpu.stats)
    first, last = cases.reduce_case(), cases.shuffles_case()
    jobs = [_fresh(first.job, "rest"), cases.div0_job(0), _fresh(last.job, "rest"),
            cases.div0_job(1)]
    r = fake_gpu.run(jobs)
    assert [x.kind for x in r] == ["ok", "runtime_error", "ok", "runtime_error"]
    assert cases.matches(first, r[0].outputs) and cases.matches(last, r[2].outputs)
    grew = {k: fake_gpu.stats[k] - before.get(k, 0)
            for k in ("launch_batches", "replaced", "repeats_skipped")}
    assert grew == {"launch_batches": 2, "replaced": 1, "repeats_skipped": 1}


def test_past_the_module_bound_the_worker_unloads_instead_of_being_replaced(
        fake_cache, monkeypatch):
    """Issue 31.3: a campaign's backend loads a module a batch; past
    MAX_MODULES_PER_WORKER the modules no batch wants are unloaded from the same
    worker (it was replaced: a new Python, CuPy and context every ~64 batches), and a
    kernel of an unloaded batch is built again when it is next run."""
    from gpusem.compiler.backends import cuda

    monkeypatch.setattr(cuda, "MAX_MODULES_PER_WORKER", 2)
    made = [cases.reduce_case(), cases.float_arith_case(), cases.shuffles_case()]
    with fake_gpu_backend(fake_cache) as gpu:
        pids = []
        for case in [*made, made[0]]:  # four batches: the first one's module again
            (r,) = gpu.run([case.job])
            assert r.kind == "ok" and cases.matches(case, r.outputs), r.message
            assert gpu._worker is not None
            pids.append(gpu._worker[0].pid)
            assert len(gpu._loaded) <= 2
        assert len(set(pids)) == 1  # one worker all along
        assert gpu.stats["replaced"] == 0 and gpu.stats["unloaded"] == 2
        assert gpu.stats["builds"] == 4  # the first kernel's module was unloaded
