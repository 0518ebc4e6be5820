"""NVRTC's own cache is off in every NVRTC call of ours (`cuda_worker.uncached`).

NVRTC 12.9 and later answer a program compiled before from the driver's compute cache
where a driver is loaded (measured on the H200: results/scale/nvrtc_cache_*). A
toolchain fuzzer must compile what it tests, so the worker's CuPy call and the ctypes
calls (`nvrtc_lib`) pass `--no-cache` to every NVRTC that has the option, and to none
that has not. With no driver here the cache cannot answer; what is checked is that the
option reaches NVRTC, that NVRTC then never enters its cache code (its own
`--enable-cache-trace` says so), and that it changes no byte of the cubin."""

from __future__ import annotations

import os
import sys
import types

import pytest
from gpusem.compiler.backends import cpu_source, cuda_worker, nvrtc_lib
from gpusem.compiler.backends.cuda_worker import (
    BUILD_SPEEDUPS,
    NO_CACHE,
    NVRTC_OPTIONS,
    uncached,
)

KERNEL = ('extern "C" __global__ void k(int* a, int n) {\n'
          '  int s = 0;\n  for (int i = 0; i < n; i++) s = s * 31 + (a[i] ^ (s >> 3));\n'
          '  a[threadIdx.x] = s;\n}\n')


def unit() -> tuple[str, dict[int, str]]:
    src = cpu_source.namespaced_unit([(0, "k0_src", KERNEL, "")], for_cpu=False)
    return src, {0: "gs_k0::k"}


def test_the_option_goes_to_exactly_the_nvrtcs_that_have_a_cache() -> None:
    base = ["--gpu-architecture=sm_90a"]
    assert uncached(base, (13, 0)) == [*base, NO_CACHE]
    assert uncached(base, (12, 9)) == [*base, NO_CACHE]
    assert uncached(base, (12, 8)) == base
    assert uncached(base, (11, 8)) == base
    assert uncached([*base, NO_CACHE], (13, 5)).count(NO_CACHE) == 1


def test_every_installed_nvrtc_builds_with_its_cache_off() -> None:
    """The `nvrtc` extra's 11.8, 12.9 and 13.5: each builds the worker's call; the
    two that have a cache get the option (and accept it), 11.8 does not."""
    found = {n.version: n for n in nvrtc_lib.find_nvrtc()}
    assert {(11, 8), (12, 9)} <= set(found) and max(found) >= (13, 0)
    src, exprs = unit()
    for version, nvrtc in found.items():
        arch = nvrtc.arch.replace("compute_", "sm_")
        options = [f"--gpu-architecture={arch}", *nvrtc_lib.OPTIONS]
        binary, lowered, log = nvrtc_lib.compile_unit(nvrtc, src, exprs, options)
        assert binary, (version, log)
        assert lowered[0]
        ptx = nvrtc_lib.compile_ptx(nvrtc, KERNEL)
        assert ptx.ptx, (version, ptx.log)


def test_with_the_option_nvrtc_never_enters_its_cache_and_the_cubin_is_the_same() -> None:
    nvrtc = max(nvrtc_lib.find_nvrtc(), key=lambda n: n.version)
    src, exprs = unit()
    options = [*NVRTC_OPTIONS, *BUILD_SPEEDUPS, "--enable-cache-trace"]
    off = nvrtc_lib.compile_unit(nvrtc, src, exprs, options)
    on = nvrtc_lib.compile_unit(nvrtc, src, exprs, options, nvrtc_cache=True)
    assert off[0] and on[0]
    assert off[0] == on[0]  # no driver here: both compiled, byte for byte alike
    assert "[nvrtc cache]" in on[2]  # with its cache on, NVRTC traces it ...
    assert "[nvrtc cache]" not in off[2]  # ... and with it off, never goes there


class _FakeNvrtc(types.ModuleType):
    """CuPy's `cupy_backends.cuda.libs.nvrtc` as the worker uses it, recording the
    options each compile gets."""

    class NVRTCError(Exception):
        pass

    def __init__(self, version: tuple[int, int]) -> None:
        super().__init__("nvrtc")
        self.version, self.options = version, []

    def getVersion(self):
        return self.version

    def createProgram(self, unit, name, headers, names):
        return object()

    def addNameExpression(self, prog, expr):
        pass

    def compileProgram(self, prog, options):
        self.options.append(list(options))

    def getLoweredName(self, prog, expr):
        return "lowered"

    def getCUBIN(self, prog):
        return b"cubin"

    def destroyProgram(self, prog):
        pass


@pytest.mark.parametrize(("version", "expected"), [((13, 0), True), ((12, 8), False)])
def test_the_workers_cupy_call_turns_the_cache_off(monkeypatch, version, expected) -> None:
    fake = _FakeNvrtc(version)
    libs = types.ModuleType("cupy_backends.cuda.libs")
    libs.nvrtc = fake  # type: ignore[attr-defined]
    for name, module in (("cupy_backends", types.ModuleType("cupy_backends")),
                         ("cupy_backends.cuda", types.ModuleType("cupy_backends.cuda")),
                         ("cupy_backends.cuda.libs", libs),
                         ("cupy_backends.cuda.libs.nvrtc", fake)):
        monkeypatch.setitem(sys.modules, name, module)
    cuda_worker._nvrtc_version.cache_clear()
    try:
        device = object.__new__(cuda_worker.Device)  # no context: NVRTC only
        binary, _, _ = device.compile([(0, "k", KERNEL)])
        assert binary == b"cubin"
        assert (NO_CACHE in fake.options[-1]) is expected
        probe = object.__new__(cuda_worker.Device)
        probe.nvrtc_cache = True  # scripts/nvrtc_cache_probe.py's measurement only
        probe.run_nvrtc("unit", {0: "gs_k0::k"}, list(NVRTC_OPTIONS))
        assert NO_CACHE not in fake.options[-1]
    finally:
        cuda_worker._nvrtc_version.cache_clear()


def test_the_worker_turns_the_drivers_compute_cache_off_before_cuda_starts(
        monkeypatch) -> None:
    """The driver's cache would answer a PTX load it JIT-compiled before (ptx-jit) and
    an NVRTC build: the worker sets CUDA_CACHE_DISABLE before Device() starts CUDA."""
    import multiprocessing

    seen = {}

    class Probe:
        def __init__(self) -> None:
            seen["at_start"] = os.environ.get("CUDA_CACHE_DISABLE")
            raise RuntimeError("no GPU here")

    monkeypatch.setenv("CUDA_CACHE_DISABLE", "0")  # restored after the test
    monkeypatch.setattr(cuda_worker, "Device", Probe)
    ours, theirs = multiprocessing.Pipe()
    theirs.close()  # the worker refuses, then sees the pipe closed and returns
    cuda_worker.serve(ours)
    assert seen["at_start"] == "1"
