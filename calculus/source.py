"""Reading a program's source: the one reader every verb and every library entry uses,
so that a missing file, a directory or bytes that are not UTF-8 are one line with exit
2, never a traceback (DESIGN.md, "Exit codes")."""

from __future__ import annotations

from pathlib import Path

from gpusem.calculus.errors import BadInput


def read_source(path: str) -> str:
    """The text of a source file, or exit 2 with one line."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"no such file: {path}")
    try:
        return p.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise BadInput(f"cannot read {path}: {err}") from None


def language_of(path: str) -> str:
    """`bundl`, `gpuir`, `amir` or `appy`, by the file's suffix."""
    suffix = Path(path).suffix
    languages = {".bundl": "bundl", ".gpuir": "gpuir", ".amir": "amir", ".py": "appy"}
    if suffix not in languages:
        raise BadInput(f"unknown file kind: {path} (expected .bundl, .gpuir, .amir "
                       f"or .py)")
    return languages[suffix]
