"""Build and run a compiled lambda-cu program, and read what it printed.

`cpu`: g++ with the cpu backend's flags (backends/cpu.py: no FMA contraction, signed
overflow traps; -O0 for build speed) against the SIMT harness; `cuda`: nvcc for
sm_90a, run on the GPU. Executables are cached by content hash under
`$GPUSEM_CACHE_DIR/lambdacu`.

The program's output (emit.py): `print v..` lines, then `main v`, or `trap <why>`;
values as tokens: `i<int>`, `f<8 hex digits>` (float bits), `b0|b1`, `c<code>`,
`[<n> v..  ]` arrays, `( v.. )` tuples. `standalone` inlines every header, so that a
reproducer builds with nvcc (or g++) alone; the cached cpu build compiles only the
program, against a precompiled runtime header and a prebuilt runtime object
(prelude.py: half the CPU of a build).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpusem.calculus.lambdacu.values import (
    F32,
    I32,
    Arr,
    Bool,
    Char,
    Scalar,
    Value,
    one,
)
from gpusem.compiler.backends.cache import cache_dir
from gpusem.compiler.backends.cpu import CXX, cxxflags
from gpusem.compiler.backends.lifetime import run_killing_tree
from gpusem.compiler.backends.standalone_cpu import inline_headers
from gpusem.compiler.lambdacu_cuda import prelude

HERE = Path(__file__).resolve().parent
BACKENDS = HERE.parent / "backends"
NVCC = os.environ.get("GPUSEM_NVCC", "nvcc")
NVCC_FLAGS = ("-std=c++17", "-O3", "-arch=sm_90a", "-fmad=false", "-w")
NVCC_COMMAND = "nvcc -std=c++17 -O3 -arch=sm_90a -fmad=false -w -o repro repro.cu"
_INCLUDE_RT = re.compile(r'^#include "lambdacu_rt.cuh"$', re.M)


@dataclass(frozen=True)
class Ran:
    """What the compiled program did: `outcome` ok | trap | error (build, launch,
    crash, timeout), with its value and printed lines when ok."""

    outcome: str
    value: Value | None = None
    printed: tuple[tuple[Value, ...], ...] = ()  # each print's arguments
    message: str = ""


def standalone(source: str, expected: str | None = None) -> str:
    """The program with lambdacu_rt.cuh and the runtime headers inlined; with
    `expected` (`expected_output`: the interpreter's value of main), it compares its
    own and exits 1 on a mismatch (a reference that traps: any trap agrees; printed
    lines are shown, not compared)."""
    rt = (HERE / "lambdacu_rt.cuh").read_text()
    text = inline_headers(_INCLUDE_RT.sub(lambda _: rt, source, count=1))
    if expected is None:
        return text
    head = f"#define LC_EXPECT {json.dumps(expected)}\n"
    return head + text


def encode(value: Value) -> str:
    """A value in the program's output form (the inverse of `_values`)."""
    if isinstance(value, tuple):
        return " (" + "".join(encode(v) for v in value) + " )"
    if isinstance(value, Arr):
        return f" [{len(value)}" + "".join(encode(v) for v in value.items) + " ]"
    if isinstance(value, I32):
        return f" i{value.value}"
    if isinstance(value, F32):
        return f" f{int(np.float32(value.value).view(np.uint32)):08x}"
    if isinstance(value, Bool):
        return f" b{int(value.value)}"
    return f" c{value.value}"


def expected_output(value: Value | None) -> str:
    """LC_EXPECT: main's line, or `trap` (value None) for a reference that traps."""
    return "trap" if value is None else "main" + encode(value) + "\n"


def build(source: str, backend: str = "cpu", timeout: float = 300.0) -> Path | str:
    """The executable's path, or the compiler's error text. The cache key is the
    standalone text's (what the program means); the cpu build itself compiles only
    the program against the precompiled runtime (prelude.py), falling back to the
    standalone text where that cannot be made or fails."""
    text = standalone(source)
    flags = tuple(cxxflags()) if backend == "cpu" else NVCC_FLAGS
    tool = CXX if backend == "cpu" else NVCC
    key = hashlib.sha256("\0".join((tool, *flags, text)).encode()).hexdigest()[:24]
    where = cache_dir("lambdacu") / key
    exe = where / "prog"
    if exe.is_file():
        return exe
    where.mkdir(parents=True, exist_ok=True)
    if backend == "cpu":  # Note: -O0, half of -O1's build time, which dominates a
        # campaign; the emitted text has no undefined behaviour for -O1 to exploit.
        flags = cpu_build_flags()
        if _build_prebuilt(source, flags, exe, timeout):
            return exe
    return _build_one(text, tool, flags, exe, timeout,
                      "prog.cpp" if backend == "cpu" else "prog.cu")


def cpu_build_flags() -> tuple[str, ...]:
    """The cpu backend's g++ flags at -O0, for an executable (no -fPIC)."""
    return tuple("-O0" if f == "-O1" else f for f in cxxflags() if f != "-fPIC")


def _build_one(text: str, tool: str, flags: tuple[str, ...], exe: Path,
               timeout: float, name: str, extra: tuple[str, ...] = ()) -> Path | str:
    """One compiler call on `text` (the file `name`; `extra` arguments after it),
    the executable moved to `exe`."""
    # Every build in a folder of its own, its executable moved into place at once:
    # campaign jobs that draw the same program build it side by side (on the H200,
    # 12 jobs: one job's nvcc read another's half-written source, and ran or renamed
    # another's half-written executable)
    own = Path(tempfile.mkdtemp(prefix="build-", dir=exe.parent))
    src = own / name
    src.write_text(text)
    try:
        done = run_killing_tree([tool, *flags, "-o", str(own / "prog"), str(src),
                                 *extra], capture_output=True, text=True,
                                timeout=timeout)
        if done.returncode != 0:
            return "build error: " + done.stderr[-3000:]
        os.replace(own / "prog", exe)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"build error: {e}"
    finally:
        shutil.rmtree(own, ignore_errors=True)
    return exe


def _build_prebuilt(source: str, flags: tuple[str, ...], exe: Path,
                    timeout: float) -> bool:
    """The cpu build against prelude.py's precompiled header and runtime object;
    False where it did not succeed (the caller builds the standalone text, whose
    error, if any, is the one reported: the same as before the prelude)."""
    split = prelude.unit(source)
    if split is None:
        return False
    text, block = split
    home = cache_dir("lambdacu") / f"prelude_{prelude.folder_key(CXX, flags)}"
    for _ in range(2):  # again only where the cache's trim took a prelude file
        made = prelude.ensure(home, CXX, flags, block, timeout)
        if made is None:
            return False
        include, obj = made
        built = _build_one(text, CXX, (*flags, f"-I{include}"), exe, timeout,
                           "prog.cpp", (str(obj),))
        if not isinstance(built, str):
            return True
        if prelude.complete(home, block):
            return False
    return False


def run(source: str, backend: str = "cpu", seed: int = 0,
        timeout: float = 120.0) -> Ran:
    exe = build(source, backend)
    if isinstance(exe, str):
        return Ran("error", message=exe)
    try:
        done = subprocess.run([str(exe), str(seed)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return Ran("error", message=f"timeout: after {timeout:.0f} s")
    return parse_output(done.stdout, done.returncode)


def parse_output(text: str, rc: int = 0) -> Ran:
    printed: list[tuple[Value, ...]] = []
    for line in text.splitlines():
        if line.startswith("trap "):
            return Ran("trap", message=line[5:], printed=tuple(printed))
        if line.startswith("print"):
            printed.append(_values(line[5:].split()))
        elif line.startswith("main"):
            return Ran("ok", one(_values(line[4:].split())), tuple(printed))
        elif line.startswith("error"):
            return Ran("error", message=line)
    return Ran("error", message=f"crash: exit status {rc}, no result: "
               + text[-500:])


def _values(tokens: list[str]) -> tuple[Value, ...]:
    out: list[Value] = []
    pos = 0
    while pos < len(tokens):
        v, pos = _value(tokens, pos)
        out.append(v)
    return tuple(out)


def _value(tokens: list[str], pos: int) -> tuple[Value, int]:
    tok = tokens[pos]
    if tok == "(":
        items: list[Value] = []
        pos += 1
        while tokens[pos] != ")":
            v, pos = _value(tokens, pos)
            items.append(v)
        return tuple(items), pos + 1
    if tok.startswith("["):
        n, pos = int(tok[1:]), pos + 1
        scalars = [_scalar(t) for t in tokens[pos: pos + n]]
        return Arr(_elem(tokens[pos: pos + n]), tuple(scalars)), pos + n + 1
    return _scalar(tok), pos + 1


def _elem(tokens: list[str]) -> str:
    # Note: an empty array prints no element; the comparison reads its type from the
    # interpreter's value (fuzz/lambdacu/compile_check.agree).
    kinds = {"i": "int", "f": "float", "b": "bool", "c": "char"}
    return kinds[tokens[0][0]] if tokens else "?"


def _scalar(tok: str) -> Scalar:
    kind, body = tok[0], tok[1:]
    if kind == "i":
        return I32(int(body))
    if kind == "f":
        return F32(float(np.uint32(int(body, 16)).view(np.float32)))
    if kind == "b":
        return Bool(body == "1")
    return Char(int(body))
