"""The cuda worker's NVRTC build with its speed-ups (`cuda_worker.BUILD_SPEEDUPS`,
issue 31.3) on the NVRTC wheels, no GPU: the worker's own `Device.compile` with its
one NVRTC call (`run_nvrtc`) made through ctypes (`nvrtc_lib.compile_unit`) instead
of CuPy. What is tested must not change: the cubin of a batch built with the
speed-ups is the plain build's, byte for byte, and where they fail the plain options
decide."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.compiler.backends import cpu_source, cuda_worker, nvrtc_lib
from gpusem.compiler.backends.cuda_worker import BUILD_SPEEDUPS, NVRTC_OPTIONS

from . import cases

ROOT = Path(__file__).resolve().parents[2]


def newest() -> nvrtc_lib.Nvrtc:
    return nvrtc_lib.find_nvrtc()[0]  # the `nvrtc` extra: 13.5 in CI and here


class WheelDevice(cuda_worker.Device):
    """The worker's Device with no CuPy and no context: its NVRTC calls go to the
    NVRTC wheel, each call's options recorded."""

    def __init__(self, nvrtc: nvrtc_lib.Nvrtc) -> None:  # no context, no scribbler
        self.modules, self.functions = {}, {}
        self.nvrtc, self.calls = nvrtc, []

    def run_nvrtc(self, unit, exprs, options):
        self.calls.append(list(options))
        return nvrtc_lib.compile_unit(self.nvrtc, unit, exprs, options)


def items() -> list[tuple[int, str, str]]:
    """(index, kernel name, source) of the backend's hand-written kernels (the whole
    runtime API: mbarriers, cp.async, bulk copies, clusters, wgmma fences, atomics,
    shuffles) and of the Bundl examples our compiler compiles."""
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.compiler.bundl_cuda.pipeline import compile_program

    found = [(name, src) for name, src in sorted(cases.all_sources().items())
             if name != "t1_nc_alias"]
    found.append(("bundl_main", cases.source("t1_nc_alias")))
    for path in sorted((ROOT / "examples" / "bundl").glob("*.bundl")):
        try:
            kernel = compile_program(parse_program(path.read_text(), str(path)))
        except Exception:  # noqa: BLE001, S112 - not a compilable example
            continue
        found.append((kernel.name, kernel.source))
    return [(i, name, src) for i, (name, src) in enumerate(found)]


@pytest.fixture(scope="module")
def batch() -> list[tuple[int, str, str]]:
    got = items()
    assert len(got) >= 40  # the kernels and a good part of the examples
    return got


def plain(nvrtc, batch) -> tuple[bytes | None, dict[int, str], str]:
    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, _, src in batch], for_cpu=False)
    exprs = {i: f"gs_k{i}::{name}" for i, name, _ in batch}
    return nvrtc_lib.compile_unit(nvrtc, unit, exprs, list(NVRTC_OPTIONS))


def test_the_speedups_leave_the_cubin_byte_for_byte(batch) -> None:
    device = WheelDevice(newest())
    binary, lowered, _ = device.compile(batch)
    assert device.calls == [[*NVRTC_OPTIONS, *BUILD_SPEEDUPS]]  # one call, sped up
    want, want_lowered, _ = plain(newest(), batch)
    assert binary is not None and binary == want
    assert lowered == want_lowered and len(lowered) == len(batch)


def test_each_kernel_alone_is_the_plain_cubin(batch) -> None:
    """One kernel a module, as a shrink step or a one-program batch builds it."""
    device = WheelDevice(newest())
    for item in batch[::4]:
        binary, _, _ = device.compile([item])
        assert binary is not None and binary == plain(newest(), [item])[0], item[1]
    assert device.speedups == BUILD_SPEEDUPS


def test_the_worker_builds_and_loads_a_module_of_the_batch(batch) -> None:
    device = WheelDevice(newest())
    device.load = lambda key, binary, lowered: device.modules.update(
        {key: (binary, lowered)})
    errors, binary, lowered = device.build("k", batch[:10])
    assert errors == {} and device.modules["k"] == (binary, lowered)
    assert binary == plain(newest(), batch[:10])[0]


def test_an_nvrtc_that_refuses_the_speedups_gets_the_plain_build(batch) -> None:
    device = WheelDevice(newest())
    device.speedups = ("--no-such-option-of-nvrtc",)
    binary, _, _ = device.compile(batch[:5])
    assert binary == plain(newest(), batch[:5])[0]
    assert device.speedups == ()  # and the next batch is one call
    device.compile(batch[5:10])
    assert device.calls[-1] == list(NVRTC_OPTIONS) and len(device.calls) == 3


def test_a_kernel_that_needs_the_full_prelude_builds_as_before() -> None:
    """`-minimal` leaves textures out of NVRTC's prelude: such a kernel does not build
    with it, and builds without it as it always did."""
    src = ('#include "gpusem_rt.cuh"\n'
           'extern "C" __global__ void tex(cudaTextureObject_t t, float* o) {\n'
           "  o[0] = tex1Dfetch<float>(t, 0);\n}\n")
    device = WheelDevice(newest())
    binary, _, _ = device.compile([(0, "tex", src)])
    assert binary is not None and binary == plain(newest(), [(0, "tex", src)])[0]
    assert [c[len(NVRTC_OPTIONS):] for c in device.calls] == [list(BUILD_SPEEDUPS), []]


def test_a_source_error_reads_as_the_plain_builds_log() -> None:
    bad = ('#include "gpusem_rt.cuh"\nextern "C" __global__ void bad(int* o) {\n'
           "  o[0] = no_such_name;\n}\n")
    device = WheelDevice(newest())
    binary, _, log = device.compile([(3, "bad", bad)])
    assert binary is None and log == plain(newest(), [(3, "bad", bad)])[2]
    assert "k3_src.cu(3)" in log and "no_such_name" in log
    assert device.speedups == BUILD_SPEEDUPS  # the source failed, not the option


def test_a_failing_batch_blames_its_kernel_alone_with_the_plain_options(batch) -> None:
    bad = ('#include "gpusem_rt.cuh"\nextern "C" __global__ void bad(int* o) {\n'
           "  o[0] = no_such_name;\n}\n")
    device = WheelDevice(newest())
    device.load = lambda key, binary, lowered: None
    mixed = [*batch[:3], (3, "bad", bad)]
    errors, binary, _ = device.build("k", mixed)
    assert set(errors) == {3} and "no_such_name" in errors[3]
    assert binary == plain(newest(), batch[:3])[0]
    # batch sped up, batch plain, the blamed kernel alone plain, the rest sped up
    assert [c[len(NVRTC_OPTIONS):] for c in device.calls] == [
        list(BUILD_SPEEDUPS), [], [], list(BUILD_SPEEDUPS)]
