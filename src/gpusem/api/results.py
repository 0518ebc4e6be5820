"""What the file verbs of `gpusem.api` return: frozen, typed reports.

Every report says what a verb shows and how it ends, so that the command line only
prints it (`output`, in order: stdout and stderr pieces) and exits with `exit_code`
(0 clean, 1 a finding or a rejection, 2 bad input or an exhausted budget, 3 an internal
error: README's table). The typed fields beside them (`ok`, `outcome`, `agree`, ...)
are what a library user reads instead of the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpusem.calculus.errors import GpusemError

# A JSON document as the verbs' `--json` print it.
JsonDoc = Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a verb's output: text (with its own line ends) on stdout or
    stderr."""

    text: str
    err: bool = False


def out(text: str, nl: bool = True) -> Chunk:
    return Chunk(text + ("\n" if nl else ""))


def err(text: str) -> Chunk:
    return Chunk(text + "\n", err=True)


@dataclass(frozen=True)
class Report:
    """A verb's answer on one file: what it shows and its exit code."""

    file: str
    language: str
    exit_code: int
    output: tuple[Chunk, ...]

    @property
    def stdout(self) -> str:
        return "".join(c.text for c in self.output if not c.err)

    @property
    def stderr(self) -> str:
        return "".join(c.text for c in self.output if c.err)


@dataclass(frozen=True)
class CheckReport(Report):
    """`check`: well-typed / legal (`ok`), else every error (each naming its rule)."""

    ok: bool = True
    errors: tuple[GpusemError, ...] = ()
    doc: JsonDoc = field(default_factory=dict)


@dataclass(frozen=True)
class RunReport(Report):
    """`run`: how the run ended (terminated | stuck | deadlock | budget | trap) and
    the final memory (global arrays of a Bundl program, every array of an APPy one)."""

    outcome: str = "terminated"
    memory: Mapping[str, object] = field(default_factory=dict)
    steps: int = 0


@dataclass(frozen=True, slots=True)
class KernelInfo:
    name: str
    grid: str
    block: str
    smem_bytes: int


@dataclass(frozen=True)
class CompileReport(Report):
    """`compile`: the CUDA C++ (or a standalone reproducer), its kernels, and the file
    it was written to (None: shown on stdout)."""

    source: str = ""
    kernels: tuple[KernelInfo, ...] = ()
    written: str | None = None


@dataclass(frozen=True)
class ExecReport(Report):
    """`exec`: the compiled program run on a backend against the reference: `agree`,
    else the verdict's kind (disagree, kernel-failed, not-compared, ...)."""

    agree: bool = False
    kind: str = ""
    doc: JsonDoc = field(default_factory=dict)


@dataclass(frozen=True)
class SyncReport(Report):
    """`synccheck`: the AMIR machine's verdict (`accepted`), with the failing check."""

    accepted: bool = True
    check: str | None = None
    doc: JsonDoc = field(default_factory=dict)


__all__ = ["CheckReport", "Chunk", "CompileReport", "ExecReport", "JsonDoc",
           "KernelInfo", "Report", "RunReport", "SyncReport", "err", "out"]
