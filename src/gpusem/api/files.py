"""The file verbs of the front door: `check_file`, `run_file`, `compile_file`,
`exec_file`, `synccheck_file` and `step_file` take a path and the verb's options, find
the file's language in the registry (`api/languages.py`) and return a typed report
(`api/results.py`); `gpusem VERB FILE` prints it and exits with its code.
`parse_file` is the registered parser on a file.

No verb names a language: a language that has no handler for a verb refuses the file
with the verb's one-line message (exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpusem.api.languages import language_of
from gpusem.api.options import (
    CheckOptions,
    CompileOptions,
    ExecOptions,
    RunOptions,
    StepOptions,
    SyncOptions,
)
from gpusem.api.results import (
    CheckReport,
    CompileReport,
    ExecReport,
    RunReport,
    SyncReport,
)
from gpusem.calculus.errors import BadInput

if TYPE_CHECKING:
    from gpusem.interpreter.debugger import Debugger


def parse_file(file: str) -> object:
    """The program in a file of any registered language, by its parser (BadInput:
    `file:line:col: message`)."""
    from gpusem.calculus.source import read_source

    return language_of(file).parse(read_source(file), file)


def check_file(file: str, options: CheckOptions | None = None) -> CheckReport:
    """Type-check (Bundl), analyse (GPU IR) or check the directives (APPy) of a
    file: exit 0 ok, 1 rejected (every error naming its rule)."""
    options = options or CheckOptions()
    language = language_of(file)
    if language.check is None:
        raise BadInput(f"check does not handle {language.name} files: {file}")
    return language.check(file, options)


def run_file(file: str, options: RunOptions | None = None) -> RunReport:
    """Interpret a file (Bundl: the small-step semantics; APPy: the sequential
    reading): exit 0 terminated, 1 stuck, deadlock or a trap, 2 the step budget."""
    options = options or RunOptions()
    if options.max_steps <= 0:
        raise BadInput(f"--max-steps out of range: {options.max_steps}")
    language = language_of(file)
    if language.run is None:
        raise BadInput(f"run interprets .bundl and .py (APPy) files only: {file}")
    return language.run(file, options)


def compile_file(file: str, options: CompileOptions | None = None) -> CompileReport:
    """CUDA C++ for a file (written to `options.output`, else the report's output);
    `options.standalone`: one self-contained reproducer instead."""
    options = options or CompileOptions()
    language = language_of(file)
    handler = language.standalone if options.standalone else language.compile
    if handler is None:
        raise BadInput(f"compile: only .bundl files are compiled so far: {file}")
    return handler(file, options)


def exec_file(file: str, options: ExecOptions | None = None) -> ExecReport:
    """Compile, run on a backend, compare with the reference: exit 0 agree, 1
    disagree / the kernel failed / not compared, 2 a budget, 3 stuck (a soundness
    bug of gpusem)."""
    options = options or ExecOptions()
    language = language_of(file)
    if language.exec is None:
        raise BadInput(f"exec: only .bundl, .gpuir and .py (APPy) files: {file}")
    return language.exec(file, options)


def synccheck_file(file: str, options: SyncOptions | None = None) -> SyncReport:
    """GPU IR -> AMIR -> the abstract machine (or an AMIR file directly): exit 0
    accepted, 1 rejected (the failing check and both source lines)."""
    options = options or SyncOptions()
    language = language_of(file)
    if language.synccheck is None:
        raise BadInput(f"synccheck checks .gpuir and .amir files only: {file}")
    if options.max_steps <= 0:
        raise BadInput(f"--max-steps out of range: {options.max_steps}")
    if options.symbolic and (options.up_to < 1 or options.sizes < 1):
        raise BadInput(f"--up-to and --sizes must be positive: {options.up_to}, "
                       f"{options.sizes}")
    return language.synccheck(file, options)


def step_file(file: str, options: StepOptions | None = None) -> Debugger:
    """A debugging session on a file, behind the one debugger interface
    (`interpreter/debugger.py`): Bundl's small-step machine, GPU IR's AMIR program,
    lambda-cu's rules of Sec 6.2."""
    options = options or StepOptions()
    if options.max_steps is not None and options.max_steps <= 0:
        raise BadInput(f"--max-steps out of range: {options.max_steps}")
    language = language_of(file)
    if language.step is None:
        raise BadInput(f"step: only .bundl, .gpuir and .lcu files: {file}")
    return language.step(file, options)


__all__ = ["check_file", "compile_file", "exec_file", "parse_file", "run_file",
           "step_file", "synccheck_file"]
