"""The compiler's property, test_compile_correct: a lambda-cu program compiled to CUDA
(compiler/lambdacu_cuda) and run on a backend means what the interpreter says under
`--rules fixed` (STYLE 16: the interpreter is the living definition).

Agreement: the same value of main and the same printed lines, floats bit for bit
(`same_value`); or both trap (the compiled program names its trap, which need not be
the interpreter's first one: threads run in any order). An empty array prints no
element type, so its type is not compared. Programs that call `exp` or `log` compare
floats to a relative 1e-5 (CUDA's expf/logf and numpy's may differ by an ulp, which
later operations can grow; prims.py's note); every other float is exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusem.calculus.errors import BudgetExhausted, Stuck, Trap
from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.printer import print_program
from gpusem.calculus.lambdacu.values import F32, Arr, Value, same_value, show_value
from gpusem.compiler.lambdacu_cuda import driver
from gpusem.compiler.lambdacu_cuda.emit import (
    Compiled,
    LoweringError,
    compile_program,
)
from gpusem.interpreter.lambdacu.machine import Outcome, evaluate
from gpusem.interpreter.lambdacu.rules import FIXED
from gpusem.typing_rules.lambdacu.wellformed import check_program

APPROX = ("exp", "log")
REL = 1e-5


@dataclass(frozen=True)
class Verdict:
    """`kind`: agree | mismatch | error (the compiled program failed: build, launch,
    crash) | skip (the reference is stuck or out of budget: not the compiler's)."""

    kind: str
    detail: str
    reference: str
    compiled: str
    source: str = ""


def reference(p: ast.Program, max_steps: int = 200_000
              ) -> tuple[str, str, Outcome | None]:
    """('ok' | 'trap' | 'skip', the outcome shown, the outcome when ok): the
    interpreter under `fixed`."""
    checked = check_program(p)
    try:
        res = evaluate(checked.program, FIXED, max_steps, checked.elems)
    except Trap as e:
        return "trap", e.one_line(), None
    except (Stuck, BudgetExhausted) as e:
        return "skip", e.one_line(), None
    lines = [f"print {line}" for line in res.printed]
    return "ok", "\n".join([*lines, f"main = {show_value(res.value)}"]), res


def approximate(p: ast.Program) -> bool:
    return any(f" {op} " in f" {line} " for line in print_program(p).splitlines()
               for op in APPROX)


def shown(ran: driver.Ran) -> str:
    if ran.outcome != "ok":
        return f"{ran.outcome}: {ran.message}"
    lines = ["print " + " ".join(show_value(v) for v in args) for args in ran.printed]
    assert ran.value is not None
    return "\n".join([*lines, f"main = {show_value(ran.value)}"])


def agree(want: Value, got: Value, approx: bool) -> bool:
    if isinstance(want, tuple) or isinstance(got, tuple):
        return (isinstance(want, tuple) and isinstance(got, tuple)
                and len(want) == len(got)
                and all(agree(a, b, approx) for a, b in zip(want, got)))
    if isinstance(want, Arr) and isinstance(got, Arr) and not want.items:
        return not got.items
    if isinstance(want, Arr) and isinstance(got, Arr):
        return (len(want) == len(got)
                and all(agree(a, b, approx) for a, b in zip(want.items, got.items)))
    if approx and isinstance(want, F32) and isinstance(got, F32):
        a, b = want.value, got.value
        return same_value(want, got) or (math.isfinite(a) and math.isfinite(b)
                                         and abs(a - b) <= REL * max(1.0, abs(a)))
    return same_value(want, got)


def differential(p: ast.Program, backend: str = "cpu", *, block: int = 256,
                 seed: int = 0, fusion: bool = True) -> Verdict:
    kind, ref, res = reference(p)
    try:
        compiled: Compiled = compile_program(p, fusion=fusion, block=block)
    except LoweringError as err:
        return Verdict("error", str(err), ref, f"error: {err}")
    if kind == "skip":
        return Verdict("skip", ref, ref, "", compiled.source)
    ran = driver.run(compiled.source, backend, seed)
    got = shown(ran)
    if ran.outcome == "error":
        return Verdict("error", ran.message.splitlines()[0] if ran.message else "",
                       ref, got, compiled.source)
    if kind == "trap" or ran.outcome == "trap":
        same = kind == ran.outcome
        return Verdict("agree" if same else "mismatch",
                       "" if same else "one traps, the other does not", ref, got,
                       compiled.source)
    assert res is not None
    approx = approximate(p)
    printed_ok = len(res.printed) == len(ran.printed) and all(
        want == " ".join(show_value(v) for v in args)
        for want, args in zip(res.printed, ran.printed))
    assert ran.value is not None
    if printed_ok and agree(res.value, ran.value, approx):
        return Verdict("agree", "", ref, got, compiled.source)
    return Verdict("mismatch", "the compiled program's result differs", ref, got,
                   compiled.source)
