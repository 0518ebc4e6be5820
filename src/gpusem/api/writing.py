"""The one writer of the files a user names (-o, --trace, a saved schedule): a path
that cannot be written is one line and exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from gpusem.api.results import CompileReport, out
from gpusem.calculus.errors import BadInput


def write_output(path: str, text: str) -> None:
    try:
        Path(path).write_text(text)
    except OSError as err:
        raise BadInput(f"cannot write {path}: {err.strerror or err}") from None


def open_output(path: str) -> TextIO:
    """A file the user named, open for writing (the caller closes it)."""
    try:
        return open(path, "w")
    except OSError as err:
        raise BadInput(f"cannot write {path}: {err.strerror or err}") from None


def reproducer(file: str, language: str, text: str, output: str | None,
               nvcc_command: str) -> CompileReport:
    """A standalone reproducer to `output` (saying how to build it), else shown."""
    if output:
        write_output(output, text)
        shown = out(f"wrote {output}: build with "
                    f"{nvcc_command.replace('repro.cu', output)}")
    else:
        shown = out(text, nl=False)
    return CompileReport(file, language, 0, (shown,), source=text, written=output)


__all__ = ["open_output", "reproducer", "write_output"]
