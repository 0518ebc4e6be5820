"""The run-time preservation check (Lemma A.8 of the Prism paper, seed 004; STYLE 15).

After every step of thread (t, b), rebuild its whole term s' (`plug`) and check
Γ' ⊢^(Grid, 1) s' with the typing rules, where Γ' is the program's context extended by
every name the thread has bound (its environment: η in the paper). A function body the
thread is running is checked on its own, at the function's perspective, with the
program's context and the body's own η (V-Function; Lemma A.8's `call s with ...`),
and the caller's term holds the call statement where the body runs (`plug_calls`). A
failure raises IllTyped whose message starts `preservation:` and names the thread and
the last rule.
"""

from __future__ import annotations

from gpusem.calculus.bundl.ast import Program
from gpusem.calculus.bundl.perspective import GRID1
from gpusem.calculus.errors import IllTyped
from gpusem.interpreter.bundl.machine import Check, Machine
from gpusem.interpreter.bundl.plug import plug_calls
from gpusem.interpreter.bundl.config import CallFrame
from gpusem.typing_rules.bundl.stmt import check_stmt, program_context


def preservation_check(prog: Program, rules: str = "fixed") -> Check:
    """A `check(machine, index)` hook for `Machine` / `run_program`."""
    base = program_context(prog)

    def check(m: Machine, index: int) -> None:
        th = m.threads()[index]
        if th.terminated:
            return
        frames = th.frames
        for term, cut in plug_calls(m.cfg, th):
            # the names bound where this term runs: main's η is the first CALL frame's
            # saved η (or the thread's, without calls), a body's the next frame's
            later = [f for i, f in enumerate(frames)
                     if isinstance(f, CallFrame) and i > cut]
            env = later[0].env if later else th.env
            ctx = base
            for name, b in env.items():
                ctx = ctx.extend(name, b.persp, b.type)
            persp = GRID1
            if cut >= 0:
                here = frames[cut]
                assert isinstance(here, CallFrame)  # plug_calls cuts at calls
                persp = here.fn.persp
            try:
                check_stmt(ctx, persp, term, rules, m.shape)
            except IllTyped as err:
                raise IllTyped(f"preservation: thread t={th.t} b={th.b} is ill-typed "
                               f"after a step: {err.message}", rule=err.rule,
                               span=err.span) from err

    return check
