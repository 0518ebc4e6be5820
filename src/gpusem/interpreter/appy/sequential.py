"""The sequential reading of an APPy program (seed 003, Sections 3-4): the oracle.

Directives are ignored: a `parallel for` is an ordinary `for`, `#pragma atomic` an
ordinary update, and a tensor statement is a NumPy array assignment (the right-hand side
is evaluated in full before the store, Section 4 "vectorized semantics"). Arrays are
NumPy arrays of the input dtypes; every operation goes through NumPy scalars or arrays of
those dtypes, so int32 wraps, float32 rounds each operation (never a float64
intermediate), and Python literals are weak (NEP 50), exactly as NumPy evaluates the
sequential program.

Hooks let the legality checker (typing_rules/appy/legality.py) watch every cell each worker and
lane reads and writes without a second interpreter.

Conventions: `mem` (array name -> ndarray, the shared global memory), `env` (scalar name
-> value, the worker's registers), `hooks` (an `AccessHooks`), `budget` (steps left).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, assert_never, cast

import numpy as np
from gpusem.calculus.appy import ast as A
from gpusem.calculus.budgets import MemoryGuard
from gpusem.calculus.errors import BadInput, BudgetExhausted, Trap

DEFAULT_MAX_STEPS = 2_000_000
SEQ_MVL = 128  # the value `appy.MVL` reads as (any consistent value gives one result)

# A run-time value: a Python or NumPy scalar, a NumPy array, or the slice a vidx
# denotes; dynamic as in the Python program (NumPy's operations are typed Any).
Value = Any
# A NumPy index of an array: ints, slices and np.newaxis (None).
Key = tuple[int | slice | None, ...]

NumPyFn = Callable[..., Value]

_UNARY: dict[str, NumPyFn] = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt,
                              "abs": np.abs, "sin": np.sin, "cos": np.cos,
                              "tanh": np.tanh}
_BINARY: dict[str, NumPyFn] = {"maximum": np.maximum, "minimum": np.minimum}
_REDUCE: dict[str, NumPyFn] = {"sum": np.sum, "max": np.max, "min": np.min}
# Listing 7's products: `mv(A[:M, :N], x[:N])` is the matrix-vector product, `dot` the
# inner product of two vectors (NumPy's reading of the same names).
_PRODUCT: dict[str, NumPyFn] = {"mv": np.matmul, "dot": np.dot}


class Returned(Exception):
    """`return` reached: unwinds the sequential reading to `run_sequential`."""


class AccessHooks:
    """No-op hooks; the legality checker overrides them (and sets `active`)."""

    active = False

    def enter_loop(self, loop: A.For) -> None: ...
    def iteration(self, loop: A.For, index: int, value: int) -> None: ...
    def exit_loop(self, loop: A.For) -> None: ...
    def access(self, kind: str, array: str, cells: tuple[int, ...], stmt: A.Assign | None,
               atomic: bool) -> None: ...


@dataclass
class SeqState:
    mem: dict[str, np.ndarray]
    env: dict[str, Value]
    hooks: AccessHooks = field(default_factory=AccessHooks)
    budget: int = DEFAULT_MAX_STEPS
    stmt: A.Assign | None = None  # the statement being executed (for hooks)
    guard: MemoryGuard = field(default_factory=MemoryGuard)  # the memory budget


def run_sequential(fn: A.Function, arrays: dict[str, np.ndarray],
                   scalars: dict[str, int | float], *, hooks: AccessHooks | None = None,
                   max_steps: int = DEFAULT_MAX_STEPS) -> dict[str, np.ndarray]:
    """Run `fn` on copies of `arrays`; return the final arrays (the reference result)."""
    mem = {k: np.array(v, copy=True) for k, v in arrays.items()}
    env: dict[str, object] = {}
    for p in fn.params:
        if p.is_array:
            if p.name not in mem:
                raise BadInput(f"missing input: array '{p.name}'")
        elif p.name in scalars:
            env[p.name] = scalars[p.name]
        else:
            raise BadInput(f"missing input: scalar '{p.name}'")
    st = SeqState(mem, env, hooks or AccessHooks(), max_steps)
    with np.errstate(all="ignore"):
        try:
            exec_block(fn.body, st)
        except Returned:
            pass  # Seq-Return: the arrays are the result (a returned array is one)
    return mem


def exec_block(body: tuple[A.Stmt, ...], st: SeqState) -> None:
    for s in body:
        exec_stmt(s, st)


def exec_stmt(s: A.Stmt, st: SeqState) -> None:
    st.budget -= 1
    if st.budget < 0:
        raise BudgetExhausted("step budget exhausted: the sequential reading ran too "
                              "long", rule="Seq-Step", span=s.span)
    st.guard.tick(s.span, "Seq-Step")
    match s:
        case A.For():
            exec_for(s, st)
        case A.If(cond=c, body=body, orelse=orelse):
            exec_block(body if bool(eval_expr(c, st)) else orelse, st)
        case A.Assign():
            exec_assign(s, st)
        case A.Return(value=v):
            if v is not None:
                eval_expr(v, st)  # evaluated for its traps; its value is not compared
            raise Returned()
        case _:
            assert_never(s)


def loop_range(s: A.For, st: SeqState) -> range:
    bounds = [eval_expr(e, st) for e in (s.start, s.stop, s.step)]
    if not all(isinstance(b, (int, np.integer)) for b in bounds):
        raise Trap(f"loop bound not an integer: {s.var}", rule="Seq-For", span=s.span)
    if int(bounds[2]) == 0:
        raise Trap(f"zero loop step: {s.var}", rule="Seq-For", span=s.span)
    return range(int(bounds[0]), int(bounds[1]), int(bounds[2]))


def exec_for(s: A.For, st: SeqState) -> None:
    # Seq-For: every directive reads as a plain loop (Section 3.1's promise).
    rng = loop_range(s, st)
    st.hooks.enter_loop(s)
    for k, v in enumerate(rng):
        st.env[s.var] = v
        st.hooks.iteration(s, k, v)
        exec_block(s.body, st)
    st.hooks.exit_loop(s)


def exec_assign(s: A.Assign, st: SeqState) -> None:
    st.stmt = s
    value = eval_expr(s.value, st)
    match s.target:
        case A.Name(id=n):
            if s.op is not None:
                value = binop(s.op, eval_expr(s.target, st), value, s)
            st.env[n] = value
        case A.Subscript():
            store(s.target, value, s, st)
    st.stmt = None


def store(t: A.Subscript, value: Value, s: A.Assign, st: SeqState) -> None:
    arr = _array(t.array, t, st)
    key = _index(t, st)
    cells = _cells(arr, key, t) if st.hooks.active else ()
    if s.op is not None:
        old = arr[key]
        if st.hooks.active:
            st.hooks.access("read", t.array, cells, s, s.atomic)
        value = binop(s.op, old, value, s)
    if st.hooks.active:
        st.hooks.access("write", t.array, cells, s, s.atomic)
    try:
        arr[key] = value  # NumPy casts to the array's dtype (the store's conversion)
    except (TypeError, ValueError, OverflowError) as err:  # as Python would raise
        raise Trap(f"bad store into {t.array}: {type(err).__name__}: {err}"[:200],
                   rule="Seq-Store", span=s.span) from err


# --------------------------------------------------------------------- expressions


def eval_expr(e: A.Expr, st: SeqState) -> Value:
    match e:
        case A.Const(value=v):
            return v
        case A.Name(id=n):
            if n in st.env:
                return st.env[n]
            if n in st.mem:  # an array by its name (`return C`): the array itself
                return st.mem[n]
            raise Trap(f"unbound name: {n}", rule="Seq-Var", span=e.span)
        case A.Mvl():
            # Note: the sequential reading does not depend on MVL's value when a
            # program strip-mines consistently (range(0, N, MVL) + vidx(i, MVL, N));
            # gpusem reads it as SEQ_MVL (errata: "the value of appy.MVL").
            return SEQ_MVL
        case A.Subscript(array=a):
            arr = _array(a, e, st)
            key = _index(e, st)
            if st.hooks.active:
                st.hooks.access("read", a, _cells(arr, key, e), st.stmt, False)
            val = arr[key]
            return val.copy() if isinstance(val, np.ndarray) else val
        case A.BinOp(op=op, left=x, right=y):
            return binop(op, eval_expr(x, st), eval_expr(y, st), e)
        case A.Neg(operand=x):
            return -eval_expr(x, st)
        case A.Compare(op=op, left=x, right=y):
            return _compare(op, eval_expr(x, st), eval_expr(y, st))
        case A.Call(func=f, args=args, axis=axis):
            vals = [eval_expr(a, st) for a in args]
            if f in _UNARY:
                return _UNARY[f](vals[0])
            if f in _BINARY:
                return _BINARY[f](vals[0], vals[1])
            if f in _PRODUCT:
                try:
                    return _PRODUCT[f](vals[0], vals[1])
                except ValueError:
                    raise Trap(f"shape mismatch: {f} of shapes {np.shape(vals[0])} and "
                               f"{np.shape(vals[1])}", rule="Seq-Call",
                               span=e.span) from None
            if axis is not None and not -np.ndim(vals[0]) <= axis < np.ndim(vals[0]):
                raise Trap(f"axis out of range: {f}(..., axis={axis}) of a "
                           f"{np.ndim(vals[0])}-dimensional value", rule="Seq-Call",
                           span=e.span)  # NumPy's AxisError, as Python would raise
            return _REDUCE[f](vals[0], axis=axis)
        case A.Where(cond=c, then=t, orelse=o, ternary=True):
            # Python's `x if c else y`: evaluates only the branch taken; an array
            # condition has no truth value (ValueError in Python: a trap here).
            cv = eval_expr(c, st)
            if np.ndim(cv) != 0:
                raise Trap("ambiguous truth value: a conditional expression on an array",
                           rule="Seq-IfExp", span=e.span)
            return eval_expr(t, st) if bool(cv) else eval_expr(o, st)
        case A.Where(cond=c, then=t, orelse=o):
            cv, tv, ov = eval_expr(c, st), eval_expr(t, st), eval_expr(o, st)
            if isinstance(cv, np.ndarray):
                return np.where(cv, tv, ov)
            return tv if cv else ov
        case A.Vidx(start=s0, step=sz, bound=b):
            # A vector of indices (Section 3.2), kept as the slice it denotes.
            lo = int(eval_expr(s0, st))
            hi = lo + int(eval_expr(sz, st))
            return slice(lo, hi if b is None else min(hi, int(eval_expr(b, st))))
        case A.Slice() | A.NewAxis():
            raise BadInput(f"unsupported construct: {e.span}: "
                           f"{type(e).__name__.lower()} outside an index")
        case _:
            assert_never(e)


def binop(op: str, a: Value, b: Value, node: A.Expr | A.Stmt) -> Value:
    """`a op b` as Python/NumPy evaluates it; operands Python refuses (a vector of
    indices in arithmetic, shapes that do not broadcast, an int out of its dtype's
    range, a float divided by zero) trap as Python would raise."""
    try:
        return arithmetic(op, a, b, node)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError) as err:
        raise Trap(f"bad operands of '{op}': {type(err).__name__}: {err}"[:200],
                   rule="Seq-BinOp", span=node.span) from err


def arithmetic(op: str, a: Value, b: Value, node: A.Expr | A.Stmt) -> Value:
    # Note: C semantics would truncate; APPy's sequential reading is Python's, so `//`
    # and `%` floor (the generated kernels must match Python, not C).
    match op:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "/":
            return a / b
        case "//" | "%":
            if _is_int(b) and np.any(np.asarray(b) == 0):
                raise Trap("division by zero: integer // or %", rule="Seq-Div",
                           span=node.span)
            return a // b if op == "//" else a % b
        case "&" | "|":
            # Python's `&`/`|`: bitwise on ints, logical on booleans (comparisons);
            # floats have neither (TypeError in Python: a trap here).
            if any(np.issubdtype(np.asarray(x).dtype, np.floating) for x in (a, b)):
                raise Trap(f"bad operand: '{op}' of a float", rule="Seq-BitOp",
                           span=node.span)
            return a & b if op == "&" else a | b
    raise BadInput(f"unknown operator: {op}")


def _compare(op: str, a: Value, b: Value) -> Value:
    return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "==": np.equal, "!=": np.not_equal}[op](a, b)


def _is_int(v: Value) -> bool:
    return np.issubdtype(np.asarray(v).dtype, np.integer)


def _array(name: str, node: A.Subscript, st: SeqState) -> np.ndarray:
    if name not in st.mem:
        raise Trap(f"unknown array: {name}", rule="Seq-Array", span=node.span)
    return st.mem[name]


def _index(t: A.Subscript, st: SeqState) -> Key:
    arr = st.mem[t.array]
    key: list[int | slice | None] = []
    dim = 0
    for ix in t.indices:
        match ix:
            case A.NewAxis():
                key.append(np.newaxis)
                continue
            case A.Slice(lower=lo, upper=hi):
                if dim >= arr.ndim:
                    raise _oob(t, "slice", arr)
                lov = 0 if lo is None else _python_index(int(eval_expr(lo, st)),
                                                         arr.shape[dim])
                hiv = _python_index(int(eval_expr(hi, st)), arr.shape[dim])
                if not (0 <= lov <= hiv <= arr.shape[dim]):
                    raise _oob(t, f"slice {lov}:{hiv}", arr)
                key.append(slice(lov, hiv))
            case A.Vidx(start=s0, step=sz, bound=b):
                vlo = int(eval_expr(s0, st))
                width = int(eval_expr(sz, st))
                vhi = vlo + width if b is None else min(vlo + width,
                                                        int(eval_expr(b, st)))
                if dim >= arr.ndim or not (0 <= vlo <= vhi <= arr.shape[dim]):
                    raise _oob(t, f"vidx {vlo}..{vhi}", arr)
                key.append(slice(vlo, vhi))
            case _:
                v = eval_expr(ix, st)
                if isinstance(v, slice):  # a name bound to appy.vidx(...)
                    if dim >= arr.ndim or not (0 <= v.start <= v.stop <= arr.shape[dim]):
                        raise _oob(t, f"vidx {v.start}..{v.stop}", arr)
                    key.append(v)
                    dim += 1
                    continue
                if not _is_int(v) or np.ndim(v) != 0:
                    raise Trap(f"bad index: {t.array} indexed by a non-integer",
                               rule="Seq-Index", span=t.span)
                if dim >= arr.ndim or not (0 <= _python_index(int(v), arr.shape[dim])
                                           < arr.shape[dim]):
                    raise _oob(t, f"index {int(v)}", arr)
                key.append(_python_index(int(v), arr.shape[dim]))
        dim += 1
    if dim != arr.ndim:
        raise Trap(f"rank mismatch: {t.array} has {arr.ndim} dimensions, indexed by {dim}",
                   rule="Seq-Index", span=t.span)
    return tuple(key)


def _python_index(v: int, n: int) -> int:
    """Python's reading of a negative index or slice bound: -k is n - k (Seq-Index).
    Unlike Python, a bound still out of range after that traps instead of clamping
    (errata: "negative indices")."""
    return v + n if v < 0 else v


def _oob(t: A.Subscript, what: str, arr: np.ndarray) -> Trap:
    return Trap(f"out of bounds: {t.array}[{what}] with shape {arr.shape}",
                rule="Seq-Index", span=t.span)


def _cells(arr: np.ndarray, key: Key, node: A.Subscript) -> tuple[int, ...]:
    """The flat cell numbers a key touches (for the legality hooks)."""
    plain = tuple(k for k in key if k is not np.newaxis)
    if all(isinstance(k, int) for k in plain):
        return (int(np.ravel_multi_index(cast(tuple[int, ...], plain), arr.shape)),)
    return tuple(np.arange(arr.size).reshape(arr.shape)[plain].ravel().tolist())
