"""Lark's LALR tables kept between processes: every `gpusem` command, campaign job and
worker that parses Bundl or GPU IR built them again (~0.2-0.4 s a grammar, most of a
small `gpusem check`); read back from a file they take ~0.03 s.

Where: `cache_root()/lark/`, the folder of compiler/backends/cache.py (it lives here,
below every stage, so that the parsers can use it; that module's LRU bound covers these
files too, and any of them may be deleted at any time). A file's name carries the digest
of everything the tables depend on (the grammar text, the options, Lark's and Python's
versions), so a changed grammar never reads another's tables. A file is written under a name of its own process and renamed
into place, so a reader sees a whole file or none. Where the folder cannot be written
the tables are built as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import lark


def cache_root() -> Path:
    """`$GPUSEM_CACHE_DIR`, else `$XDG_CACHE_HOME/gpusem`, else `~/.cache/gpusem` (not
    created; compiler/backends/cache.py documents the folder)."""
    if os.environ.get("GPUSEM_CACHE_DIR"):
        return Path(os.environ["GPUSEM_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"  # XDG: a
    return base / "gpusem"  # relative XDG_CACHE_HOME is invalid and ignored


# name -> (grammar, options) of each parser made here, for `built_lark`
_MADE: dict[str, tuple[str, dict[str, Any]]] = {}


def built_lark(name: str) -> lark.Lark:
    """Parser `name` built from its grammar text, as `cached_lark` made it first: a
    parser read back from tables has no `grammar` (Lark.load keeps the tables only),
    which hypothesis's `from_lark` reads (tests/robust/inputs.py)."""
    grammar, options = _MADE[name]
    return lark.Lark(grammar, **options)


def cached_lark(grammar: str, name: str, **options: Any) -> lark.Lark:
    """`lark.Lark(grammar, **options)` (LALR), read back (`Lark.load`) where a process
    built it before (`Lark.save`)."""
    _MADE[name] = (grammar, options)
    # a postlex object by its class (its repr has an address)
    named = {k: type(v).__qualname__ if k == "postlex" else v for k, v in options.items()}
    key = f"{grammar}\0{sorted(named.items())!r}\0{lark.__version__}\0{sys.version_info}"
    folder = cache_root() / "lark"
    final = folder / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.tables"
    # none yet, or a damaged file: built, and replaced, below
    with contextlib.suppress(Exception), open(final, "rb") as f:
        return lark.Lark.load(f)
    parser = lark.Lark(grammar, **options)
    mine = folder / f".{final.name}.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(mine, "wb") as f:
            parser.save(f)
        os.replace(mine, final)
    except OSError:  # not writable here: the next process builds it too
        with contextlib.suppress(OSError):
            mine.unlink(missing_ok=True)
    return parser
