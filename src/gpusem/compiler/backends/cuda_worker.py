"""The cuda backend's worker: what lives in the process that owns the CUDA context.

`cuda.CudaBackend` spawns `serve` in a fresh process (CUDA must never be initialised
in the parent) and sends it requests over a pipe: `build` (NVRTC a batch of kernels
into one module and load it; the cubin goes back to the parent, which keeps it),
`load` (a kept cubin, into a worker that replaced one), `unload` (modules the parent
no longer keeps: `cuda.MAX_MODULES_PER_WORKER`), `launch` (scribble shared
memory with the poison byte, run one kernel, bring its arrays back; or time it). A
worker that cannot start (no CuPy, no driver, no GPU) answers every request with
`Unavailable`. CuPy is imported only here.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.cpu import HERE

NVRTC_OPTIONS = (
    "--gpu-architecture=sm_90a",
    "--fmad=false",
    "--ftz=false",
    "--prec-div=true",
    "--prec-sqrt=true",
    "-std=c++17",
    f"-I{HERE}",
)
# Options that make NVRTC cheaper and change no byte of the cubin (issue 31.3):
# `-minimal` leaves out of NVRTC's implicit prelude what no generated kernel uses
# (textures and surfaces, device-side runtime calls and launches, the runtime API's
# types): ~4 of a call's ~24 CPU ms on the dev machine, nothing per kernel
# (scripts/nvrtc_probe.py; results/scale/nvrtc_build_cpu_dev.json). A batch that does
# not build with them is built again without (`Device.compile`), so what a kernel that
# needs the full prelude, or an NVRTC that does not know the option, gets is the plain
# build's answer; tests/backends/test_nvrtc_build.py compares the cubins.
BUILD_SPEEDUPS = ("-minimal",)
# NVRTC 12.9 and later answer a program it has compiled before from the CUDA driver's
# compute cache where a driver is loaded (the library's "[nvrtc cache]" trace: "retrieved
# cached cubin from driver cache, skip compilation"). A fuzzer of the toolchain must
# compile what it tests: a finding confirmed by building it again would otherwise be
# the cache's copy of the first build, and a campaign's new programs only pay for the
# key and the write (results/scale/nvrtc_cache_*). So every NVRTC call of ours that
# can take `--no-cache` takes it; older NVRTCs have no cache and no option.
NO_CACHE = "--no-cache"
NO_CACHE_SINCE = (12, 9)


def uncached(options: list[str], version: tuple[int, int]) -> list[str]:
    """`options` with NVRTC's cache turned off where `version` has one."""
    if version >= NO_CACHE_SINCE and NO_CACHE not in options:
        return [*options, NO_CACHE]
    return options


_MAX_DYN_SMEM_ATTR = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


POISON = 0xA5  # the cpu harness's shared-memory poison byte (cpu.py)
_SCRIBBLE_SRC = """
extern "C" __global__ void gs_scribble(unsigned words, unsigned pattern) {
  extern __shared__ unsigned gs_scribble_smem[];
  volatile unsigned* s = gs_scribble_smem;  // volatile: the stores are the point
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) s[i] = pattern;
}
"""
_ATTR_SM_COUNT = 16  # cudaDevAttrMultiProcessorCount
_ATTR_SMEM_OPTIN = 97  # cudaDevAttrMaxSharedMemoryPerBlockOptin


class Device:
    """What lives in the process that owns the CUDA context."""

    def __init__(self) -> None:
        import cupy  # lazy: only on GPU machines

        # key -> (cupy.RawModule: CuPy has no type information, lowered names)
        self.modules: dict[str, tuple[Any, dict[int, str]]] = {}
        # (key, index, dynamic smem) -> the kernel's function, looked up once
        self.functions: dict[tuple[str, int, int], Any] = {}
        self.sync = schedule_blocking_sync()  # before the context exists
        cupy.asarray([0])  # make the context now: a spare worker is then ready
        self.scribble_fn = self._scribbler()

    def _scribbler(self):
        """(function, grid, arguments, smem bytes): one block of the opt-in maximum
        per SM, twice over, so every SM's whole shared memory is written."""
        from cupy.cuda import runtime

        binary, lowered, log = self.compile([(0, "gs_scribble", _SCRIBBLE_SRC)])
        if binary is None:
            raise RuntimeError(f"the shared-memory scribbler does not build: {log}")
        self.load("gs_scribble", binary, lowered)
        smem = runtime.deviceGetAttribute(_ATTR_SMEM_OPTIN, 0)
        sms = runtime.deviceGetAttribute(_ATTR_SM_COUNT, 0)
        args = (np.uint32(smem // 4), np.uint32(POISON * 0x01010101))
        return self._function("gs_scribble", 0, smem), 2 * sms, args, smem

    def scribble(self) -> None:
        fn, grid, args, smem = self.scribble_fn
        fn((grid,), (256,), args, shared_mem=smem)

    def load(self, key: str, binary: bytes, lowered: dict[int, str]) -> None:
        from cupy.cuda import function

        module = function.Module()
        module.load(binary)
        self.modules[key] = (module, lowered)

    # The speed-ups this worker's NVRTC takes: () once it refused them (`compile`).
    speedups: tuple[str, ...] = BUILD_SPEEDUPS
    # NVRTC's own cache stays off (`uncached`); only scripts/nvrtc_cache_probe.py,
    # which measures that cache, turns it on.
    nvrtc_cache = False

    def unload(self, keys: list[str]) -> None:
        """Drop the modules of `keys` and their functions: CuPy unloads a module
        (cuModuleUnload) when its last reference, a function's included, goes."""
        gone = set(keys)
        for key in gone:
            self.modules.pop(key, None)
        self.functions = {k: f for k, f in self.functions.items() if k[0] not in gone}

    def compile(
        self, items: list[tuple[int, str, str]], speedups: bool = True
    ) -> tuple[bytes | None, dict, str]:
        """NVRTC over (index, kernel name, source); (cubin, {index: lowered}, log).
        With `speedups`, first with `BUILD_SPEEDUPS` added; where that fails, the plain
        options decide (their cubin, or their log): a source error reads as it always
        did, and an answer the speed-ups alone changed turns them off for this worker
        (an NVRTC without the option; a kernel that needs what `-minimal` omits)."""
        unit = cpu_source.namespaced_unit(
            [(i, f"k{i}_src", src, "") for i, _, src in items], for_cpu=False
        )
        exprs = {i: f"gs_k{i}::{name}" for i, name, _ in items}
        extra = self.speedups if speedups else ()
        if extra:
            binary, lowered, log = self.run_nvrtc(unit, exprs, [*NVRTC_OPTIONS, *extra])
            if binary is not None:
                return binary, lowered, log
        binary, lowered, log = self.run_nvrtc(unit, exprs, list(NVRTC_OPTIONS))
        if extra and binary is not None:
            self.speedups = ()
        return binary, lowered, log

    def run_nvrtc(
        self, unit: str, exprs: dict[int, str], options: list[str]
    ) -> tuple[bytes | None, dict[int, str], str]:
        """One NVRTC program through CuPy's binding: (cubin, {index: lowered name of
        its name expression}, "") or (None, {}, NVRTC's log)."""
        from cupy_backends.cuda.libs import nvrtc

        # Older CuPy spells it addAddNameExpression and lacks getCUBIN (then: PTX for
        # compute_90a, which the driver JIT-compiles on load).
        add_name = (
            getattr(nvrtc, "addNameExpression", None) or nvrtc.addAddNameExpression
        )
        cubin = hasattr(nvrtc, "getCUBIN")
        if not self.nvrtc_cache:
            options = uncached(options, _nvrtc_version())
        if not cubin:
            options = [o.replace("=sm_", "=compute_") if o.startswith(
                "--gpu-architecture=") else o for o in options]
        prog = nvrtc.createProgram(unit, "batch.cu", [], [])
        try:
            for expr in exprs.values():
                add_name(prog, expr)
            try:
                nvrtc.compileProgram(prog, options)
            except nvrtc.NVRTCError:
                return None, {}, nvrtc.getProgramLog(prog)
            lowered = {i: nvrtc.getLoweredName(prog, e) for i, e in exprs.items()}
            if cubin:
                return nvrtc.getCUBIN(prog), lowered, ""
            return nvrtc.getPTX(prog).encode() + b"\0", lowered, ""
        finally:
            nvrtc.destroyProgram(prog)

    def build(self, key: str, items: list[tuple[int, str, str]]):
        """Build and load a module for `items`: ({index: error} for kernels that do
        not build, the module's binary or None, {index: lowered name})."""
        errors: dict[int, str] = {}
        remaining = list(items)
        while remaining:
            binary, lowered, log = self.compile(remaining)
            if binary is not None:
                self.load(key, binary, lowered)
                return errors, binary, lowered
            blamed = cpu_source.blamed_kernels(log)
            suspects = [it for it in remaining if it[0] in blamed] or remaining
            failed = set()
            for item in suspects:  # alone, plain: the batch failed both ways
                alone, _, alone_log = self.compile([item], speedups=False)
                if alone is None:
                    errors[item[0]] = "build error: " + _trim(alone_log)
                    failed.add(item[0])
            if not failed:
                for item in remaining:
                    errors[item[0]] = "build error: fails only when batched: " + _trim(
                        log
                    )
                return errors, None, {}
            remaining = [it for it in remaining if it[0] not in failed]
        return errors, None, {}

    def _function(self, key: str, index: int, dyn_smem: int):
        import cupy

        fn = self.functions.get((key, index, dyn_smem))
        if fn is not None:
            return fn
        module, lowered = self.modules[key]
        fn = module.get_function(lowered[index])
        if dyn_smem > 48 * 1024:
            cupy.cuda.driver.funcSetAttribute(fn.ptr, _MAX_DYN_SMEM_ATTR, dyn_smem)
        self.functions[(key, index, dyn_smem)] = fn
        return fn

    def launch(
        self, key, index, grid, block, dyn, params, arrays, scalars, timing=None,
        scribble=True,
    ):
        """Run once (or time: (warmup, iters[, each]) -> ms, or each launch's ms);
        (status, message, outputs, t).
        `scribble`: poison shared memory first (kernels that use none skip it)."""
        import cupy

        try:
            fn = self._function(key, index, dyn)
            dev = {name: cupy.asarray(a) for name, a in arrays.items()}
            args = tuple(dev[n] if ptr else scalars[n] for n, _, ptr in params)
            if timing is not None:
                return "ok", "", {}, _time(fn, grid, block, args, dyn, *timing)
            if scribble:
                self.scribble()  # same stream: it ends before the kernel starts
            start = time.perf_counter()
            fn(grid, block, args, shared_mem=dyn)
            cupy.cuda.runtime.deviceSynchronize()
            elapsed = time.perf_counter() - start
            return "ok", "", {n: cupy.asnumpy(a) for n, a in dev.items()}, elapsed
        except Exception as err:  # noqa: BLE001  (a CUDA error: the context is unusable)
            return (
                "runtime_error",
                f"runtime error: {type(err).__name__}: {err}",
                {},
                0.0,
            )


def launch_many(device: Device, conn, payloads: list[tuple]) -> None:
    """`Device.launch` for each payload in turn, each reply sent as soon as it is
    known (the parent's watchdog times each launch); stops after the first launch
    that is not "ok": its CUDA error leaves the context unusable for the rest, which
    the parent sends again to a new worker (cuda.CudaBackend.run)."""
    for payload in payloads:
        reply = device.launch(*payload)
        conn.send(reply)
        if reply[0] != "ok":
            return


# cuDevicePrimaryCtxSetFlags: CU_CTX_SCHED_SPIN 1, _YIELD 2, _BLOCKING_SYNC 4
_SCHED = {"spin": 1, "yield": 2, "blocking": 4}


def schedule_blocking_sync() -> str:
    """How this worker's host thread waits for the GPU: env GPUSEM_CUDA_SYNC (blocking,
    yield, spin, or auto: CUDA's default), set on the primary context before it is
    made. Blocking by default: a campaign runs one worker per CPU core beside the
    Python processes that feed them, and CUDA's default (auto) spins while it has
    fewer contexts than cores, so a worker waiting for the GPU would burn a core
    another process needs. The flag changes only how the host waits, never a result.
    Returns what was set ("auto" where the driver call is unavailable)."""
    import ctypes
    import os

    mode = os.environ.get("GPUSEM_CUDA_SYNC", "blocking")
    if mode not in _SCHED:
        return "auto"
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        dev = ctypes.c_int()
        if cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), 0):
            return "auto"
        setter = (getattr(cuda, "cuDevicePrimaryCtxSetFlags_v2", None)
                  or cuda.cuDevicePrimaryCtxSetFlags)
        return mode if setter(dev, _SCHED[mode]) == 0 else "auto"
    except (OSError, AttributeError):
        return "auto"


def _time(fn, grid, block, args, dyn, warmup: int, iters: int,
          each: bool = False) -> float | list[float]:
    """Mean ms per launch over `iters`; `each`: every launch's ms (an event between
    any two launches, all queued back to back, so a median can be taken; the GPU stays
    busy, so a gap is not the host's launch latency)."""
    import cupy

    for _ in range(warmup):
        fn(grid, block, args, shared_mem=dyn)
    if each:
        marks = [cupy.cuda.Event() for _ in range(iters + 1)]
        marks[0].record()
        for mark in marks[1:]:
            fn(grid, block, args, shared_mem=dyn)
            mark.record()
        marks[-1].synchronize()
        return [cupy.cuda.get_elapsed_time(a, b) for a, b in itertools.pairwise(marks)]
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(iters):
        fn(grid, block, args, shared_mem=dyn)
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / max(1, iters)


@functools.cache
def _nvrtc_version() -> tuple[int, int]:
    from cupy_backends.cuda.libs import nvrtc

    major, minor = nvrtc.getVersion()
    return int(major), int(minor)


def _trim(log: str, limit: int = 4000) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower()]
    return ("\n".join(lines) or log)[:limit]


@dataclass(frozen=True)
class Unavailable:
    """The worker's answer to everything when it could not start (no CuPy, no GPU)."""

    reason: str


def serve(conn, parent_pid: int | None = None, pdeathsig: bool = False) -> None:
    if parent_pid is not None:  # a SIGKILLed campaign leaves no GPU context behind
        from gpusem.compiler.backends.lifetime import die_with_parent

        die_with_parent(parent_pid, pdeathsig)
    # The driver's compute cache would answer a PTX load it has JIT-compiled before
    # (the toolchain matrix's ptx-jit) and, from NVRTC 12.9, an NVRTC build, with its
    # stored copy: the toolchain under test must compile what it is given. The driver
    # reads this when it initialises, which Device() does first.
    os.environ["CUDA_CACHE_DISABLE"] = "1"
    try:
        device = Device()
    except Exception as err:  # noqa: BLE001 - no CuPy / driver / GPU: say so, once
        _refuse(conn, f"{type(err).__name__}: {err}")
        return
    ops: dict[str, Callable[..., object]] = {
        "build": device.build, "load": device.load, "unload": device.unload,
        "launch": device.launch}
    while True:
        try:
            op, payload = conn.recv()
        except EOFError:
            return
        if op == "launch_many":  # one reply per launch, sent as each ends
            launch_many(device, conn, payload)
            continue
        conn.send(ops[op](*payload))


def _refuse(conn, reason: str) -> None:
    while True:
        try:
            conn.recv()
        except EOFError:
            return
        conn.send(Unavailable(reason))
