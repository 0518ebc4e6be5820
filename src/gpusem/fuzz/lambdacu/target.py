"""The `lambdacu` target of `gpusem fuzz`: the lambda-cu -> CUDA compiler
(compiler/lambdacu_cuda, issue 29 item 5) under test against the interpreter.

Properties:
  compile     test_compile_correct: a generated program (a whole program or a
              kernel-invocation graph for fusion), compiled and run on the backend
              (cpu: the SIMT harness; cuda: the GPU), means what the interpreter
              says under `--rules fixed` (compile_check.py), with the block small
              (`GPUSEM_LC_BLOCK`, default 4) so that every fold and FILTER scan of a
              generated program's small arrays is multi-pass
  printparse  parse . print = id on the program

Signatures are cause-level (`lambdacu:compile:mismatch`, `lambdacu:compile:error`,
`lambdacu:printparse`), never the program. A bundle holds `program.lcu`, the
interpreter's and the compiled program's outputs, and `repro.cu`: every header
inlined and the interpreter's value of main, so that it builds with nvcc alone (or
g++ -x c++) and exits 1 where the compiled program disagrees (STYLE 28).
"""

from __future__ import annotations

import os
from typing import Any

from gpusem.calculus.errors import GpusemError
from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.calculus.lambdacu.printer import print_program
from gpusem.compiler.lambdacu_cuda.driver import expected_output, standalone
from gpusem.compiler.lambdacu_cuda.faults import active_faults
from gpusem.fuzz.lambdacu.compile_check import differential, reference
from gpusem.fuzz.lambdacu.graphs import fusion_programs
from gpusem.fuzz.lambdacu.programs import programs
from gpusem.fuzz.targets import Z3, CheckResult, Target, bundle_fault
from hypothesis import strategies as st

PROPERTIES = ("compile", "printparse")


def block_size() -> int:
    return int(os.environ.get("GPUSEM_LC_BLOCK", "4"))


class LambdacuTarget(Target):
    name = "lambdacu"
    properties = PROPERTIES
    backends = ("cpu", "cuda")
    requires = (Z3,)  # the fusion ILP (compiler/lambdacu_fusion/ilp.py)

    def __init__(self, backend: str = "cpu") -> None:
        self.backend = backend

    def strategy(self, prop: str) -> Any:
        """Half whole programs (programs.py: every SOAC, CPU code, prints), half
        kernel-invocation graphs (graphs.py: what the fusion pass fuses, so that
        fused kernels are compiled too)."""
        return st.one_of(programs(), fusion_programs())

    def size(self, program: ast.Program) -> int:
        """Lines of the printed program (one statement, SOAC or binding a line)."""
        return sum(1 for line in print_program(program).splitlines() if line.strip())

    def program_files(self, program: ast.Program) -> dict[str, str]:
        return {"program.lcu": print_program(program)}

    def check(self, program: ast.Program, prop: str = "compile") -> CheckResult:
        files = self.program_files(program)
        size = self.size(program)
        if prop == "printparse":
            again = parse_program(files["program.lcu"], "program.lcu")
            if again == program:
                return CheckResult("pass", size=size)
            return CheckResult("finding", signature="lambdacu:printparse",
                               kind="printparse", detail="parse . print differs",
                               files=files, size=size, program_file="program.lcu")
        block = block_size()
        v = differential(program, self.backend, block=block)
        if v.kind == "agree":
            return CheckResult("pass", size=size)
        if v.kind == "skip":
            return CheckResult("invalid", kind="reference", detail=v.detail[:200],
                               size=size)
        kind, _, res = reference(program)
        files |= {
            "expected.txt": v.reference + "\n",
            "actual.txt": v.compiled + "\n",
            "repro.cu": standalone(v.source, expected_output(
                res.value if res else None) if kind != "skip" else None),
        }
        return CheckResult("finding", signature=f"lambdacu:compile:{v.kind}",
                           kind=v.kind, detail=v.detail[:200], files=files,
                           size=size, program_file="program.lcu")

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        """The bundle's verdict now; a bundle found under a seeded fault replays with
        that fault on, unless GPUSEM_FAULT is set."""
        with bundle_fault(meta):
            try:
                program = parse_program(files["program.lcu"], "program.lcu")
                return self.check(program, meta.get("property", "compile"))
            except GpusemError as err:
                return CheckResult("invalid", kind="bundle", detail=str(err)[:200])

    def finding_meta(self, result: CheckResult) -> dict:
        meta: dict = {"block": block_size(), "backend": self.backend}
        if active_faults():
            meta["fault"] = ",".join(active_faults())
        return meta
