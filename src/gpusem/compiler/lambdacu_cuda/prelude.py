"""The cached cpu build's fixed part, made once per runtime version (driver.build).

A lambda-cu program's cpu build used to be one g++ call on the standalone text: every
header inlined, and `lc_launch` calling `gs::launch` itself, so each build parsed the
same system and runtime headers and generated the whole SIMT scheduler again (for
vcode_scan_reduce.lcu about 0.7 of 1.9 CPU-s parsing, most of the rest the runtime's
code). Here, in one folder of the lambdacu cache keyed by the compiler, its flags and
the text of every runtime file:

- `lc_b<N>.h`: `#define LC_PREBUILT_RUNTIME`, `#define LC_BLOCK <N>`, then
  `#include "lambdacu_rt.cuh"`, with `lc_b<N>.h.gch` precompiled with the build's own
  flags (g++ uses a PCH only under the flags it was made with, and only as the unit's
  first include: `unit` puts it there in place of the program's own two lines);
- `gs_rt.o`: cpu_source.RUNTIME_UNIT (`gs_rt_launch`, simt_sched.h says why) compiled
  with the same flags, linked into every executable. With LC_PREBUILT_RUNTIME
  lambdacu_rt.cuh's `lc_launch` calls it instead of `gs::launch`.

The standalone reproducer (driver.standalone, `repro.cu`) is unchanged: it defines
neither macro and inlines everything. Any file here may be trimmed from the cache by
another process at any time: `ensure` re-checks each before a build and makes what
is missing (each file written whole, then renamed into place).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.cache import touch
from gpusem.compiler.backends.cpu import HARNESS_FILES, write_atomic
from gpusem.compiler.backends.lifetime import run_killing_tree

HERE = Path(__file__).resolve().parent
BACKENDS = HERE.parent / "backends"
RT_HEADER = "lambdacu_rt.cuh"
# emit.py's first lines: `#define LC_BLOCK <N>` right before the runtime include
_HEAD = re.compile(r'^#define LC_BLOCK (\d+)\n#include "lambdacu_rt.cuh"\n',
                   re.MULTILINE)


@functools.cache
def _sources() -> dict[str, str]:
    """Every file the folder copies: the runtime headers by name. Read once a process:
    each build asks for them two or three times (`folder_key`, `_make`, `complete`),
    and the package's files do not change under a running process."""
    out = {name: (BACKENDS / name).read_text() for name in HARNESS_FILES}
    out[RT_HEADER] = (HERE / RT_HEADER).read_text()
    return out


@functools.cache  # every build asks; the inputs are fixed for a process
def folder_key(tool: str, flags: tuple[str, ...]) -> str:
    h = hashlib.sha256("\0".join((tool, *flags, cpu_source.RUNTIME_UNIT)).encode())
    for name, text in sorted(_sources().items()):
        h.update(f"\0{name}\0{text}".encode())
    return h.hexdigest()[:16]


def unit(source: str) -> tuple[str, int] | None:
    """The program with its LC_BLOCK define and runtime include replaced by the
    precompiled header's include, and its block size; None where the program does not
    start the way emit.py writes it (the caller builds the standalone text)."""
    m = _HEAD.search(source)
    before = source[: m.start()].splitlines() if m else []
    if m is None or not all(line.startswith("//") for line in before if line):
        return None  # only comments may precede a precompiled header's include
    block = int(m.group(1))
    return source[: m.start()] + f'#include "lc_b{block}.h"\n' + source[m.end():], block


def ensure(home: Path, tool: str, flags: tuple[str, ...], block: int,
           timeout: float) -> tuple[Path, Path] | None:
    """(the include folder, the runtime object), each file present now; None where
    g++ cannot make them (the caller then builds the standalone text)."""
    home.mkdir(parents=True, exist_ok=True)
    if not complete(home, block):
        # One process makes what is missing while the others wait (a campaign's jobs
        # start together: each would make its own PCH, ~3 CPU-s, for nothing); the
        # lock only saves work, the renames below keep it correct without one.
        with open(home / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return _make(home, tool, flags, block, timeout)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    return _make(home, tool, flags, block, timeout)


def _make(home: Path, tool: str, flags: tuple[str, ...], block: int,
          timeout: float) -> tuple[Path, Path] | None:
    for name, text in _sources().items():
        if not (home / name).is_file():
            write_atomic(home / name, text)
    header = home / f"lc_b{block}.h"
    if not header.is_file():
        write_atomic(header, "#define LC_PREBUILT_RUNTIME 1\n"
                      f"#define LC_BLOCK {block}\n#include \"{RT_HEADER}\"\n")
    gch = home / f"lc_b{block}.h.gch"
    if not gch.is_file() and not _compile(
            [tool, *flags, "-x", "c++-header", str(header)], gch, timeout):
        return None
    obj = home / "gs_rt.o"
    if not obj.is_file():
        with tempfile.TemporaryDirectory(dir=home) as tmp:
            src = Path(tmp) / "gs_rt.cpp"
            src.write_text(cpu_source.RUNTIME_UNIT)
            if not _compile([tool, *flags, f"-I{home}", "-c", str(src)], obj, timeout):
                return None
    for path in (gch, obj):
        touch(path)  # in use: the cache's LRU trim keeps them longest
    return home, obj


def _compile(cmd: list[str], final: Path, timeout: float) -> bool:
    """Run `cmd -o <temporary>` and rename the result to `final` (atomic: builds side
    by side share the folder and may read it meanwhile)."""
    fd, tmp = tempfile.mkstemp(dir=final.parent, suffix=final.suffix)
    os.close(fd)
    try:
        done = run_killing_tree([*cmd, "-o", tmp], capture_output=True, timeout=timeout)
        if done.returncode != 0:
            return False
        os.replace(tmp, final)
        return True
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def complete(home: Path, block: int) -> bool:
    """Whether every file a build reads is still there (a failed build with one
    missing was the cache's trim, not the program)."""
    names = [*_sources(), f"lc_b{block}.h", f"lc_b{block}.h.gch", "gs_rt.o"]
    return all((home / n).is_file() for n in names)

