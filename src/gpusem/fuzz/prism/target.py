"""The prism target of `gpusem fuzz` (issue 28 item 5): generated Prism surface
programs (`strategies.py`) elaborate into Bundl, type-check, and

  elaboration  mean what the surface says: the per-thread reading of the surface tree
               (`interpreter/prism/sequential.py`) and the Bundl machine's reading of
               the elaboration (big-step) end in the same memory;
  compile      compiled = interpreted: our Bundl -> CUDA compiler's kernel, run on the
               backend under several harness schedules, ends in the interpreter's
               memory (the Bundl target's compile property on the elaboration).
  prism-sync   the same with Prism's Sec. 5 barrier placement (`--sync prism`:
               rules 1 and 2, the bundl target's prism-sync property).

The compiler properties draw programs that also exchange values between threads
through shared memory (`strategies._exchange`): without them no barrier placement
decision is ever observable (the seeded `prism-drop-rule-*` faults went unseen).

A program the front end, a surface rule or Bundl's typing rejects is a finding (kind
`rejected`): the generator writes only programs it means to be legal.

A finding is shrunk further than hypothesis does by `shrink.py` (surface-level
deletion, unwrapping and literal shrinking with the signature as the test): the
exchange's parts hang together, which choice shrinking cannot undo.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from gpusem.calculus.errors import GpusemError
from gpusem.fuzz.prism.strategies import CONSTRUCTS, PrismProgram, programs
from gpusem.fuzz.targets import CUDA_RUNTIME, Z3, CheckResult, Target, bundle_fault


def elaborate_text(text: str, file: str = "program.prism"):
    """Surface text -> (surface module, checked Bundl program)."""
    from gpusem.calculus.prism.elaborate import elaborate
    from gpusem.calculus.prism.parser import parse_prism
    from gpusem.typing_rules.bundl.stmt import check_program
    from gpusem.typing_rules.prism.surface import check_surface

    mod = parse_prism(text, file)
    check_surface(mod)
    prog = elaborate(mod)
    check_program(prog)
    return mod, prog


class PrismTarget(Target):
    name = "prism"
    properties = ("elaboration", "compile", "prism-sync")
    backends = ("cpu", "cuda")
    requires = (Z3,)  # elaborated into Bundl: its race checker
    requires_on: ClassVar = {"cuda": CUDA_RUNTIME}
    # of --shrink-time, hypothesis's share: the surface reducer takes a finding much
    # further (56 lines to about 30 in a cpu campaign's shrink), hypothesis barely
    hypothesis_share = 0.2

    def __init__(self, backend: str = "cpu") -> None:
        super().__init__(backend)
        self.shrink_stats: dict[str, dict[str, Any]] = {}
        self.shrink_max_tried = 1000  # candidates; the time cap is --shrink-time's

    def strategy(self, prop: str):
        return programs(exchange=prop != "elaboration")

    def size(self, program: PrismProgram) -> int:
        return program.text.count("\n")

    def coverage(self, program: PrismProgram) -> set[str]:
        return {f"prism:{c}" for c in program.constructs}

    def coverage_labels(self) -> tuple[str, ...]:
        return tuple(f"prism:{c}" for c in CONSTRUCTS)

    def program_files(self, program: PrismProgram) -> dict[str, str]:
        return {"program.prism": program.text}

    def check(self, program: PrismProgram, prop: str = "elaboration") -> CheckResult:
        return self.check_text(program.text, prop)

    def check_text(self, text: str, prop: str) -> CheckResult:
        files = {"program.prism": text}
        size = text.count("\n")
        try:
            mod, prog = elaborate_text(text)
        except GpusemError as e:
            return CheckResult("finding", signature=f"prism:rejected:{e.rule}",
                               kind="rejected", detail=e.one_line()[:200],
                               files=files, size=size)
        if prop in ("compile", "prism-sync"):
            from gpusem.fuzz.bundl.compile_property import (
                SYNC_OF_PROPERTY,
                check_program,
            )

            v = check_program(prog, self.backend, (0, 1, 2, 3), source=text,
                              file="program.prism", sync=SYNC_OF_PROPERTY[prop])
            if v.agree:
                return CheckResult("pass")
            if v.kind in ("racy", "not-compared", "unsupported"):
                return CheckResult("invalid", kind=v.kind, detail=v.message[:200])
            return CheckResult("finding", signature=f"prism:{prop}:{v.kind}",
                               kind=v.kind, detail=v.message[:200], files=files,
                               size=size)
        return self.elaboration(mod, prog, files, size)

    def elaboration(self, mod, prog, files: dict[str, str], size: int) -> CheckResult:
        from gpusem.interpreter.bundl.big_step import run_big_step
        from gpusem.interpreter.prism.sequential import read_kernel

        memory = {g.name: _initial(g) for g in prog.globals}
        want = read_kernel(mod, memory)
        got = run_big_step(prog)
        if got.kind != "terminated":
            return CheckResult("finding", signature=f"prism:elaboration:{got.kind}",
                               kind=got.kind, detail=got.message[:200], files=files,
                               size=size)
        for name, cells in want.items():
            if got.globals[name] != cells:
                i = next(k for k, (a, b) in enumerate(
                    zip(cells, got.globals[name], strict=True)) if a != b)
                return CheckResult(
                    "finding", signature="prism:elaboration:differs",
                    kind="elaboration", files=files, size=size,
                    detail=f"{name}[{i}]: surface reading {cells[i]}, Bundl "
                           f"{got.globals[name][i]}")
        return CheckResult("pass")

    def minimise(self, program: PrismProgram, res: CheckResult,
                 prop: str = "elaboration", budget_s: float | None = None
                 ) -> CheckResult:
        """Surface-level reduction after hypothesis's (`fuzz/prism/shrink.py`), in at
        most `budget_s` seconds (the campaign's --shrink-time left; None: 30 s)."""
        from gpusem.fuzz.prism.shrink import shrink

        if res.status != "finding":
            return res
        _, small, stats = shrink(program.text, res.signature,
                                 lambda text: self.check_text(text, prop),
                                 30.0 if budget_s is None else budget_s,
                                 self.shrink_max_tried)
        self.shrink_stats[res.signature] = stats.as_dict()
        return small if small is not None else res

    def finding_meta(self, result: CheckResult) -> dict:
        """A finding made under a seeded compiler fault records it (replay and the
        fault tests read it), and what the surface reducer did."""
        meta: dict[str, Any] = {"fault": os.environ.get("GPUSEM_FAULT", "")}
        if result.signature in self.shrink_stats:
            meta["minimised"] = self.shrink_stats[result.signature]
        return meta

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        """The bundle's verdict now, with its seeded fault on again unless
        GPUSEM_FAULT is already set."""
        prop = meta.get("property", "elaboration")
        with bundle_fault(meta):
            return self.check_text(files["program.prism"], prop)


def _initial(g) -> list[int]:
    from gpusem.calculus.bundl.ast import Iota

    if isinstance(g.init, Iota):
        return list(range(g.size))
    if g.init is None:
        return [0] * g.size
    return [lit.value for lit in g.init]
