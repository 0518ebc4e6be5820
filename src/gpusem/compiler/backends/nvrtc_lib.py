"""NVRTC without a GPU: every installed libnvrtc, through ctypes: CUDA C++ -> PTX.

NVRTC needs no driver and no device to emit PTX, so a machine with no GPU (CI, the
development machines) can still put every kernel we emit through NVIDIA's NVVM, once
per installed version (issue 23, item 3: the static PTX oracle, `ptx_check.py`).

Where libraries are looked for (`search_dirs`): the folders of env GPUSEM_NVRTC_PATH
(os.pathsep-separated) and nothing else when it is set; otherwise the `lib/` folders of
the pip wheels (`nvidia-cuda-nvrtc` 13.x puts libnvrtc.so.13 in `nvidia/cu13/lib`,
`nvidia-cuda-nvrtc-cu12` and `-cu11` both use `nvidia/cuda_nvrtc/lib`), $CUDA_HOME, the
CUDA beside `nvcc`, and /usr/local/cuda*. One library per NVRTC version is kept (the
first found), newest first.

Note: the three wheels' libraries share one process (each is dlopen-ed RTLD_LOCAL and
loads its own `libnvrtc-builtins.so.<major.minor>`);
tests/compiler/test_ptx_check.py::test_versions_share_one_process checks that each
version's PTX in one shared process equals its PTX in a fresh process of its own.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gpusem.compiler.backends.cuda_worker import NVRTC_OPTIONS, uncached

ENV_PATH = "GPUSEM_NVRTC_PATH"
# The cuda backend's options less its architecture, which `arch_for` picks per version.
OPTIONS = tuple(o for o in NVRTC_OPTIONS if not o.startswith("--gpu-architecture"))
_LIB_NAME = re.compile(r"^libnvrtc\.so\.\d+(\.\d+)*$")  # not -builtins, not .alt


@dataclass(frozen=True, slots=True)
class Nvrtc:
    """One installed NVRTC: its library file, version and the PTX target we use."""

    path: str
    version: tuple[int, int]
    arch: str  # e.g. compute_90a; compute_90 where the version has no sm_90a

    @property
    def label(self) -> str:
        return f"nvrtc {self.version[0]}.{self.version[1]}"


@dataclass(frozen=True, slots=True)
class Ptx:
    """NVRTC's answer for one source: the PTX text, or None and the log."""

    nvrtc: Nvrtc
    ptx: str | None
    log: str


class NvrtcError(RuntimeError):
    """A call into libnvrtc failed for a reason other than the source's."""


def search_dirs() -> list[Path]:
    """Where libnvrtc is looked for, in order (see the module docstring)."""
    if ENV_PATH in os.environ:
        return [Path(p) for p in os.environ[ENV_PATH].split(os.pathsep) if p]
    dirs: list[Path] = []
    for entry in sys.path:
        dirs += [Path(p) for p in sorted(glob.glob(os.path.join(entry, "nvidia", "*",
                                                                "lib")))]
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", "")]
    if nvcc := shutil.which(os.environ.get("GPUSEM_NVCC", "nvcc")):
        roots.append(str(Path(nvcc).resolve().parent.parent))
    roots += sorted(glob.glob("/usr/local/cuda*"))
    for root in filter(None, roots):
        dirs += [Path(root) / "lib64", Path(root) / "lib"]
    return dirs


def find_nvrtc() -> tuple[Nvrtc, ...]:
    """Every installed NVRTC that loads, one per version, newest first."""
    return _found(tuple(str(d) for d in search_dirs()))


@cache
def _found(dirs: tuple[str, ...]) -> tuple[Nvrtc, ...]:
    seen: dict[tuple[int, int], Nvrtc] = {}
    files: list[str] = []
    for d in dirs:
        if os.path.isdir(d):
            files += sorted(str(Path(d) / f) for f in os.listdir(d)
                            if _LIB_NAME.match(f))
    for path in dict.fromkeys(os.path.realpath(f) for f in files):
        try:
            lib = _load(path)
        except OSError:
            continue  # not loadable here (another architecture, a broken file)
        version = _version(lib)
        seen.setdefault(version, Nvrtc(path, version, arch_for(lib, version)))
    return tuple(sorted(seen.values(), key=lambda n: n.version, reverse=True))


@cache
def _load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def _version(lib: ctypes.CDLL) -> tuple[int, int]:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _call(lib, "nvrtcVersion", ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def arch_for(lib: ctypes.CDLL, version: tuple[int, int]) -> str:
    """compute_90a where the version has it (CUDA 12.0 on: the cuda backend's
    sm_90a), else compute_90, else the newest architecture the version lists."""
    archs = _supported_archs(lib)
    if 90 in archs:
        return "compute_90a" if version >= (12, 0) else "compute_90"
    return f"compute_{max(archs)}"


def _supported_archs(lib: ctypes.CDLL) -> list[int]:
    count = ctypes.c_int()
    _call(lib, "nvrtcGetNumSupportedArchs", ctypes.byref(count))
    archs = (ctypes.c_int * count.value)()
    _call(lib, "nvrtcGetSupportedArchs", archs)
    return list(archs)


def _call(lib: ctypes.CDLL, name: str, *args: object) -> int:
    status = getattr(lib, name)(*args)
    if status != 0:
        raise NvrtcError(f"{name}: {lib.nvrtcGetErrorString(status).decode()}")
    return 0


def compile_ptx(nvrtc: Nvrtc, source: str, file: str = "kernel.cu",
                extra: tuple[str, ...] = ()) -> Ptx:
    """`source` -> PTX with `nvrtc`, the cuda backend's options (`--fmad=false`,
    c++17, the runtime header's folder) for `nvrtc.arch`. A source NVRTC rejects is a
    `Ptx` with ptx None and the log."""
    with _thread_locale_kept():
        return _compile(nvrtc, source, file, extra)


@contextmanager
def _thread_locale_kept() -> Iterator[None]:
    """Give the calling thread its C locale back after NVRTC: NVRTC 11.8 leaves the
    thread switched to the "C" locale (`uselocale`), after which Python's preferred
    encoding is ASCII and `Path.read_text()` of a UTF-8 file fails in the same
    process (seen in the test suite)."""
    libc = _libc()
    saved = libc.uselocale(None) if libc is not None else None
    try:
        yield
    finally:
        if libc is not None and saved:
            libc.uselocale(ctypes.c_void_p(saved))


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None)
        libc.uselocale.restype = ctypes.c_void_p
        libc.uselocale.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    return libc


def _compile(nvrtc: Nvrtc, source: str, file: str, extra: tuple[str, ...]) -> Ptx:
    lib = _load(nvrtc.path)
    prog = ctypes.c_void_p()
    _call(lib, "nvrtcCreateProgram", ctypes.byref(prog), source.encode(),
          file.encode(), 0, None, None)
    try:
        opts = uncached([f"--gpu-architecture={nvrtc.arch}", *OPTIONS, *extra],
                        nvrtc.version)
        argv = (ctypes.c_char_p * len(opts))(*(o.encode() for o in opts))
        status = lib.nvrtcCompileProgram(prog, len(opts), argv)
        log = _text(lib, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog")
        if status != 0:
            return Ptx(nvrtc, None, log or lib.nvrtcGetErrorString(status).decode())
        return Ptx(nvrtc, _text(lib, prog, "nvrtcGetPTXSize", "nvrtcGetPTX"), log)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def compile_cubin(nvrtc: Nvrtc, source: str, file: str = "kernel.cu"
                  ) -> tuple[bytes | None, str]:
    """`source` -> (a cubin for sm_90a, as the cuda backend's worker builds it, or None;
    NVRTC's log), with no GPU: what scripts/toolchain_cost.py times and compares."""
    sm = nvrtc.arch.replace("compute_", "sm_")
    binary, _, log = compile_unit(nvrtc, source, {}, [f"--gpu-architecture={sm}",
                                                      *OPTIONS], file)
    return binary, log


def compile_unit(nvrtc: Nvrtc, unit: str, exprs: dict[int, str], options: list[str],
                 file: str = "batch.cu", nvrtc_cache: bool = False
                 ) -> tuple[bytes | None, dict[int, str], str]:
    """The cuda worker's NVRTC call (`cuda_worker.Device.run_nvrtc`) through ctypes:
    `unit` with every name expression of `exprs` under exactly `options` (the
    architecture included) -> (the cubin, {index: lowered name}, the log), or (None,
    {}, the log). What the worker's build path is tested and timed with, no GPU.
    NVRTC's cache is off, as in the worker (`cuda_worker.uncached`), unless
    `nvrtc_cache` (scripts/nvrtc_cache_probe.py)."""
    if not nvrtc_cache:
        options = uncached(options, nvrtc.version)
    with _thread_locale_kept():
        lib = _load(nvrtc.path)
        prog = ctypes.c_void_p()
        _call(lib, "nvrtcCreateProgram", ctypes.byref(prog), unit.encode(),
              file.encode(), 0, None, None)
        try:
            for expr in exprs.values():
                _call(lib, "nvrtcAddNameExpression", prog, expr.encode())
            argv = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
            status = lib.nvrtcCompileProgram(prog, len(options), argv)
            log = _text(lib, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog")
            if status != 0:
                return None, {}, log or lib.nvrtcGetErrorString(status).decode()
            lowered = {}
            for i, expr in exprs.items():
                name = ctypes.c_char_p()
                _call(lib, "nvrtcGetLoweredName", prog, expr.encode(),
                      ctypes.byref(name))
                lowered[i] = (name.value or b"").decode()
            size = ctypes.c_size_t()
            _call(lib, "nvrtcGetCUBINSize", prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(max(1, size.value))
            _call(lib, "nvrtcGetCUBIN", prog, buf)
            return buf.raw[:size.value], lowered, log
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _text(lib: ctypes.CDLL, prog: ctypes.c_void_p, size_fn: str, get_fn: str) -> str:
    size = ctypes.c_size_t()
    _call(lib, size_fn, prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(max(1, size.value))
    _call(lib, get_fn, prog, buf)
    return buf.value.decode(errors="replace")
