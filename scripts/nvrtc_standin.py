"""The cuda backend with no GPU, for profiles (issue 31.3): its worker's `Device`
with NVRTC driven here through ctypes and nothing launched.

`standin_device(cuda_worker)` subclasses the profiled tree's own `Device`, so its
`build` (a batch in one NVRTC call, a failing batch split to blame kernels) and its
unit (`cpu_source.namespaced_unit(for_cpu=False)`, the tree's `NVRTC_OPTIONS`, its
`-I` folder and so its `gpusem_rt.cuh`) are the tree's; only the NVRTC call is
replaced: `run_nvrtc` where the tree has it (its `compile` then picks the options,
`BUILD_SPEEDUPS` and the plain fallback included), else (a tree before it) `compile`
with the tree's `NVRTC_OPTIONS`. The call is the one CuPy's NVRTC binding makes
(create, a name expression per kernel, compile for sm_90a, lowered names, the cubin),
through the newest libnvrtc found beside the interpreter (the `nvrtc` extra's wheel),
so that two trees are measured with one NVRTC. Each NVRTC call's kernels, unit size,
options beyond `NVRTC_OPTIONS`, wall and CPU ms are kept in `device.calls`; a launch
answers "unsupported" and runs nothing.

This file is a script's helper, not part of gpusem: it imports nothing from it, so a
tree that predates `compiler/backends/nvrtc_lib.py` (884a54f) is profiled alike.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import sys
import time
from functools import cache
from typing import Any

NO_LAUNCH = "unsupported: no GPU launch (nvrtc stand-in)"


@cache
def libnvrtc() -> ctypes.CDLL:
    """The newest libnvrtc.so.N under a `nvidia/*/lib` folder of sys.path."""
    found = []
    for entry in sys.path:
        for path in glob.glob(os.path.join(entry, "nvidia", "*", "lib", "libnvrtc.so.*")):
            if m := re.search(r"libnvrtc\.so\.(\d+)(?:\.(\d+))?$", path):
                found.append(((int(m.group(1)), int(m.group(2) or 0)), path))
    if not found:
        raise OSError("no libnvrtc wheel on sys.path (pip install the nvrtc extra)")
    lib = ctypes.CDLL(max(found)[1], mode=ctypes.RTLD_LOCAL)
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def version() -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    libnvrtc().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


def _ok(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what}: {libnvrtc().nvrtcGetErrorString(status).decode()}")


def build(unit: str, names: list[str], options: list[str]
          ) -> tuple[bytes | None, list[str], str]:
    """(cubin or None, each name expression's lowered name, log)."""
    from gpusem.compiler.backends.cuda_worker import uncached

    lib, prog = libnvrtc(), ctypes.c_void_p()
    major, minor = (int(x) for x in version().split("."))
    options = uncached(options, (major, minor))  # as the worker calls NVRTC
    _ok(lib.nvrtcCreateProgram(ctypes.byref(prog), unit.encode(), b"batch.cu", 0,
                               None, None), "create")
    try:
        for name in names:
            _ok(lib.nvrtcAddNameExpression(prog, name.encode()), "name")
        argv = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
        status = lib.nvrtcCompileProgram(prog, len(options), argv)
        size = ctypes.c_size_t()
        _ok(lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), "log size")
        buf = ctypes.create_string_buffer(max(1, size.value))
        _ok(lib.nvrtcGetProgramLog(prog, buf), "log")
        log = buf.value.decode(errors="replace")
        if status != 0:
            return None, [], log
        lowered = []
        for name in names:
            out = ctypes.c_char_p()
            _ok(lib.nvrtcGetLoweredName(prog, name.encode(), ctypes.byref(out)), "lower")
            lowered.append((out.value or b"").decode())
        _ok(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "cubin size")
        cubin = ctypes.create_string_buffer(max(1, size.value))
        _ok(lib.nvrtcGetCUBIN(prog, cubin), "cubin")
        return cubin.raw[:size.value], lowered, log
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def standin_device(cuda_worker: Any, cpu_source: Any) -> Any:
    """An instance of a subclass of the tree's `cuda_worker.Device` (see above)."""

    class NvrtcDevice(cuda_worker.Device):  # type: ignore[name-defined, misc]
        def __init__(self) -> None:  # no CuPy, no context, no scribbler
            self.modules: dict = {}
            self.functions: dict = {}
            self.calls: list[dict] = []

        def timed(self, unit: str, names: list[str], options: list[str]
                  ) -> tuple[bytes | None, list[str], str]:
            w0, c0 = time.perf_counter(), time.thread_time()
            binary, lowered, log = build(unit, names, options)
            self.calls.append({"kernels": len(names), "unit_bytes": len(unit),
                               "wall_ms": 1e3 * (time.perf_counter() - w0),
                               "cpu_ms": 1e3 * (time.thread_time() - c0),
                               "ok": binary is not None,
                               "extra": options[len(cuda_worker.NVRTC_OPTIONS):]})
            return binary, lowered, log

        if hasattr(cuda_worker.Device, "run_nvrtc"):
            def run_nvrtc(self, unit: str, exprs: dict[int, str], options: list[str]
                          ) -> tuple[bytes | None, dict[int, str], str]:
                binary, lowered, log = self.timed(unit, list(exprs.values()),
                                                  list(options))
                return binary, dict(zip(exprs, lowered)), log
        else:  # a tree from before run_nvrtc: its compile had one NVRTC call
            def compile(self, items: list[tuple[int, str, str]]
                        ) -> tuple[bytes | None, dict, str]:
                unit = cpu_source.namespaced_unit(
                    [(i, f"k{i}_src", src, "") for i, _, src in items], for_cpu=False)
                names = [f"gs_k{i}::{name}" for i, name, _ in items]
                binary, lowered, log = self.timed(
                    unit, names, list(cuda_worker.NVRTC_OPTIONS))
                return binary, {i: low for (i, _, _), low in zip(items, lowered)}, log

        def load(self, key: str, binary: bytes, lowered: dict[int, str]) -> None:
            self.modules[key] = (binary, lowered)

        def launch(self, *payload: Any) -> tuple[str, str, dict, float]:
            return "unsupported", NO_LAUNCH, {}, 0.0

    return NvrtcDevice()


def header_only_ms(device: Any, cpu_source: Any, repeat: int = 5) -> dict[str, float]:
    """NVRTC on a unit of one empty kernel (the runtime header and the call's fixed
    cost), the median of `repeat` calls' wall and CPU ms; not kept in `device.calls`."""
    calls = len(device.calls)
    for _ in range(repeat):
        device.compile([(0, "gs_empty", 'extern "C" __global__ void gs_empty() {}\n')])
    timed, device.calls[calls:] = device.calls[calls:], []
    mid = sorted(timed, key=lambda c: c["cpu_ms"])[len(timed) // 2]
    return {"wall_ms": round(mid["wall_ms"], 2), "cpu_ms": round(mid["cpu_ms"], 2)}
