"""The compiler-correctness oracle for Bundl: compiled CUDA ends in the memory the
interpreter computes (DESIGN.md, `test_compile_correct`).

One check compiles a well-typed program, runs the kernel on a backend under one or more
schedules, runs the reference interpreter on the same initial globals, and compares the
final global memories cell by cell (floats bit for bit). Programs the interpreter does
not run to termination (stuck, deadlock, budget) are not compared: their compiled
behaviour is undefined, and the verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpusem.calculus.bundl import ast as B
from gpusem.compiler.bundl_cuda.launch import as_bundl_values, first_difference, jobs_for
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program


@dataclass
class Verdict:
    agree: bool
    kind: str  # agree | disagree | kernel-failed | not-compared | compile-error
    message: str = ""
    expected: dict | None = None
    actual: dict | None = None
    difference: tuple | None = None
    schedule: int | None = None
    kernel_source: str = ""
    details: dict = field(default_factory=dict)

    def describe(self) -> str:
        if self.kind == "agree":
            return f"agree: {self.message}"
        if self.kind == "disagree":
            name, i, e, a = self.difference
            return (f"disagree: {name}[{i}] is {a!r} on the backend (schedule "
                    f"{self.schedule}), the interpreter says {e!r}")
        return f"{self.kind}: {self.message}"

    def as_dict(self) -> dict:
        return {"agree": self.agree, "kind": self.kind, "message": self.message,
                "schedule": self.schedule, "difference": self.difference,
                "expected": self.expected, "actual": self.actual}


def reference(prog: B.Program, max_steps: int = 2_000_000):
    """The interpreter's outcome (round-robin small-step; the living definition)."""
    from gpusem.interpreter.bundl_machine import run_program

    return run_program(prog, schedule="rr", max_steps=max_steps)


def check_program(prog: B.Program, backend: str = "cpu", seeds=(0, 1, 2),
                  sync_motion: bool = True, source: str = "", file: str = "<input>",
                  outcome=None) -> Verdict:
    from gpusem.compiler.backends import get_backend

    outcome = outcome if outcome is not None else reference(prog)
    if outcome.kind != "terminated":
        return Verdict(True, "not-compared",
                       f"the interpreter ends {outcome.kind}: {outcome.message}")
    try:
        kernel = compile_program(prog, CompileOptions(sync_motion=sync_motion),
                                 source, file)
    except Exception as err:  # a compiler crash is a finding too
        return Verdict(False, "compile-error", f"{type(err).__name__}: {err}")
    results = get_backend(backend).run(jobs_for(prog, kernel, seeds))
    return compare(prog, outcome.globals, kernel.source, results, seeds)


def compare(prog, expected: dict, source: str, results, seeds) -> Verdict:
    for seed, result in zip(seeds, results, strict=True):
        if not result.ok:
            return Verdict(False, "kernel-failed", f"{result.kind}: {result.message}",
                           expected, None, None, seed, source)
        actual = as_bundl_values(prog, result.outputs)
        diff = first_difference(prog, expected, actual)
        if diff is not None:
            return Verdict(False, "disagree", "", expected, actual, diff, seed, source)
    return Verdict(True, "agree", f"{len(seeds)} schedule(s), "
                   f"{sum(len(v) for v in expected.values())} cells", expected,
                   None, None, None, source)


def check_file(path: str, backend: str = "cpu", seeds=(0, 1, 2),
               sync_motion: bool = True) -> Verdict:
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.typing_rules.bundl import check_program as typecheck

    source = Path(path).read_text()
    prog = parse_program(source, path)
    typecheck(prog)
    return check_program(prog, backend, seeds, sync_motion, source, Path(path).name)
