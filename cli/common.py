"""Helpers shared by the verbs: reading source files, -D definitions, JSON output."""

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
    """`bundl`, `gpuir` or `appy`, by the file's suffix."""
    suffix = Path(path).suffix
    languages = {".bundl": "bundl", ".gpuir": "gpuir", ".py": "appy"}
    if suffix not in languages:
        raise BadInput(f"unknown file kind: {path} (expected .bundl, .gpuir or .py)")
    return languages[suffix]


def parse_defines(defines: tuple[str, ...]) -> dict[str, int]:
    """`-D N=256 -D M=64` -> {"N": 256, "M": 64}."""
    out: dict[str, int] = {}
    for item in defines:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise BadInput(f"bad definition: -D {item} (expected NAME=INT)")
        try:
            out[name] = int(value)
        except ValueError:
            raise BadInput(f"bad definition: -D {item} (value is not an integer)") from None
    return out
