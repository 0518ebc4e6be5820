"""Fake NVRTC: checks the options, compiles the unit for sm_90a with a real NVRTC (the
`nvrtc` extra's libnvrtc through gpusem's nvrtc_lib, under the options the worker
gives) or, where none is installed, with real nvcc; the "cubin" it hands back is the
kernels' sources (`getCUBIN`), which the fake driver runs on the cpu harness."""

import functools
import pickle
import re
import subprocess
import tempfile
from pathlib import Path

from gpusem.compiler.backends import nvrtc_lib

_PROGRAMS = {}
REQUIRED = ("--gpu-architecture=sm_90a", "--fmad=false", "--ftz=false", "-std=c++17")


class NVRTCError(Exception):
    pass


@functools.cache
def _nvrtc():
    """The newest installed NVRTC that builds for sm_90a, or None (then nvcc -c)."""
    return next((n for n in nvrtc_lib.find_nvrtc() if n.arch == "compute_90a"), None)


def getVersion():
    # Without a real NVRTC: 12.9, the first with a cache, so the worker's builds here
    # take --no-cache (cuda_worker.uncached) as they do on a current GPU machine.
    return _nvrtc().version if _nvrtc() else (12, 9)


def createProgram(src, name, headers, include_names):
    handle = len(_PROGRAMS) + 1
    _PROGRAMS[handle] = {"src": src, "names": [], "log": ""}
    return handle


def addNameExpression(prog, expr):
    _PROGRAMS[prog]["names"].append(expr)


def compileProgram(prog, options):
    p = _PROGRAMS[prog]
    missing = [o for o in REQUIRED if o not in options]
    if missing:
        p["log"] = f"fake nvrtc: missing options {missing}"
        raise NVRTCError(p["log"])
    if _nvrtc() is not None:
        # A real NVRTC is the check NVRTC makes, and costs ~0.2 s a build where
        # nvcc -c (front end, ptxas and the host side) took ~5 s: the worker builds
        # its shared-memory scribbler at every start, so every test paid that.
        binary, _, log = nvrtc_lib.compile_unit(_nvrtc(), p["src"], {}, list(options))
        if binary is None:
            p["log"] = log
            raise NVRTCError("compilation failed")
        return
    includes = [o for o in options if o.startswith("-I")]
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / "batch.cu"
        cu.write_text(p["src"])
        cmd = [
            "nvcc",
            "-gencode",
            "arch=compute_90a,code=sm_90a",
            "-std=c++17",
            "--fmad=false",
            "-w",
            *includes,
            "-c",
            str(cu),
            "-o",
            str(cu) + ".o",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, check=False)
    if proc.returncode != 0:
        p["log"] = proc.stdout + proc.stderr
        raise NVRTCError("compilation failed")


def getProgramLog(prog):
    return _PROGRAMS[prog]["log"]


def getLoweredName(prog, expr):
    return expr


def getCUBIN(prog):
    p = _PROGRAMS[prog]
    kernels = {}
    for expr in p["names"]:
        index, name = re.fullmatch(r"gs_k(\d+)::(\w+)", expr).groups()
        src = p["src"]
        start = src.index(f'#line 1 "k{index}_src.cu"\n')
        start = src.index("\n", start) + 1
        end = src.find("\nnamespace gs_k", start)
        body = src[start : end if end >= 0 else len(src)]
        body = re.sub(r"\n}\n(#undef \w+\n)*\s*$", "\n", body + "\n")  # namespace end
        kernels[expr] = (name, '#include "gpusem_rt.cuh"\n' + body)
    return pickle.dumps(kernels)


def destroyProgram(prog):
    _PROGRAMS.pop(prog, None)
