"""One GPU thread: V; gexp -->g V'; gexp' (seed 002, 6.2, l.940-973), and a thunk at
one index, IDX-THUNK (l.716-725).

Conventions: V -> `env` (a dict: GPU-LET extends it, nothing else changes it), gexp ->
`g`, the element a thread computes -> `where` (named in every stuck state and trap).
A thread's expression is final when it is `ret a1, .., an` (the form GPU-LET and
IDX-THUNK read their results from) or, under `fixed` (L2), an atom: the value a
primitive or a subscript steps to.

Note: IDX-THUNK substitutes the index for the parameter, [x := i]gexp; we bind x to i
in V instead, which is the same for the closed thread expressions the checker admits
(errata.md L9 says what V holds).
"""

from __future__ import annotations

from typing import assert_never

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import I32, Arr, Bool, Scalar, Value
from gpusem.interpreter.lambdacu.prims import PrimMismatch, PrimTrap, apply_prim
from gpusem.interpreter.lambdacu.rules import Run, stuck, trap

Env = dict[str, Value]


def atom_value(env: Env, a: ast.Atom, rule: str, where: str) -> Value:
    """{x |-> v} ⊂ V, the premise every GPU rule reads its operands by."""
    if isinstance(a, ast.Lit):
        return a.value
    if a.name not in env:
        raise stuck(rule, a.span, f"unbound variable {a.name}", where)
    return env[a.name]


def is_final(g: ast.GExp) -> bool:
    return isinstance(g, (ast.GRet, ast.GAtom))


def step_g(run: Run, env: Env, g: ast.GExp, where: str) -> tuple[Env, ast.GExp]:
    """One step of -->g."""
    match g:
        case ast.GLet(names, rhs, body):  # GPU-LET
            values = eval_g(run, env, rhs, where, "GPU-LET")
            if len(values) != len(names):
                raise stuck("GPU-LET", g.span, f"let binds {len(names)} names, the "
                            f"right-hand side returns {len(values)} values", where)
            run.fire("GPU-LET", g.span)
            return {**env, **dict(zip(names, values))}, body
        case ast.GIf(cond, then, else_):
            c = atom_value(env, cond, "GPU-IF-TRUE", where)
            if c == Bool(True):  # GPU-IF-TRUE
                run.fire("GPU-IF-TRUE", g.span)
                return env, then
            if c == Bool(False):  # GPU-IF-FALSE
                run.fire("GPU-IF-FALSE", g.span)
                return env, else_
            raise stuck("GPU-IF-TRUE", g.span, "condition is not a bool", where)
        case ast.GPrim(op, args):  # GPU-PRIM
            operands = tuple(atom_value(env, a, "GPU-PRIM", where) for a in args)
            out = prim_value("GPU-PRIM", g, op, operands, where)
            run.fire("GPU-PRIM", g.span)
            return env, ast.GAtom(ast.Lit(out, g.span), g.span)
        case ast.GSub(array, index):  # GPU-SUBSCRIPT
            arr = atom_value(env, ast.Var(array, g.span), "GPU-SUBSCRIPT", where)
            i = atom_value(env, index, "GPU-SUBSCRIPT", where)
            if not isinstance(arr, Arr) or not isinstance(i, I32):
                raise stuck("GPU-SUBSCRIPT", g.span, "subscript of a non-array or by "
                            "a non-int", where)
            if not 0 <= i.value < len(arr):
                raise trap("GPU-SUBSCRIPT", g.span, f"index out of bounds: {array}"
                           f"[{i.value}] of an array of {len(arr)}", where)
            run.fire("GPU-SUBSCRIPT", g.span)
            return env, ast.GAtom(ast.Lit(arr.items[i.value], g.span), g.span)
        case ast.GRet() | ast.GAtom():
            raise AssertionError("a final thread expression does not step")
        case _:
            assert_never(g)


def prim_value(rule: str, g: ast.GPrim | ast.CPrim, op: str,
               operands: tuple[Value, ...], where: str) -> Scalar:
    """primitive rules ⊢ prim_op v1, .., vn = vout (GPU-PRIM and CPU-PRIM)."""
    if any(isinstance(v, tuple) for v in operands):
        raise stuck(rule, g.span, f"primitive {op} applied to a tuple", where)
    try:
        return apply_prim(op, tuple(v for v in operands if not isinstance(v, tuple)))
    except PrimTrap as err:
        raise trap(rule, g.span, str(err), where) from None
    except PrimMismatch:
        kinds = ", ".join(getattr(v, "base", "array") for v in operands)
        raise stuck(rule, g.span, f"no primitive rule for {op} on ({kinds})",
                    where) from None


def eval_g(run: Run, env: Env, g: ast.GExp, where: str, rule: str) -> tuple[Value, ...]:
    """V; gexp -->*g V'; ret x1, .., xn, and {x_i |-> v_i} ⊂ V': the premise of
    GPU-LET and IDX-THUNK (`rule`, named if the final form is not one it reads)."""
    while not is_final(g):
        env, g = step_g(run, env, g, where)
    if isinstance(g, ast.GRet):
        return tuple(atom_value(env, a, rule, where) for a in g.atoms)
    assert isinstance(g, ast.GAtom)
    if not run.rules.gpu_value_result:
        raise stuck(rule, g.span, f"the thread expression ends in a value, not in "
                    f"`ret x..` ({rule} as printed, errata L2)", where)
    return (atom_value(env, g.atom, rule, where),)


def apply_thunk(run: Run, env: Env, thunk: ast.Thunk, arg: tuple[Value, ...],
                where: str) -> tuple[Value, ...]:
    """IDX-THUNK: V; {x => gexp using xs..}(i) ⇓t (v1, .., vn); `arg` is the index
    (i,) or, for the predicates of FILTER and PARTITION, the tuple they test."""
    if run.rules.thunk_reads_using_only:
        base = {x: env[x] for x in thunk.using if x in env}
    else:
        base = dict(env)
    params = thunk.params
    if len(arg) > 1 and not run.rules.thunk_binds_tuple:
        raise stuck("IDX-THUNK", thunk.span, f"IDX-THUNK binds one parameter; the "
                    f"thunk is applied to a tuple of {len(arg)} (errata L3)", where)
    if params and len(params) != len(arg):
        raise stuck("IDX-THUNK", thunk.span, f"thunk takes {len(params)} parameters, "
                    f"applied to {len(arg)} values", where)
    run.fire("IDX-THUNK", thunk.span)
    return eval_g(run, {**base, **dict(zip(params, arg))}, thunk.body, where,
                  "IDX-THUNK")


def index(i: int) -> tuple[Value, ...]:
    return (I32(i),)
