"""Prism's surface language (seed 004, Sec 3, Appendix B) in the language registry.

A `.prism` file is read by the front end (`calculus/prism`), checked by the surface
rules that do not survive elaboration (`typing_rules/prism/surface.py`), elaborated
into Bundl (`calculus/prism/elaborate.py`), and from there every verb is Bundl's
(`api/bundl.py`): `check` (Appendix A.2 on the elaboration), `run`, `compile` (the
CUDA carries the .prism lines in its comments), `standalone`, `exec`, `step`. Spans
stay the surface's, so every error names a line and column of the .prism file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpusem.api import bundl
from gpusem.api.languages import Language
from gpusem.api.options import (
    CheckOptions,
    CompileOptions,
    ExecOptions,
    RunOptions,
    StepOptions,
)
from gpusem.api.results import CheckReport, CompileReport, ExecReport, RunReport
from gpusem.calculus.bundl.ast import Program
from gpusem.calculus.prism.elaborate import elaborate
from gpusem.calculus.prism.parser import parse_prism
from gpusem.calculus.source import read_source
from gpusem.typing_rules.prism.surface import check_surface

if TYPE_CHECKING:
    from gpusem.interpreter.bundl.debug_commands import BundlDebugger


def parse(text: str, file: str) -> Program:
    """Surface text -> the Bundl program it means (surface rules checked first)."""
    mod = parse_prism(text, file)
    check_surface(mod)
    return elaborate(mod)


def load(path: str) -> Program:
    return parse(read_source(path), path)


def check(file: str, o: CheckOptions) -> CheckReport:
    return bundl.check_program_report(load(file), file, o, "prism")


def run(file: str, o: RunOptions) -> RunReport:
    return bundl.run_program_report(file, o, load, "prism")


def compile(file: str, o: CompileOptions) -> CompileReport:
    source = read_source(file)
    return bundl.compile_program_report(parse(source, file), source, file, o, "prism")


def standalone(file: str, o: CompileOptions) -> CompileReport:
    return bundl.standalone_report(load(file), file, o, "prism")


def exec_(file: str, o: ExecOptions) -> ExecReport:
    return bundl.exec_program_report(file, o, parse, "prism")


def step(file: str, o: StepOptions) -> BundlDebugger:
    return bundl.debugger(read_source(file), file, o, parse)


LANGUAGES = (Language("prism", (".prism",), parse, check=check, run=run,
                      compile=compile, standalone=standalone, exec=exec_, step=step),)

__all__ = ["LANGUAGES", "load", "parse"]
