"""Kernels: V; kexp -->k V'; kexp' (seed 002, 6.2, l.700-711), KERN-LET and
KERN-RET, and the kernel a `run` invokes.

Note (errata.md, L11): CPU-RUN evaluates the body "V; [x1, .., xn := v1, .., xn]kexp"
in the caller's V, with a typo (xn for vn); we bind the parameters to the argument
values in a fresh environment, which is the same for the closed kernels the checker
admits (rule WF-Scope), and reads KERN-RET's {x1 |-> v1, .., xm |-> vm} ⊂ V as
{a1 |-> v1, .., an |-> vn} ⊂ V (its conclusion returns a1, .., an).
"""

from __future__ import annotations

from typing import assert_never

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import Value
from gpusem.interpreter.lambdacu.gpu import Env
from gpusem.interpreter.lambdacu.rules import Run, stuck
from gpusem.interpreter.lambdacu.soac import eval_soac


def run_kernel(run: Run, kernel: ast.Kernel,
               args: tuple[Value, ...]) -> tuple[Value, ...]:
    """V; kexp -->*k V'; (v1, .., vn): the kernel's body to its results."""
    env: Env = dict(zip((p.name for p in kernel.params), args))
    e: ast.KExp = kernel.body
    while True:
        match e:
            case ast.KLet(names, app, body):  # KERN-LET
                values = eval_soac(run, env, app)
                if len(values) != len(names):
                    raise stuck("KERN-LET", e.span, f"let binds {len(names)} names, "
                                f"{app.soac} returns {len(values)} values",
                                f"kernel {kernel.name}")
                run.fire("KERN-LET", e.span)
                env = {**env, **dict(zip(names, values))}
                e = body
            case ast.KRet(names):  # KERN-RET
                missing = [x for x in names if x not in env]
                if missing:
                    raise stuck("KERN-RET", e.span, f"unbound variable {missing[0]}",
                                f"kernel {kernel.name}")
                run.fire("KERN-RET", e.span)
                return tuple(env[x] for x in names)
            case _:
                assert_never(e)
