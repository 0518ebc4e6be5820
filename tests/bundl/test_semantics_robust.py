"""Robustness: on ARBITRARY syntax (ill-typed, ill-scoped, runtime forms anywhere;
`gpusem.fuzz.bundl.strategies.anything`), both interpreters end in an Outcome naming a rule,
or raise BadInput: never a Python exception (DESIGN: "never a traceback")."""

from __future__ import annotations

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.bundl.strategies.anything import syntax_programs
from gpusem.interpreter.bundl.big_step import run_big_step
from gpusem.interpreter.bundl.schedulers import run_program
from hypothesis import HealthCheck, given, settings

KINDS = {"terminated", "stuck", "deadlock", "budget"}


def _small_machine(prog) -> dict:
    # arbitrary machines can be huge (B, T up to 64): keep each run cheap
    m = prog.machine
    return {"blocks": min(m.blocks, 3), "threads": min(m.threads, 4)}


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(syntax_programs())
def test_interpreters_never_crash(prog):
    size = _small_machine(prog)
    runs = [lambda: run_program(prog, "rr", 2_000, "fixed", **size),
            lambda: run_program(prog, "random:3", 2_000, "paper", **size),
            lambda: run_big_step(prog, 2_000, **size)]
    for run in runs:
        try:
            out = run()
        except BadInput:
            continue
        assert out.kind in KINDS
        if out.kind in ("stuck", "deadlock"):
            assert out.rule.startswith(("S-", "E-")), out.rule
            assert out.message.split(":", 1)[0].islower()
