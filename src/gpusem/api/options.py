"""The options of the file verbs, one frozen dataclass per verb, and the parsing of
the option texts every front end shares (`-D NAME=INT`, `--schedules 0,1,2`).

An option a language does not read is ignored by it (`--rules` by APPy, `-D` by
Bundl), as the command line always did; `defines` are the `NAME=INT` texts, parsed by
the language that reads them, so a file that takes none never rejects them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusem.calculus import budgets
from gpusem.calculus.errors import BadInput

INT32 = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class CheckOptions:
    rules: str = "fixed"          # Bundl: fixed | paper
    as_json: bool = False
    derivation: bool = False      # Bundl: the typing derivation first
    defines: tuple[str, ...] = ()  # GPU IR: -D NAME=INT
    inputs: str | None = None     # APPy: 'A=float32[8] N=8'


@dataclass(frozen=True)
class RunOptions:
    schedule: str = "rr"          # Bundl: rr | random:SEED | exhaustive
    max_steps: int = 1_000_000
    rules: str = "fixed"
    blocks: int | None = None
    threads: int | None = None
    big_step: bool = False
    check_preservation: bool = False
    as_json: bool = False
    inputs: str | None = None     # APPy


@dataclass(frozen=True)
class CompileOptions:
    output: str | None = None     # write the CUDA here (None: it is the output)
    sync_motion: bool = True
    cp_async: bool = True
    defines: tuple[str, ...] = ()
    proc: str | None = None       # GPU IR: the procedure
    standalone: bool = False      # one self-contained .cu
    sync: str = ""                # .bundl/.prism: naive | motion | prism ("": sync_motion)


@dataclass(frozen=True)
class ExecOptions:
    backend: str = "cpu"
    schedules: str = "0,1,2,3"    # the cpu harness's fibre orders
    sync_motion: bool = True
    as_json: bool = False
    defines: tuple[str, ...] = ()
    proc: str | None = None
    inputs: str | None = None
    sync: str = ""                # .bundl/.prism: naive | motion | prism ("": sync_motion)


@dataclass(frozen=True)
class SyncOptions:
    defines: tuple[str, ...] = ()
    proc: str | None = None
    rules: str = "fixed"
    print_amir: bool = False
    max_steps: int = 200_000_000
    as_json: bool = False
    reference: bool = False
    symbolic: tuple[str, ...] = ()  # issue 27: search these sizes (symbolic_sizes.py)
    assume: tuple[str, ...] = ()    # their preconditions, one atom each
    up_to: int = 4096               # the largest value tried per symbolic size
    sizes: int = 12                 # how many sizes the search tries at most


@dataclass(frozen=True)
class StepOptions:
    rules: str = "fixed"
    blocks: int | None = None     # Bundl
    threads: int | None = None
    schedule: str = "rr"
    defines: tuple[str, ...] = ()  # GPU IR
    proc: str | None = None
    max_steps: int | None = None  # None: the machine's default (as run / synccheck)


def parse_defines(defines: tuple[str, ...]) -> dict[str, int]:
    """`-D N=256 -D M=64` -> {"N": 256, "M": 64}."""
    out: dict[str, int] = {}
    for item in defines:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise BadInput(f"bad definition: -D {item} (expected NAME=INT)")
        digits = value.removeprefix("-")
        if not (digits.isascii() and digits.isdigit()):
            raise BadInput(f"bad definition: -D {item} (value is not an integer)")
        number = budgets.check_int_literal(digits)
        out[name] = -number if value.startswith("-") else number
        if not INT32[0] <= out[name] <= INT32[1]:
            raise BadInput(f"bad definition: -D {item} (out of range: control values "
                           "are 32-bit ints)")
    return out


def parse_schedules(schedules: str) -> tuple[int, ...]:
    try:
        return tuple(int(s) for s in schedules.split(","))
    except ValueError:
        raise BadInput(f"bad --schedules: {schedules}") from None


__all__ = ["CheckOptions", "CompileOptions", "ExecOptions", "RunOptions",
           "StepOptions", "SyncOptions", "parse_defines", "parse_schedules"]
