"""Reading a program's source: the one reader every verb and every library entry uses,
so that a missing file, a directory, a device (/dev/zero, /dev/urandom), a FIFO, a file
past the `source_bytes` budget or bytes that are not UTF-8 are one line with exit 2,
never a traceback or a hang (DESIGN.md, "Exit codes"; issue 15).

Nothing but a regular file is read: the file is opened without blocking (opening a FIFO
for reading would wait for a writer forever) and checked with fstat on the open
descriptor (no window between a check and the open), and at most the budget plus one
byte is read (a device never ends).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from gpusem.calculus import budgets
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import Span


def read_source(path: str) -> str:
    """The text of a source file, or exit 2 with one line."""
    return decode(read_bytes(path), path)


def read_bytes(path: str) -> bytes:
    """At most the `source_bytes` budget of a regular file's bytes."""
    limit = budgets.current().source_bytes
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise BadInput(f"no such file: {path}") from None
    except IsADirectoryError:
        raise BadInput(f"not a regular file: {path} is a directory") from None
    except OSError as err:
        raise BadInput(f"cannot read {path}: {_reason(err)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise BadInput(f"not a regular file: {path} is {_kind(mode)}")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise BadInput(f"cannot read {path}: {_reason(err)}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise BadInput(f"too large: {path} has more than {limit} bytes, the "
                       f"source_bytes budget ({budgets.FLAGS['source_bytes']})")
    return b"".join(chunks)


def decode(data: bytes, path: str) -> str:
    """UTF-8 text; a byte that is not UTF-8 is reported where it stands."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise BadInput(f"not UTF-8: byte 0x{data[err.start]:02x} cannot be decoded",
                       span=Span(path, line, column, line, column)) from None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _reason(err: OSError) -> str:
    return err.strerror or errno.errorcode.get(err.errno or 0, "error")


def language_of(path: str) -> str:
    """`bundl`, `gpuir`, `amir` or `appy`, by the file's suffix."""
    suffix = Path(path).suffix
    languages = {".bundl": "bundl", ".gpuir": "gpuir", ".amir": "amir", ".py": "appy"}
    if suffix not in languages:
        raise BadInput(f"unknown file kind: {path} (expected .bundl, .gpuir, .amir "
                       f"or .py)")
    return languages[suffix]
