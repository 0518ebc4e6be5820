"""The toolchain and ptx properties are one call each to an object of the other
branches' shape (fuzz/ckernel/hooks.py): a matrix `run(jobs) -> {config: results}` and
a checker `(sources) -> [[finding line]]`. Here both are small fakes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpusem.calculus.ckernel.parser import parse_kernel
from gpusem.compiler.backends import get_backend
from gpusem.fuzz.ckernel import hooks
from gpusem.fuzz.ckernel.target import CkernelTarget
from tests.ckernel.kernels import T1, one


class FakeMatrix:
    """`cpu` runs the harness; `off-by-one` is the harness with st[0] changed."""

    def __init__(self) -> None:
        self.cpu = get_backend("cpu")
        self.calls = 0

    def run(self, jobs):
        self.calls += 1
        good = self.cpu.run(jobs)
        bad = []
        for res in good:
            outs = {n: a.copy() for n, a in res.outputs.items()}
            outs["st"][0] += np.int32(1)
            bad.append(replace(res, outputs=outs))
        return {"cpu": good, "off-by-one": bad}


def test_toolchain_property_names_the_configurations_that_disagree() -> None:
    target = CkernelTarget("cpu")
    target.matrix = FakeMatrix()
    kernels = [parse_kernel(T1), one("(/ -7:i32 2)")]
    assert target.prefetch(kernels, "toolchain")
    results = [target.check(k, "toolchain") for k in kernels]
    assert target.matrix.calls == 1  # the whole round in one call
    assert {r.signature for r in results} == {"toolchain:off-by-one"}


def test_ptx_property_reports_the_checks_that_fail() -> None:
    seen: list[int] = []

    def checker(sources):
        seen.append(len(sources))
        return [["ld.nc-read-only: nvrtc 13.0: ld.global.nc of st"] if "? x0 : st" in s
                else [] for s in sources]

    target = CkernelTarget("cpu")
    target.ptx_checker = checker
    kernels = [parse_kernel(T1), one("(/ -7:i32 2)")]
    target.prefetch(kernels, "ptx")
    results = [target.check(k, "ptx") for k in kernels]
    assert seen == [2]
    assert [r.signature for r in results] == ["ptx:ld.nc-read-only", ""]
    assert results[1].status == "pass"


def test_missing_matrix_is_invalid_never_a_pass(monkeypatch) -> None:
    monkeypatch.setattr(hooks, "default_matrix", lambda backend: None)
    res = CkernelTarget("cpu").check(parse_kernel(T1), "toolchain")
    assert (res.status, res.kind) == ("invalid", "not-installed")


def test_a_checker_without_nvrtc_is_invalid_never_a_pass() -> None:
    from gpusem.calculus.errors import BadInput

    def checker(sources):
        raise BadInput("ptx check: no NVRTC installed")

    target = CkernelTarget("cpu")
    target.ptx_checker = checker
    res = target.check(parse_kernel(T1), "ptx")
    assert (res.status, res.kind) == ("invalid", "not-installed")


def test_on_cuda_the_harness_runs_only_for_kernels_a_gpu_config_gets_wrong(
        monkeypatch) -> None:
    """With this tree's matrix on cuda (its GPU faked by the harness), a clean round
    runs the GPU configurations only; a kernel one of them gets wrong also runs the
    harness, whose verdict joins the signature; GPUSEM_TOOLCHAIN_EAGER=1 runs all."""
    from gpusem.compiler.backends.toolchain import GPU_CONFIGS, Matrix

    class FakeGpu(Matrix):
        def __init__(self, wrong: tuple[str, ...]) -> None:
            super().__init__("cuda")
            self.wrong, self.calls = wrong, []
            self.harness = get_backend("cpu")

        def run(self, jobs, configs=None):
            self.calls.append(configs)
            good = self.harness.run(jobs)
            out = {}
            for config in configs or self.configs:
                out[config] = good
                if config in self.wrong:
                    out[config] = [replace(r, outputs={n: a + (n == "st") for n, a
                                                       in r.outputs.items()})
                                   for r in good]
            return out

    def run(wrong):
        target = CkernelTarget("cuda")
        target.matrix = FakeGpu(wrong)
        results = hooks.toolchain_round(target, [parse_kernel(T1)])
        return results, target.matrix.calls

    results, calls = run(())
    assert [r.status for r in results] == ["pass"] and calls == [GPU_CONFIGS]
    assert results[0].configs == tuple(sorted(GPU_CONFIGS))  # counted per config
    results, calls = run(("nvcc-G",))
    assert results[0].signature == "toolchain:nvcc-G" and calls == [GPU_CONFIGS,
                                                                    ("cpu",)]
    assert results[0].configs == tuple(sorted({*GPU_CONFIGS, "cpu"}))
    results, calls = run(("nvcc-G", "cpu"))
    assert results[0].signature == "toolchain:cpu,nvcc-G"
    monkeypatch.setenv("GPUSEM_TOOLCHAIN_EAGER", "1")
    _, calls = run(())
    assert calls == [None]
