"""Expression evaluation η, σ, Σ ⊢^π_π' e ⇓ v: Appendix A.3.7 of Prism (seed 004).

Each expression is compiled once to a closure `f(th, tgt) -> value`: `th` is the
thread state (its environment, code perspective π and perspective id p, ids t and b),
`tgt` the target perspective π' (the perspective of the variable the value is written
to; only E-Partition-Id looks at it). One closure per E- rule.

Conventions (paper -> Python):
  π (ambient, code)       -> `th.persp`          π' (target) -> `tgt`
  p, t, b                 -> `th.p`, `th.t` (grid-wide id), `th.b`
  get(η, σ, Σ, x)         -> `lookup(cfg, th, x)` (thread environment, then globals)
  get(η, σ, Σ, l + i)     -> `cfg.regions[ptr.region].cells[ptr.off + i]`

Runtime perspective checks. `--rules paper` checks exactly the premises printed in
A.3.7 (E-Var has none; E-Arr-Access checks π' ≤ π; E-Partition-Id π < (Grid, 1) and
π' ≤ π). `--rules fixed` checks what the corrected typing rules promise: read up
(π ≤ the variable's or array's perspective, Sec 3.4.1) and shared arrays only at
π ≤ (Block, 1) (T-Arr-Access-Shared). See errata.md ("runtime perspective checks").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, cast

import numpy as np
from gpusem.calculus.bundl.ast import (
    BinOp,
    BoolLit,
    Expr,
    FloatLit,
    Fma,
    Index,
    IntLit,
    MemKind,
    PartitionId,
    UnOp,
    Var,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    Level,
    Perspective,
    level_ratio,
)
from gpusem.calculus.errors import GpusemError, Stuck, Trap
from gpusem.calculus.fma32 import fma32
from gpusem.calculus.span import NO_SPAN
from gpusem.interpreter.bundl.config import Config, Eval, ThreadState
from gpusem.interpreter.bundl.values import (
    F32,
    Binding,
    Ptr,
    Region,
    Value,
    c_div,
    c_rem,
    located,
    show_value,
    wrap32,
)

# The array operand of E-Arr-Access / S-Arr-Assn: (⟨l, n⟩, the array's π'), compiled.
PtrAt = tuple[Ptr, Perspective]
PtrEval = Callable[[ThreadState, Perspective], PtrAt]


def fail(kind: type[GpusemError], rule: str, node: object, th: ThreadState,
         message: str, cell: str | None = None) -> NoReturn:
    """Raise `kind` (Stuck or Trap) naming the rule, span, thread, perspective, cell."""
    where = f" (thread t={th.t} b={th.b} p={th.p}, perspective {th.persp}"
    where += f", cell {cell})" if cell else ")"
    err = kind(message + where, rule=rule, span=getattr(node, "span", NO_SPAN))
    loc = located(err)
    loc.thread = (th.t, th.b, th.p)
    loc.persp = th.persp
    loc.cell = cell
    raise err


def lookup(cfg: Config, th: ThreadState, name: str, node: object,
           rule: str) -> Binding:
    """get(η, σ, Σ, x): the binding of x (thread environment first, then Σ)."""
    b = th.env.get(name)
    if b is None:
        b = cfg.globals.get(name)
        if b is None:
            fail(Stuck, rule, node, th, f"unbound variable: {name}")
    return b


def compile_expr(cfg: Config, e: Expr) -> Eval:
    """The closure for `e` (cached per node: the program is compiled once)."""
    hit = cfg.ecache.get(id(e))
    if hit is not None:
        return hit[1]
    f = _compile(cfg, e)
    cfg.ecache[id(e)] = (e, f)  # keep e alive so its id stays unique
    return f


def _compile(cfg: Config, e: Expr) -> Eval:
    match e:
        case IntLit(value):  # E-Int
            v = wrap32(value)
            return lambda th, tgt: v
        case FloatLit(value):  # E-Float
            fv = F32(value)
            return lambda th, tgt: fv
        case BoolLit(value):  # E-Bool
            bv = bool(value)
            return lambda th, tgt: bv
        case Var(name):
            return _e_var(cfg, e, name)
        case PartitionId():
            return _e_partition_id(cfg, e)
        case Index(array, index):
            return _e_arr_access(cfg, e, array, index)
        case BinOp(op, left, right):
            return _e_bop(cfg, e, op, left, right)
        case UnOp(op, operand):
            return _e_unop(cfg, e, op, operand)
        case Fma(a, b, c):
            return _e_fma(cfg, e, a, b, c)
        case _:
            raise TypeError(f"not an expression: {e!r}")


def _e_var(cfg: Config, node: Var, name: str) -> Eval:
    # E-Var
    check = cfg.fixed
    leq = cfg.leq

    def ev(th: ThreadState, tgt: Perspective) -> Value:
        b = th.env.get(name)
        if b is None:
            b = lookup(cfg, th, name, node, "E-Var")
        if check and not leq(th.persp, b.persp):
            fail(Stuck, "E-Var", node, th,
                 f"perspective mismatch: reading {name} at {b.persp} from code at "
                 f"{th.persp} (read up needs code <= data)")
        return b.value

    return ev


def compile_ptr(cfg: Config, e: Expr, rule: str) -> PtrEval:
    """The array operand of E-Arr-Access / S-Arr-Assn: a closure giving (⟨l, n⟩, π')
    where π' is the perspective of the array variable (carried through `x + k`)."""
    match e:
        case Var(name):
            def var_ptr(th: ThreadState, tgt: Perspective) -> PtrAt:
                b = th.env.get(name)
                if b is None:
                    b = lookup(cfg, th, name, e, rule)
                v = b.value
                if type(v) is not Ptr:
                    fail(Stuck, rule, e, th, f"type mismatch: {name} is not an array "
                         f"(holds {show_value(v)})")
                return v, b.persp
            return var_ptr
        case BinOp("+", base, off):  # the pointer offset S-Partition substitutes
            fb = compile_ptr(cfg, base, rule)
            fo = compile_expr(cfg, off)

            def off_ptr(th: ThreadState, tgt: Perspective) -> PtrAt:
                ptr, persp = fb(th, tgt)
                k = fo(th, tgt)
                if type(k) is not int:
                    fail(Stuck, rule, e, th, "type mismatch: pointer offset is not int")
                return ptr.offset(k), persp
            return off_ptr
        case _:
            f = compile_expr(cfg, e)

            def any_ptr(th: ThreadState, tgt: Perspective) -> PtrAt:
                v = f(th, tgt)
                if type(v) is not Ptr:
                    fail(Stuck, rule, e, th, "type mismatch: not an array")
                return v, th.persp
            return any_ptr


def _e_arr_access(cfg: Config, node: Index, array: Expr, index: Expr) -> Eval:
    # E-Arr-Access
    fa = compile_ptr(cfg, array, "E-Arr-Access")
    fi = compile_expr(cfg, index)
    regions = cfg.regions
    fixed, leq = cfg.fixed, cfg.leq

    def ev(th: ThreadState, tgt: Perspective) -> Value:
        ptr, apersp = fa(th, tgt)
        i = fi(th, tgt)
        if type(i) is not int:
            fail(Stuck, "E-Arr-Access", node, th, "type mismatch: index is not int")
        reg = regions[ptr.region]
        if fixed:
            if not leq(th.persp, apersp):
                fail(Stuck, "E-Arr-Access", node, th,
                     f"perspective mismatch: reading an array at {apersp} from code at "
                     f"{th.persp} (read up needs code <= data)", _cell(reg, ptr, i))
            if reg.space is MemKind.SHARED and not leq(th.persp, BLOCK1):
                fail(Stuck, "E-Arr-Access-Shared", node, th,
                     f"perspective mismatch: shared memory read from code at "
                     f"{th.persp} (needs <= {BLOCK1})", _cell(reg, ptr, i))
        elif not leq(tgt, th.persp):
            fail(Stuck, "E-Arr-Access", node, th,
                 f"perspective mismatch: target {tgt} is not <= code {th.persp}")
        if not 0 <= i < ptr.length:
            fail(Trap, "E-Arr-Access", node, th,
                 f"out of bounds: index {i} of an array of length {ptr.length}",
                 _cell(reg, ptr, i))
        return reg.cells[ptr.off + i]

    return ev


def _cell(reg: Region, ptr: Ptr, i: int) -> str:
    return f"{reg.where()} {reg.name}[{ptr.off + i}]"


def _e_partition_id(cfg: Config, node: PartitionId) -> Eval:
    # E-Partition-Id
    shape, fixed, leq, lt = cfg.shape, cfg.fixed, cfg.leq, cfg.lt
    T = shape.threads

    def ev(th: ThreadState, tgt: Perspective) -> Value:
        code = th.persp
        if not lt(code, GRID1) or not leq(tgt, code):
            fail(Stuck, "E-Partition-Id", node, th,
                 f"perspective mismatch: partition_id needs target {tgt} <= code "
                 f"{code} < {GRID1}")
        if not fixed:
            # as printed: π / π' − 1, the same for every thread (errata)
            return cfg.divide(code, tgt) - 1
        # Note (lead's decision, errata "E-Partition-Id"): the index of the target unit
        # holding this thread, counted inside the code perspective:
        # (p · (h/h') + r) div n', r = the thread's position inside one h-unit at h'.
        if tgt.level == code.level:
            r = 0
        elif tgt.level == Level.THREAD:
            r = th.t % T if code.level == Level.BLOCK else th.b * T + th.t % T
        else:  # Grid -> Block
            r = th.b
        ratio = level_ratio(code.level, tgt.level, shape)
        return (th.p * ratio + r) // tgt.n

    return ev


def _arith(op: str) -> Callable[[Value, Value, BinOp, ThreadState], Value]:
    """The int32 / float32 meaning of one binary operator (E-Bop, E-Cmp)."""
    def num(a: Value, b: Value, node: BinOp, th: ThreadState) -> Value:
        if type(a) is int and type(b) is int:
            match op:
                case "+":
                    return wrap32(a + b)
                case "-":
                    return wrap32(a - b)
                case "*":
                    return wrap32(a * b)
                case "/" | "%":
                    if b == 0:
                        fail(Trap, "E-Bop", node, th,
                             f"division by zero: {a} {op} 0")
                    return c_div(a, b) if op == "/" else c_rem(a, b)
        elif type(a) is F32 and type(b) is F32:
            # IEEE results (inf, nan) are values, not errors: no NumPy warnings, even
            # when a caller steps threads outside Machine's errstate
            with np.errstate(all="ignore"):
                match op:
                    case "+":
                        return a + b
                    case "-":
                        return a - b
                    case "*":
                        return a * b
                    case "/":
                        return a / b
                    case "%":
                        return cast(F32, np.fmod(a, b))  # float32 in, float32 out
        fail(Stuck, "E-Bop", node, th, f"type mismatch: {show_value(a)} {op} "
             f"{show_value(b)}")
    return num


# the operands' types are checked first (`_e_cmp`): equal, and not arrays
_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


def _e_bop(cfg: Config, node: BinOp, op: str, left: Expr, right: Expr) -> Eval:
    fl, fr = compile_expr(cfg, left), compile_expr(cfg, right)
    if op in ("&&", "||"):
        return _e_logic(cfg, node, op, fl, fr)
    if op in _CMP:
        return _e_cmp(node, op, fl, fr)
    if op == "+":
        return _e_add(node, fl, fr)
    num = _arith(op)

    def ev(th: ThreadState, tgt: Perspective) -> Value:  # E-Bop
        return num(fl(th, tgt), fr(th, tgt), node, th)

    return ev


def _e_add(node: BinOp, fl: Eval, fr: Eval) -> Eval:
    num = _arith("+")

    def ev(th: ThreadState, tgt: Perspective) -> Value:
        # E-Bop (fast path for int + int)
        a = fl(th, tgt)
        b = fr(th, tgt)
        if type(a) is int and type(b) is int:
            v = a + b
            return v if -2147483648 <= v <= 2147483647 else wrap32(v)
        if type(a) is Ptr and type(b) is int:  # pointer offset (runtime form)
            return a.offset(b)
        return num(a, b, node, th)

    return ev


def _e_fma(cfg: Config, node: Fma, a: Expr, b: Expr, c: Expr) -> Eval:
    fa, fb, fc = compile_expr(cfg, a), compile_expr(cfg, b), compile_expr(cfg, c)

    def ev(th: ThreadState, tgt: Perspective) -> Value:
        # E-Fma (extension): a * b + c rounded once (fma32.py)
        x, y, z = fa(th, tgt), fb(th, tgt), fc(th, tgt)
        if not (type(x) is F32 and type(y) is F32 and type(z) is F32):
            fail(Stuck, "E-Fma", node, th, f"type mismatch: fma({show_value(x)}, "
                 f"{show_value(y)}, {show_value(z)})")
        return fma32(x, y, z)

    return ev


def _e_cmp(node: BinOp, op: str, fl: Eval, fr: Eval) -> Eval:
    cmp = _CMP[op]
    ordered = op not in ("==", "!=")

    def ev(th: ThreadState, tgt: Perspective) -> Value:  # E-Cmp
        a = fl(th, tgt)
        b = fr(th, tgt)
        ta, tb = type(a), type(b)
        if ta is not tb or (ordered and ta is bool) or ta is Ptr:
            fail(Stuck, "E-Cmp", node, th,
                 f"type mismatch: {show_value(a)} {op} {show_value(b)}")
        return bool(cmp(a, b))

    return ev


def _e_logic(cfg: Config, node: BinOp, op: str, fl: Eval, fr: Eval) -> Eval:
    # Note: E-Bop evaluates both operands; `fixed` short-circuits like C, so that a
    # trap in the right operand is not reached when C would not evaluate it (errata,
    # "&& and || short-circuit").
    short = cfg.fixed
    is_and = op == "&&"

    def ev(th: ThreadState, tgt: Perspective) -> Value:  # E-Bop on bool
        a = fl(th, tgt)
        if type(a) is not bool:
            fail(Stuck, "E-Bop", node, th, f"type mismatch: {op} on {show_value(a)}")
        if short and a is not is_and:
            return a
        b = fr(th, tgt)
        if type(b) is not bool:
            fail(Stuck, "E-Bop", node, th, f"type mismatch: {op} on {show_value(b)}")
        return (a and b) if is_and else (a or b)

    return ev


def _e_unop(cfg: Config, node: UnOp, op: str, operand: Expr) -> Eval:
    f = compile_expr(cfg, operand)

    def ev(th: ThreadState, tgt: Perspective) -> Value:
        # E-Unop (extension, errata "T-Bop/T-Cmp extensions")
        v = f(th, tgt)
        if op == "-" and type(v) is int:
            return wrap32(-v)
        if op == "-" and type(v) is F32:
            return -v
        if op == "!" and type(v) is bool:
            return not v
        fail(Stuck, "E-Unop", node, th, f"type mismatch: {op}{show_value(v)}")

    return ev
