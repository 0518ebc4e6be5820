"""What keeps a CUDA candidate: the interestingness tests and the guards.

A test is any callable `text -> bool` (True: still interesting). Built in:

- `ShellTest`: C-Reduce's convention, a shell command run in a scratch folder that
  holds only the candidate (under the original file's name); exit 0 = interesting;
- `KeepExit`: `nvcc` builds it as the bundle records (`NVCC_COMMAND`) and the binary
  exits with the given status (1: the wrong answer still shows). Needs a GPU;
  `sanitize=True` runs it under `compute-sanitizer` first and refuses a candidate
  with a memory error, the one kind of UB a reduction makes that the exit status
  cannot see (an out-of-bounds index after an array shrank);
- `KeepPtx`: `nvcc -ptx` output still matches a regular expression (no GPU);
- `KeepPtxCheck`: a static PTX checker (`PtxChecker`) still reports the same check;
- `KeepAttribution`: an attribution (`Attributor`) still names the same component.

A guard is a callable `text -> str | None` (None: fine; else why not), checked only
on candidates the test calls interesting (`cheap` ones before the test; `late` ones on
the text each pass's walk ends with, reducer.py says how). Built in:

- `BuildsAlone`: `nvcc -arch=sm_90a -c` builds it in an empty folder (no header of
  ours), with "variable used before its value is set" (EDG 549, device and host
  code) and g++'s `-Werror=uninitialized` (host code) as errors;
- `KeepsMain`: `main` is still there and launches a kernel (a `-c` build does not
  need a `main`, a repro does);
- `NoConstantPointers`: no pointer is made from an integer literal (other than 0);
- `KeepsMainCheck`: `main` also copies a result back and can return 1 under an `if`
  (or returns a comparison), so the repro still decides. Textual: it cannot see
  whether the comparison still reads the kernel's output.

Not guarded (say so in a report): a read of memory a kernel may not have written
(maybe-uninitialised), out-of-bounds indexing, null or dangling pointers, races, and
host-side UB of the kind `-fsanitize=undefined` finds at run time (running needs the
GPU), unless the test is `KeepExit(sanitize=True)` on a GPU (memcheck only).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gpusem.compiler.backends.lifetime import run_killing_tree
from gpusem.compiler.backends.standalone import NVCC_COMMAND

# When the reduction must stop (time.monotonic()); every subprocess a test or guard
# starts is cut off there, so a time budget holds within a second or two.
DEADLINE: ContextVar[float | None] = ContextVar("cuda_reduce_deadline", default=None)
NVCC = "nvcc"
BUILD = shlex.split(NVCC_COMMAND)[1:-3]  # -arch=sm_90a -std=c++17 --fmad=false -w

Interesting = Callable[[str], bool]
Guard = Callable[[str], "str | None"]


class PtxChecker(Protocol):
    """A static PTX checker (`ptx_checks_failing` below): the names of the checks a
    PTX text fails."""

    def __call__(self, ptx: str) -> Iterable[str]: ...


class Attributor(Protocol):
    """An attribution of a repro (none in this tree yet): the component a repro's
    wrong answer is blamed on (`ours`, `nvvm`, `ptxas`, `driver-jit`, ...)."""

    def __call__(self, repro: str) -> str: ...


@dataclass
class Ran:
    returncode: int  # -1: timed out or could not start
    output: str


def run_in(folder: str | Path, argv: list[str] | str, timeout_s: float,
           stdout_only: bool = False) -> Ran:
    """Run a command in `folder`, cut off at the reduction's deadline."""
    deadline = DEADLINE.get()
    if deadline is not None:
        timeout_s = min(timeout_s, max(0.5, deadline - time.monotonic()))
    try:
        proc = run_killing_tree(argv, shell=isinstance(argv, str), cwd=folder,
                                capture_output=True, text=True, errors="replace",
                                timeout=timeout_s)
    except (subprocess.TimeoutExpired, OSError) as e:
        return Ran(-1, str(e))
    return Ran(proc.returncode, proc.stdout if stdout_only else
               proc.stdout + proc.stderr)


def run_in_scratch(text: str, file_name: str, argv: list[str] | str,
                   timeout_s: float, stdout_only: bool = False) -> Ran:
    """Write the candidate alone into a fresh folder and run a command there."""
    with tempfile.TemporaryDirectory(prefix="gpusem-cu-") as tmp:
        (Path(tmp) / file_name).write_text(text)
        return run_in(tmp, argv, timeout_s, stdout_only)


# The last few binaries KeepExit built, by source text (None: it did not build). The
# same text is often asked more than once: `api.reduce_cuda` asks `report_line` of
# the input and then the test asks the same input; a build is ~3 s of CPU, a run of
# an agreeing repro well under one. The binary is still run afresh on every call.
_BUILT: OrderedDict[tuple[str, str], tempfile.TemporaryDirectory[str] | None] = \
    OrderedDict()
_BUILT_KEEP = 4


def _built(text: str, timeout_s: float) -> tuple[str | None, Ran]:
    """The folder holding `./repro` built from `text` (None: it did not build), and
    the build's own result (a cached one reads `cached`)."""
    argv = [NVCC, *BUILD, "-o", "repro", "repro.cu"]
    key = (shlex.join(argv), text)
    if key in _BUILT:
        _BUILT.move_to_end(key)
        folder = _BUILT[key]
        return (folder.name if folder else None), Ran(0 if folder else 1, "cached")
    tmp = tempfile.TemporaryDirectory(prefix="gpusem-cu-")
    (Path(tmp.name) / "repro.cu").write_text(text)
    ran = run_in(tmp.name, argv, timeout_s)
    if ran.returncode == -1:  # cut off, not refused: not remembered
        tmp.cleanup()
        return None, ran
    kept = tmp if ran.returncode == 0 else None
    if kept is None:
        tmp.cleanup()
    _BUILT[key] = kept
    while len(_BUILT) > _BUILT_KEEP:
        _, old = _BUILT.popitem(last=False)
        if old is not None:
            old.cleanup()
    return (kept.name if kept else None), ran


@dataclass
class ShellTest:
    command: str
    file_name: str = "repro.cu"
    timeout_s: float = 300.0

    def __call__(self, text: str) -> bool:
        return run_in_scratch(text, self.file_name, self.command,
                              self.timeout_s).returncode == 0


@dataclass
class KeepExit:
    """`line`: a line the program must still print (the original's report of the
    mismatch, `report_line`), so a candidate that exits 1 for another reason (it
    copies nothing back, it fails to launch) is not kept."""

    code: int = 1
    sanitize: bool = False
    compiles = True  # a candidate that does not build is not kept (reducer.py)
    line: str | None = None
    timeout_s: float = 120.0

    def run(self, text: str) -> Ran:
        """Build (or take the cached build of this text), run; exit 0 when the status
        was `code`, with the program's output."""
        folder, built = _built(text, self.timeout_s)
        if folder is None:
            return Ran(built.returncode or 1, "")
        steps = []
        if self.sanitize:
            steps.append("compute-sanitizer --tool memcheck --error-exitcode 99 "
                         "./repro > /dev/null; test $? -ne 99")
        steps.append(f"./repro > out.txt 2>/dev/null; test $? -eq {int(self.code)} "
                     "&& cat out.txt")
        # each run in a fresh folder, as when it built there: what a run leaves
        # (out.txt, files the program writes) is not the next run's
        with tempfile.TemporaryDirectory(prefix="gpusem-cu-") as tmp:
            for name in ("repro.cu", "repro"):
                shutil.copy2(Path(folder) / name, Path(tmp) / name)
            return run_in(tmp, " && ".join(steps), self.timeout_s, stdout_only=True)

    def __call__(self, text: str) -> bool:
        ran = self.run(text)
        return ran.returncode == 0 and (self.line is None
                                        or self.line in ran.output.splitlines())

    def report_line(self, text: str) -> str | None:
        """The last line the program prints when it exits with `code` (None: it does
        not, or prints nothing)."""
        ran = self.run(text)
        lines = [ln for ln in ran.output.splitlines() if ln.strip()]
        return lines[-1] if ran.returncode == 0 and lines else None


def ptx_of(text: str, timeout_s: float = 120.0) -> str | None:
    """`nvcc -ptx` of the candidate (None: it does not compile)."""
    ran = run_in_scratch(text, "repro.cu", f"{shlex.join([NVCC, *BUILD])} -ptx -o "
                         "repro.ptx repro.cu 2>/dev/null && cat repro.ptx", timeout_s)
    return ran.output if ran.returncode == 0 else None


@dataclass
class KeepPtx:
    pattern: str  # a regular expression (re.MULTILINE) the PTX must still match
    compiles = True  # no PTX without a compile (reducer.py)

    def __call__(self, text: str) -> bool:
        ptx = ptx_of(text)
        return ptx is not None and re.search(self.pattern, ptx, re.MULTILINE) \
            is not None


@dataclass
class KeepPtxCheck:
    checker: PtxChecker
    check: str
    compiles = True

    def __call__(self, text: str) -> bool:
        ptx = ptx_of(text)
        return ptx is not None and self.check in set(self.checker(ptx))


@dataclass
class KeepAttribution:
    attribute: Attributor
    verdict: str

    def __call__(self, text: str) -> bool:
        return self.attribute(text) == self.verdict


def ptx_checks_failing(ptx: str) -> Iterable[str]:
    """The names of the static checks (`compiler/backends/ptx_check.py`) a PTX module
    fails: the default `PTX_CHECKER`."""
    from gpusem.compiler.backends.ptx_check import check_ptx

    return sorted({f.check for f in check_ptx(ptx, "nvcc").findings})


# The hooks `--keep-ptx-check` and `--keep-attribution` use: the static PTX check of
# this tree, and an attribution of a `.cu` text (none yet: the attribution of
# fuzz/attribution.py needs a finding's launches, which a bare `.cu` does not give;
# the CLI says it is not available).
PTX_CHECKER: PtxChecker | None = ptx_checks_failing
ATTRIBUTOR: Attributor | None = None


@dataclass
class BuildsAlone:
    timeout_s: float = 120.0
    compiles = True
    # a full `nvcc -c` (host front end and compile, two device compilations, ptxas):
    # the reducer asks it of the text each walk ends with, not of every candidate
    # (reducer.py's docstring)
    late = True

    def __call__(self, text: str) -> str | None:
        argv = [NVCC, *BUILD, "--diag-error=549", "-Xcompiler", "-Werror=uninitialized",
                "-c", "-o", "repro.o", "repro.cu"]
        ran = run_in_scratch(text, "repro.cu", argv, self.timeout_s)
        if ran.returncode == 0:
            return None
        first = next((ln for ln in ran.output.splitlines() if "error" in ln), "")
        return f"does not build alone with nvcc -c: {first.strip()[:200]}"


_MAIN = re.compile(r"\bint\s+main\s*\(")


def _main_body(text: str) -> str | None:
    m = _MAIN.search(text)
    if m is None:
        return None
    start = text.find("{", m.end())
    depth = 0
    for k in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[start:k + 1]
    return None


# `return 1` (or exit(1)) under an `if` whose condition names something (not `if (0)`),
# or a returned comparison: main decides. An unconditional `return 1;` would make every
# candidate "still wrong" under KeepExit.
_DECIDES = re.compile(r"\bif\s*\((?=[^;{}()]*[A-Za-z_])(?:[^;{}]|\([^)]*\))*\)"
                      r"\s*(?:\{[^{}]*?)?"
                      r"(?:return\s+1\s*;|exit\s*\(\s*1\s*\))"
                      r"|\breturn\s+[^;]*(?:!=|==|<|>)[^;]*;", re.DOTALL)


@dataclass
class KeepsMain:
    """A repro needs a program: `main` stays and still launches a kernel."""

    cheap = True  # textual: the reducer asks it before the test

    def __call__(self, text: str) -> str | None:
        body = _main_body(text)
        if body is None:
            return "main is gone"
        return None if "<<<" in body else "main launches no kernel"


@dataclass
class KeepsMainCheck:
    """`main` still reads a result back and can return 1 on a mismatch."""

    cheap = True

    def __call__(self, text: str) -> str | None:
        body = _main_body(text)
        if body is None or "<<<" not in body:
            return "main launches no kernel"
        if "DeviceToHost" not in body and "cudaMemcpyDefault" not in body:
            return "main copies nothing back"
        if not _DECIDES.search(body):
            return "main can no longer return 1 on a mismatch"
        return None


# A pointer made from an integer literal: `reinterpret_cast<int*>(1)`, `(int*)4`.
_CONST_POINTER = re.compile(r"reinterpret_cast\s*<[^<>;]*\*\s*>\s*\(\s*[1-9]"
                            r"|\(\s*[A-Za-z_][\w\s]*\*\s*\)\s*\(?\s*[1-9]")


@dataclass
class NoConstantPointers:
    """No pointer made from an integer literal: simplify_expressions can turn an
    address computation into `reinterpret_cast<int*>(1)`, whose use is UB that a PTX
    test cannot see (the literal 0 of a null pointer is allowed: a launch argument of
    nullptr is a repro's own choice)."""

    cheap = True

    def __call__(self, text: str) -> str | None:
        m = _CONST_POINTER.search(text)
        return f"a pointer made from a constant: {m.group(0)}" if m else None


def have_nvcc() -> bool:
    return shutil.which(NVCC) is not None
