"""One Bundl program in memory, for a team's scripts and tests (issue 18): parse,
check, run, compile, standalone, exec. The file verbs (`api/files.py`) read files of
any registered language; these take a parsed Bundl `Program`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpusem.calculus.bundl.ast import Program
    from gpusem.calculus.errors import IllTyped
    from gpusem.compiler.bundl_cuda.pipeline import CompiledKernel
    from gpusem.fuzz.bundl.compile_property import Verdict
    from gpusem.interpreter.bundl.machine import Outcome


def parse(text: str, file: str = "<input>") -> Program:
    """A Bundl program from its text (BadInput: `file:line:col: message`)."""
    from gpusem.calculus.bundl.parser import parse_program

    return parse_program(text, file)


def load(path: str | Path) -> Program:
    """A Bundl program from a file (read through the one source reader)."""
    from gpusem.calculus.source import read_source

    return parse(read_source(str(path)), str(path))


def check(program: Program, rules: str = "fixed") -> list[IllTyped]:
    """Every type error of `program` (`IllTyped`, naming the rule); [] = well-typed.
    `rules`: "fixed" (the corrected rules) or "paper" (Appendix A as printed)."""
    from gpusem.typing_rules.bundl.stmt import type_errors

    return type_errors(program, rules)


def run(program: Program, schedule: str = "rr", max_steps: int = 1_000_000,
        rules: str = "fixed", *, blocks: int | None = None, threads: int | None = None,
        big_step: bool = False, check_preservation: bool = False) -> Outcome:
    """Run on the small-step machine: an `Outcome` (kind terminated | stuck | deadlock
    | budget; `globals` the final global memory). schedule: rr | random:SEED |
    exhaustive. `blocks`, `threads`: override the machine's B and T; `big_step`: the
    vectorised big-step evaluator instead (one schedule); `check_preservation`:
    re-type-check each thread's term after every step (Lemma A.8)."""
    if big_step:
        from gpusem.interpreter.bundl.big_step import run_big_step

        return run_big_step(program, max_steps=max_steps, rules=rules, blocks=blocks,
                            threads=threads)
    from gpusem.interpreter.bundl.schedulers import run_program

    check = None
    if check_preservation:
        from gpusem.interpreter.bundl.preservation import preservation_check

        check = preservation_check(program, rules)
    return run_program(program, schedule, max_steps, rules, blocks=blocks,
                       threads=threads, check=check)


def compile(program: Program, sync_motion: bool = True, cp_async: bool = True, *,
            source: str = "", file: str = "<input>", sync: str = "") -> CompiledKernel:
    """Bundl -> CUDA C++: a `CompiledKernel` (`.source`, `.name`, `.blocks`,
    `.threads`, `.smem_bytes`). The program must be well-typed (IllTyped otherwise).
    `source`, `file`: the program's text and file name, for the emitted comments;
    `sync`: the barrier placement, naive | motion | prism ("": by `sync_motion`)."""
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.typing_rules.bundl.stmt import check_program

    check_program(program)  # the compiler's input is a well-typed program
    options = CompileOptions(sync_motion=sync_motion, cp_async=cp_async, sync=sync)
    return compile_program(program, options, source=source, file=file)


def standalone(program: Program, sync_motion: bool = True, title: str = "") -> str:
    """One self-contained `.cu` (runtime inlined, inputs and the interpreter's output
    embedded, a main() that exits 1 on a mismatch): `nvcc -arch=sm_90a repro.cu`
    builds it. When the interpreter does not terminate, nothing is embedded and the
    program prints its output instead."""
    from gpusem.compiler.bundl_cuda.launch import initial_globals
    from gpusem.compiler.bundl_cuda.standalone import standalone_source

    kernel = compile(program, sync_motion)
    out = run(program)
    expected = out.globals if out.kind == "terminated" else None
    return standalone_source(kernel, initial_globals(program), expected, title)


def exec(program: Program, backend: str = "cpu",
         schedules: Sequence[int] = (0, 1, 2, 3), sync_motion: bool = True, *,
         source: str = "", file: str = "<input>", sync: str = "") -> Verdict:
    """Compile, run on `backend` under the cpu harness's fibre orders `schedules`,
    compare with the interpreter: a `Verdict` (`.agree`, `.kind`, `.describe()`,
    `.exit_code()`). `source`, `file`: the program's text and file name, for the
    kernel's comments. `gpusem exec FILE.bundl` is this on the file's program."""
    from gpusem.fuzz.bundl.compile_property import check_program
    from gpusem.interpreter.bundl.reference import reference
    from gpusem.typing_rules.bundl.stmt import check_program as typecheck

    typecheck(program)
    return check_program(program, backend, tuple(schedules), sync_motion, source,
                         file, ref=reference(program), sync=sync)


__all__ = ["check", "compile", "exec", "load", "parse", "run", "standalone"]
