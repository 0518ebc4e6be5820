"""Where gpusem keeps what it builds and may throw away (issue 32.12): the g++
libraries of the cpu backend (`cpu/`), nvcc's checked kernels (`nvcc/`), Exo-GPU's
JIT folder (`camspork-jit/`), the parsers' Lark tables (`lark/`,
calculus/grammar_cache.py) and hypothesis's own storage while gpusem runs it
(`hypothesis/`: its unicode tables, never a `.hypothesis/` in the working folder).

The folder: `$GPUSEM_CACHE_DIR`, else `$XDG_CACHE_HOME/gpusem`, else
`~/.cache/gpusem` (the XDG base-directory default). It is bounded: when a backend
opens it, files least recently used (modification time; a cache hit touches its
file) go until the folder holds at most `$GPUSEM_CACHE_MAX_MB` megabytes (default
2048), at most once every ten minutes over all processes (`TRIM_EVERY_S`, a stamp
file in the folder). Everything in it can be deleted at any time; it is rebuilt on demand.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

# defined below every stage, where the parsers keep Lark's tables (`lark/`)
from gpusem.calculus.grammar_cache import cache_root

DEFAULT_MAX_MB = 2048


def cache_dir(part: str) -> Path:
    """`cache_root()/part`, created, and the whole cache trimmed to its bound once
    per process."""
    path = cache_root() / part
    path.mkdir(parents=True, exist_ok=True)
    _trim_once(str(cache_root()), max_bytes())
    return path


def max_bytes() -> int:
    raw = os.environ.get("GPUSEM_CACHE_MAX_MB", "")
    try:
        mb = float(raw) if raw else DEFAULT_MAX_MB
    except ValueError:
        mb = DEFAULT_MAX_MB  # a cache bound is no reason to refuse to run
    return max(0, int(mb * 1024 * 1024))


def touch(path: Path) -> None:
    """Mark a cache entry as just used (LRU by modification time)."""
    try:
        os.utime(path)
    except OSError:
        pass  # another process trimmed it: it is rebuilt when next needed


def trim(root: Path, limit: int) -> int:
    """Delete the least recently used files under `root` until the rest hold at most
    `limit` bytes; the bytes freed. Files another process removes meanwhile are
    skipped (several campaigns share one cache)."""
    entries = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            try:
                st = p.stat()
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, p))
    total = sum(size for _, size, _ in entries)
    freed = 0
    for _, size, p in sorted(entries, key=lambda e: e[0]):
        if total - freed <= limit:
            break
        try:
            p.unlink()
            freed += size
        except OSError:
            continue
    return freed


# How often the cache is walked and trimmed, across all processes that open it: the
# walk stats every file (~16,000 files, ~0.5-1 s on a used cache), which every
# campaign worker, shrinker and `gpusem` command paid at start-up. Between two trims the
# folder may outgrow its bound by what ten minutes of builds add.
TRIM_EVERY_S = 600.0
TRIM_STAMP = ".last-trim"


@functools.cache
def _trim_once(root: str, limit: int) -> int:
    """Trim `root` to `limit` unless a process did within `TRIM_EVERY_S` (its stamp)."""
    stamp = Path(root) / TRIM_STAMP
    try:
        if time.time() - stamp.stat().st_mtime < TRIM_EVERY_S:
            return 0
    except OSError:
        pass  # no stamp yet (or trimmed away): trim now
    try:
        stamp.touch()  # first, so that processes starting meanwhile skip the walk
    except OSError:
        pass  # a read-only cache is still trimmed (and walked each time)
    return trim(Path(root), limit)
