"""The run-time preservation check (Lemma A.8 of the Prism paper, seed 004; STYLE 15).

After every step of thread (t, b), rebuild its whole term s' (`plug`) and check
Γ' ⊢^(Grid, 1) s' with the typing rules, where Γ' is the program's context extended by
every name the thread has bound (its environment: η in the paper). A failure raises
IllTyped whose message starts `preservation:` and names the thread and the last rule.
"""

from __future__ import annotations

from gpusem.calculus.bundl.ast import Program
from gpusem.calculus.bundl.perspective import GRID1
from gpusem.calculus.errors import IllTyped
from gpusem.interpreter.bundl.machine import Check, Machine
from gpusem.interpreter.bundl.plug import plug
from gpusem.interpreter.bundl.thread import CALL
from gpusem.typing_rules.bundl.stmt import check_stmt, program_context


def preservation_check(prog: Program, rules: str = "fixed") -> Check:
    """A `check(machine, index)` hook for `Machine` / `run_program`."""
    base = program_context(prog)

    def check(m: Machine, index: int) -> None:
        th = m.threads()[index]
        if th.terminated:
            return
        ctx = base
        envs = [f[2] for f in th.frames if f[0] == CALL] + [th.env]
        for env in envs:
            for name, b in env.items():
                ctx = ctx.extend(name, b.persp, b.type)
        term = plug(m.cfg, th, for_typing=True)
        try:
            check_stmt(ctx, GRID1, term, rules, m.shape)
        except IllTyped as err:
            raise IllTyped(f"preservation: thread t={th.t} b={th.b} is ill-typed "
                           f"after a step: {err.message}", rule=err.rule,
                           span=err.span) from err

    return check
