"""Well-typed Bundl functions and calls for the generator (`programs.py`): V-Function and
T-Function-Call (Appendix A.2.2, with our per-parameter perspectives, errata "function
types and call arguments").

A function runs at one reachable code perspective; each parameter lives at a
perspective comparable with it, narrower, equal or BROADER (a broader primitive
parameter is where S-Function-Call's ⊢^π_π once went wrong: issue 14, item 1). A call
site is at exactly the function's perspective; a pointer argument lives at exactly the
parameter's perspective; a primitive argument for a parameter at π_i <= π is typed at π
(written down, as T-Decl), one for a broader parameter at π_i (it must be uniform
there), without array reads (errata "generator: racy reads and control flow").
`partition_id` is drawn often as an argument: its value depends on the perspective it
is evaluated at (⊢^π_π, the caller's), the point of the rule.
"""

from __future__ import annotations

from collections.abc import Callable

from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.ast import ArrayType, MemKind
from gpusem.calculus.bundl.perspective import (
    GRID1,
    Level,
    MachineShape,
    Perspective,
    lt,
    size,
)
from gpusem.calculus.bundl.walk import child_stmts
from gpusem.fuzz.bundl.strategies.draws import BOOLS, ints, node_fields, pick
from gpusem.fuzz.bundl.strategies.expressions import (
    BASES,
    INT,
    Env,
    FnInfo,
    Gen,
    VarInfo,
    arrays,
    divisors,
    gen_expr,
    narrower_or_equal,
)

# gen_block(draw, g, env, depth) of `programs.py` (passed in: programs imports us)
BlockGen = Callable[..., ast.Stmt]


def memory_need(s: ast.Stmt, fns: dict[str, int]) -> int:
    """An upper bound of the m that Γ ⊢^π_m s synthesises (T-Alloc adds n·size(τ),
    T-Seq/T-If take the max, calls need the callee's `uses`), with size(τ) <= 4."""
    match s:
        case ast.Alloc(size=n, body=body):
            return 4 * n + memory_need(body, fns)
        case ast.Call(fn=f):
            return fns.get(f, 0)
        case ast.Free(amount=n):
            return n
        case _:
            return max((memory_need(c, fns) for c in child_stmts(s)), default=0)


def reachable_persps(shape: MachineShape) -> list[Perspective]:
    """The code perspectives main can reach: grid[1], block[d | B], thread[d | T]."""
    return ([GRID1] + [Perspective(Level.BLOCK, d) for d in divisors(shape.blocks)]
            + [Perspective(Level.THREAD, d) for d in divisors(shape.threads)])


def comparable_persps(g: Gen, p: Perspective) -> list[Perspective]:
    """Parameter perspectives for a function at π: π and narrower ones first (they
    shrink there), then the broader ones that fit the machine."""
    broader = [q for q in reachable_persps(g.shape) if q != p and g.leq(p, q)]
    return narrower_or_equal(g, p) + broader


def gen_fn(draw, g: Gen, globals_env: Env, gen_block: BlockGen) -> FnInfo:
    """V-Function: Γ, x_i :^π_i τ_i ⊢^π_m s, m the declared `uses`."""
    persp = pick(draw, reachable_persps(g.shape))
    params, env, lengths = [], globals_env.at(persp), []
    for _ in range(draw(ints(0, 2))):
        name = g.fresh("a")
        ppersp = pick(draw, comparable_persps(g, persp))
        if draw(BOOLS):
            ty: ast.BaseType | ArrayType = ArrayType(
                pick(draw, BASES), pick(draw, list(MemKind)))
            n = pick(draw, [1, 2])
            lengths.append(n)
            env = env.bind(VarInfo(name, ppersp, ty, n))
        else:
            ty = pick(draw, BASES)
            env = env.bind(VarInfo(name, ppersp, ty))
        params.append(ast.Param(name, ty, ppersp))
    body = gen_block(draw, g, env, max(g.max_depth - 1, 0))
    need = memory_need(body, {f.fn.name: f.fn.uses for f in g.fns})
    uses = need + pick(draw, [0, 4])
    fn = ast.FnDef(g.fresh("f"), tuple(params), persp, uses, body)
    freezes = frozenset(k for k, p in enumerate(_array_params(fn))
                        if p.name in g.frozen)
    globals_ = {v.name for v in globals_env.vars}
    return FnInfo(fn, tuple(lengths), freezes, frozenset(_names(body) & globals_))


def _names(node: object) -> set[str]:
    """Every name a statement mentions (variables, arrays, views), its own included."""
    if isinstance(node, str):
        return {node}
    if isinstance(node, tuple):
        return set().union(*map(_names, node))
    names = node_fields(node)
    if names is None:
        return set()
    return set().union(*(_names(getattr(node, name)) for name in names))


def calls(g: Gen, env: Env) -> list[tuple[FnInfo, list[list[VarInfo]]]]:
    """Functions callable at π, with the candidate arrays for each pointer parameter."""
    out = []
    for info in g.fns:
        if info.fn.persp != env.persp or info.globals_ & g.frozen:
            continue  # (the body may write a frozen global: Gen.frozen)
        options, ok = [], True
        for param, need in zip(_array_params(info.fn), info.lengths):
            # a frozen array may be written by the body: never passed (Gen.frozen)
            cands = [v for v in arrays(env) if v.persp == param.persp
                     and v.type == param.type and v.length >= need
                     and v.name not in g.frozen]
            ok = ok and bool(cands)
            options.append(cands)
        if ok:
            out.append((info, options))
    return out


def _array_params(fn: ast.FnDef) -> list[ast.Param]:
    return [p for p in fn.params if isinstance(p.type, ArrayType)]


def s_call(draw, g: Gen, env: Env, depth: int) -> tuple[ast.Stmt, Env]:
    """T-Function-Call."""
    info, options = pick(draw, calls(g, env))
    chosen = [pick(draw, c).name for c in options]
    g.frozen.update(x for k, x in enumerate(chosen) if k in info.freezes)
    pointers = iter(chosen)
    args = tuple(ast.Var(next(pointers)) if isinstance(p.type, ArrayType)
                 else _argument(draw, g, env, p) for p in info.fn.params)
    return ast.Call(info.fn.name, args), env


def _argument(draw, g: Gen, env: Env, p: ast.Param) -> ast.Expr:
    assert isinstance(p.type, ast.BaseType)  # pointers are drawn apart
    broader = not g.leq(p.persp, env.persp)
    at = env.at(p.persp) if broader else env  # typed where the checker types it
    if p.type is INT and lt(at.persp, GRID1, "fixed", g.shape) and draw(BOOLS):
        return ast.PartitionId()  # its value depends on the evaluation perspective
    one_thread = size(p.persp, g.shape) == 1
    return gen_expr(draw, g, at, p.type, reads=one_thread and not broader)
