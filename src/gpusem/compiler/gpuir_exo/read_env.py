"""The Python around an Exo proc, read with `ast` only (never imported or run): the
metaprogramming values a `@proc` body refers to, and the instances of each proc.

Exo-GPU's tests write procs inside *factories* (`def mkproc_x(lo=4, unit=cuda_warp,
...)` returning the `@proc`) called with keyword arguments from tests
(`compiler.cuda_cpu_test(mkproc_x, golden, sm="90a", lo=5)`), or inside a test
function after a few constant assignments. The proc's Python names then resolve
through (1) the factory's parameters, bound at each call site, (2) constant
assignments earlier in the enclosing functions and the module. Values are ints,
bools, strings, None, lists, Exo objects named by their identifier (`Sym`), and a few
constructors the front end understands (`CudaWarpConfig`, `n * cuda_warp`,
`cuda_threads_strided(a, b)`, memory templates such as `Sm80_RmemMatrixD(16, 8)`).
A value the reader cannot compute is `Unknown` and makes the construct using it
unreadable (with the reason), never a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

# keyword arguments of Exo's test fixtures, not of the factories they call
FIXTURE_KWARGS = frozenset({"golden", "sm", "mkref"})


@dataclass(frozen=True)
class Sym:
    """An Exo object named in the source: `cuda_warp`, `CudaCommitGroup`, ..."""

    name: str


@dataclass(frozen=True)
class Call:
    """A constructor applied to values: `cuda_threads_strided(4, 8)`,
    `Sm80_RmemMatrixD(16, 8)`, `CudaWarpConfig("p", 1, setmaxnreg_dec=40)`."""

    name: str
    args: tuple = ()
    kwargs: tuple = ()


@dataclass(frozen=True)
class Scaled:
    """`n * unit`."""

    count: int
    unit: Any


@dataclass(frozen=True)
class Unknown:
    why: str


Env = dict[str, Any]


def evaluate(node: ast.expr | None, env: Env) -> Any:
    """The value of a metaprogramming expression (Unknown where not computable)."""
    match node:
        case None:
            return None
        case ast.Constant(value=v):
            return v
        case ast.Name(id=n):
            return env.get(n, Sym(n))
        case ast.UnaryOp(op=op, operand=x):
            v = evaluate(x, env)
            if isinstance(v, int) and not isinstance(v, bool):
                return {ast.USub: -v, ast.UAdd: v, ast.Invert: ~v}.get(type(op),
                                                                      Unknown("op"))
            if isinstance(op, ast.Not) and isinstance(v, bool):
                return not v
            return Unknown(f"unary {type(op).__name__} of {v!r}")
        case ast.BinOp(left=l, op=op, right=r):
            return _binop(evaluate(l, env), op, evaluate(r, env))
        case ast.IfExp(test=t, body=b, orelse=o):
            c = evaluate(t, env)
            if isinstance(c, bool | int | type(None)):
                return evaluate(b if c else o, env)
            return Unknown(f"condition {ast.unparse(t)}")
        case ast.BoolOp(op=op, values=vs):  # Python's: the deciding operand
            cur: Any = None
            for x in vs:
                cur = evaluate(x, env)
                if isinstance(cur, Unknown):
                    return cur
                if bool(cur) == isinstance(op, ast.Or):
                    return cur
            return cur
        case ast.Compare(left=l, ops=[op], comparators=[r]):
            a, b = evaluate(l, env), evaluate(r, env)
            if isinstance(a, int | str | type(None)) and isinstance(b, int | str | type(
                    None)):
                return _compare(a, op, b)
            if isinstance(a, Sym | Call) and isinstance(b, Sym | Call) and isinstance(
                    op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
                return (a == b) == isinstance(op, ast.Eq | ast.Is)
            return Unknown(ast.unparse(node))
        case ast.List(elts=es) | ast.Tuple(elts=es):
            return [evaluate(e, env) for e in es]
        case ast.Call(func=ast.Name(id="bool"), args=[x]):
            v = evaluate(x, env)
            return v if isinstance(v, Unknown) else bool(v)
        case ast.Call(func=ast.Name(id="dict"), args=[], keywords=kws):
            return {k.arg: evaluate(k.value, env) for k in kws if k.arg is not None}
        case ast.Dict(keys=ks, values=vs) if all(isinstance(k, ast.Constant)
                                                 for k in ks):
            return {k.value: evaluate(v, env) for k, v in zip(ks, vs)}  # type: ignore
        case ast.Call(func=ast.Name(id=f), args=args, keywords=kws):
            return Call(f, tuple(evaluate(a, env) for a in args),
                        tuple((k.arg, evaluate(k.value, env)) for k in kws))
        case ast.Attribute():
            return Unknown(f"attribute {ast.unparse(node)}")
    return Unknown(ast.unparse(node) if node is not None else "?")


def _binop(a: Any, op: ast.operator, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        match op:
            case ast.Add():
                return a + b
            case ast.Sub():
                return a - b
            case ast.Mult():
                return a * b
            case ast.FloorDiv() | ast.Div() if b:
                return a // b
            case ast.Mod() if b:
                return a % b
    if isinstance(op, ast.Mult) and isinstance(a, int) and isinstance(b, Sym | Call):
        return Scaled(a, b)
    return Unknown(f"{a!r} {type(op).__name__} {b!r}")


def _compare(a: Any, op: ast.cmpop, b: Any) -> Any:
    try:
        return {ast.Eq: a == b, ast.NotEq: a != b, ast.Is: a is b, ast.IsNot: a is not b,
                ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b,
                ast.GtE: a >= b}[type(op)]
    except TypeError:
        return Unknown("comparison")


def straight_line_env(body: list[ast.stmt], env: Env, stop: ast.AST | None = None
                      ) -> Env:
    """`env` extended by the simple assignments of `body` before `stop` (names bound
    to constants; anything else binds Unknown, so a later use is not guessed)."""
    out = dict(env)
    for s in body:
        if s is stop:
            break
        match s:
            case ast.Assign(targets=[ast.Name(id=n)], value=v):
                out[n] = evaluate(v, out)
            case ast.AnnAssign(target=ast.Name(id=n), value=v) if v is not None:
                out[n] = evaluate(v, out)
            case ast.Assign(targets=[ast.Tuple(elts=ts)], value=v):
                vals = evaluate(v, out)
                for i, t in enumerate(ts):
                    if isinstance(t, ast.Name):
                        out[t.id] = vals[i] if isinstance(vals, list) and i < len(
                            vals) else Unknown("tuple assignment")
    return out


@dataclass
class Instance:
    """One proc as a test instantiates it."""

    proc: ast.FunctionDef
    env: Env
    test: str                      # the test function using it
    call_line: int                 # where (the call site, or the def)
    expects_error: bool            # inside `with pytest.raises(...)`
    match: list[str] = field(default_factory=list)  # texts the test asserts
    runs: str = ""                 # what the test does with it: sync_check, compile, run
    sizes: dict = field(default_factory=dict)  # the test's own sync_check(N=...)


def is_proc(fn: ast.AST) -> bool:
    return isinstance(fn, ast.FunctionDef) and any(
        isinstance(d, ast.Name) and d.id == "proc" for d in fn.decorator_list)


def instances(module: ast.Module) -> list[Instance]:
    """Every (proc, environment, test) the module's tests instantiate."""
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    menv = straight_line_env(module.body, {})
    out: list[Instance] = []
    for fn in [n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)
               and is_proc(n)]:
        chain = _enclosing(fn, parents)
        if not chain:  # a module-level proc
            out.append(Instance(fn, menv, "<module>", fn.lineno, False))
            continue
        outer = chain[-1]
        if outer.name.startswith("test"):
            env = _env_along(chain, menv, fn, {})
            out.append(Instance(fn, env, outer.name, fn.lineno,
                                *_expectation(outer, fn.lineno), _runs(outer),
                                _sync_sizes(outer, menv)))
            continue
        sites: list[tuple[ast.Call | None, ast.FunctionDef | None]] = list(
            _call_sites(module, outer.name, parents)) or [(None, None)]
        for call, test in sites:
            bind = _bindings(outer, call, menv) if call is not None else {}
            env = _env_along(chain, menv, fn, bind)
            where = call.lineno if call is not None else fn.lineno
            exp = _expectation(test, where) if test is not None else (False, [])
            out.append(Instance(fn, env, test.name if test else outer.name, where,
                                *exp, _runs(test) if test is not None else "",
                                _sync_sizes(test, menv) if test is not None else {}))
    return out


def _enclosing(node: ast.AST, parents: dict) -> list[ast.FunctionDef]:
    """Enclosing function definitions, innermost first."""
    out, cur = [], parents.get(node)
    while cur is not None:
        if isinstance(cur, ast.FunctionDef):
            out.append(cur)
        cur = parents.get(cur)
    return out


def _env_along(chain: list[ast.FunctionDef], menv: Env, fn: ast.AST, bind: Env) -> Env:
    env = dict(menv)
    for f in reversed(chain):
        env = _params(f, env, bind if f is chain[-1] else {})
        env = straight_line_env(f.body, env, stop=_stmt_containing(f, fn))
    return env


def _stmt_containing(f: ast.FunctionDef, node: ast.AST) -> ast.stmt | None:
    for s in f.body:
        if any(n is node for n in ast.walk(s)):
            return s
    return None


def _params(f: ast.FunctionDef, env: Env, bind: Env) -> Env:
    out = dict(env)
    a = f.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(pos, defaults):
        out[p.arg] = bind[p.arg] if p.arg in bind else (
            evaluate(d, env) if d is not None else Unknown(f"parameter {p.arg}"))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out[p.arg] = bind[p.arg] if p.arg in bind else (
            evaluate(d, env) if d is not None else Unknown(f"parameter {p.arg}"))
    return out


def _call_sites(module: ast.Module, name: str, parents: dict
                ) -> list[tuple[ast.Call, ast.FunctionDef | None]]:
    out = []
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        direct = isinstance(node.func, ast.Name) and node.func.id == name
        passed = any(isinstance(a, ast.Name) and a.id == name for a in node.args)
        if direct or passed:
            chain = _enclosing(node, parents)
            if chain and chain[-1].name == name:
                continue  # a recursive mention inside the factory itself
            out.append((node, chain[-1] if chain else None))
    return out


def _bindings(factory: ast.FunctionDef, call: ast.Call, menv: Env) -> Env:
    """The factory's arguments at `call`: keywords (less the fixtures' own), and the
    positional ones of a direct call."""
    bind: Env = {}
    if isinstance(call.func, ast.Name) and call.func.id == factory.name:
        names = [p.arg for p in factory.args.posonlyargs + factory.args.args]
        for p, a in zip(names, call.args):
            bind[p] = evaluate(a, menv)
    for k in call.keywords:
        if k.arg is not None and k.arg not in FIXTURE_KWARGS:
            bind[k.arg] = evaluate(k.value, menv)
        elif k.arg is None:  # **settings: a dict defined at module level
            more = evaluate(k.value, menv)
            if isinstance(more, dict):
                bind.update({a: v for a, v in more.items() if a not in FIXTURE_KWARGS})
    return bind


def _expectation(test: ast.FunctionDef, line: int) -> tuple[bool, list[str]]:
    """Whether the statement at `line` of `test` sits in `with pytest.raises(...)`,
    and the strings the test asserts are in the error text."""
    raises = False
    for node in ast.walk(test):
        if isinstance(node, ast.With) and any(
                "raises" in ast.unparse(i.context_expr) for i in node.items):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                raises = True
    texts = [n.left.value for n in ast.walk(test) if isinstance(n, ast.Compare)
             and isinstance(n.left, ast.Constant) and isinstance(n.left.value, str)
             and any(isinstance(o, ast.In) for o in n.ops)]
    return raises, texts


def _runs(test: ast.FunctionDef) -> str:
    """What the test asks of Exo: `sync_check` (its checker), `run` (a GPU run),
    `compile` (code generation only: no sync_check), or `?`."""
    text = ast.unparse(test)
    if ".sync_check(" in text:
        return "sync_check"
    if "excut_test" in text or "cuda_test_context" in text:
        return "run"
    if "cuda_cpu_test" in text or "ext_compile_procs" in text:
        return "compile"
    return "?"


def _sync_sizes(test: ast.FunctionDef, env: Env) -> dict:
    """The integer keyword arguments of the test's `.sync_check(...)` calls."""
    out: dict = {}
    for n in ast.walk(test):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr == "sync_check":
            for k in n.keywords:
                v = evaluate(k.value, env)
                if k.arg is not None and isinstance(v, int):
                    out[k.arg] = v
    return out


def unit_text(v: Any, node: ast.expr) -> str | None:
    """A collective unit value as GPU IR writes it (None: not a unit)."""
    match v:
        case Sym(name=n):
            return n
        case Scaled(count=k, unit=u):
            inner = unit_text(u, node)
            return None if inner is None else f"{k} * {inner}"
        case Call(name=n, args=args) if all(isinstance(a, int) for a in args):
            return f"{n}({', '.join(map(str, args))})"
    return None
