"""Vectorised expression evaluation for the big-step interpreter (Appendix A.3.7 of the
Prism paper, seed 004, over all active lanes at once).

Every E- rule is one closure `f(idx, tgt) -> np.ndarray` over the active lanes `idx`
(int32, float32 or bool arrays: the exact arithmetic of bundl/values, vectorised):
int32 wraps (NumPy's array arithmetic), `/` and `%` truncate like C (computed in int64),
float32 rounds every operation (no float64 intermediates), `&&` / `||` short-circuit per
lane. The perspective checks are the `fixed` ones of bundl/expr_eval; π is one value.
The machine they read (`Lanes`) is `big_step.BigStep`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, cast

import numpy as np
import numpy.typing as npt
from gpusem.calculus.bundl.ast import (
    ArrAssign,
    BaseType,
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
    MachineShape,
    Perspective,
    level_ratio,
)
from gpusem.calculus.bundl.walk import child_exprs
from gpusem.calculus.errors import GpusemError, Stuck, Trap
from gpusem.calculus.fma32 import fma32_vec
from gpusem.calculus.span import NO_SPAN
from gpusem.interpreter.bundl.values import located, wrap32
from gpusem.typing_rules.bundl.context import RuleSet

Idx = npt.NDArray[np.int64]  # lane numbers (the active lanes), or one int per lane
# One value per lane: int32, float32 or bool, as the expression's type says.
Vec = npt.NDArray[Any]

DTYPE = {BaseType.INT: np.int32, BaseType.FLOAT: np.float32, BaseType.BOOL: np.bool_}
I32, F32, BOOL = np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.bool_)
# Reads of memory logged by `ExprCompiler.log`: (storage, lanes, cells).
Read = tuple[int, Idx, Idx]


@dataclass
class VPtr:
    """⟨l, n⟩ per lane: storage number, and offset / length / extent vectors."""

    storage: int
    off: Idx
    length: Idx
    extent: Idx

    def take(self, idx: Idx) -> VPtr:
        return VPtr(self.storage, self.off[idx], self.length[idx], self.extent[idx])


# An expression compiled: its value on the active lanes `idx` for target π'.
LaneEval = Callable[[Idx, Perspective], Vec]
# An array operand compiled: (⟨l, n⟩ on the active lanes, the array's π').
PtrEval = Callable[[Idx, Perspective], tuple[VPtr, Perspective]]


class LaneVar(Protocol):
    """A name's binding over all lanes, as expressions read it (`big_step_data.Var`)."""

    @property
    def vec(self) -> Vec | VPtr: ...

    @property
    def persp(self) -> Perspective: ...


class Lanes(Protocol):
    """The lockstep machine as expressions read it (`big_step.BigStep`)."""

    N: int
    shape: MachineShape
    rules: RuleSet
    persp: Perspective
    tid: Idx
    bid: Idx
    P: Idx
    store: list[Vec]
    store_kind: dict[int, MemKind]
    exprs: list[int]

    def lookup(self, name: str, node: object, idx: Idx) -> LaneVar: ...

    def leq(self, a: Perspective, b: Perspective) -> bool: ...


def lane_error(bs: Lanes, kind: type[GpusemError], rule: str, node: object, idx: Idx,
               message: str, lane: int | np.int64 | None = None) -> NoReturn:
    """Raise `kind` naming the rule, span and the first offending thread (t, b, p)."""
    i = int(idx[0] if lane is None else lane) if len(idx) else 0
    t, b, p = int(bs.tid[i]), int(bs.bid[i]), int(bs.P[i])
    err = kind(f"{message} (thread t={t} b={b} p={p}, perspective {bs.persp})",
               rule=rule, span=getattr(node, "span", NO_SPAN))
    loc = located(err)
    loc.thread, loc.persp, loc.cell = (t, b, p), bs.persp, None
    raise err


class ExprCompiler:
    def __init__(self, bs: Lanes):
        self.bs = bs
        # id(e) -> (e, its closure); ("reads", id(s)) -> (s, `reads_memory(s)`)
        self.cache: dict[int | tuple[str, int], tuple[object, LaneEval | bool]] = {}
        self.log: list[Read] | None = None  # reads, when logging

    def compile(self, e: Expr) -> LaneEval:
        hit = self.cache.get(id(e))
        if hit is None:
            hit = self.cache[id(e)] = (e, self._compile(e))
        return cast(LaneEval, hit[1])  # an id(e) key holds a closure

    def reads_memory(self, s: ArrAssign) -> bool:
        """Whether an array assignment's index or value reads an array."""
        key = ("reads", id(s))
        hit = self.cache.get(key)
        if hit is None:
            hit = self.cache[key] = (s, _has_index(s.index) or _has_index(s.value)
                                     or not isinstance(s.array, Var))
        return cast(bool, hit[1])  # a ("reads", _) key holds a bool

    def value(self, e: Expr, idx: Idx, tgt: Perspective) -> Vec | VPtr:
        """A call argument as a full-lane value: a VPtr for arrays, else a vector."""
        if isinstance(e, Var):
            var = self.bs.lookup(e.name, e, idx)
            if isinstance(var.vec, VPtr):
                return var.vec
        v = self.compile(e)(idx, tgt)
        out = np.zeros(self.bs.N, dtype=v.dtype)
        out[idx] = v
        return out

    def _compile(self, e: Expr) -> LaneEval:
        bs, counter = self.bs, self.bs.exprs
        match e:
            case IntLit(value):  # E-Int
                v = np.int32(wrap32(value))
                return _const(counter, v, I32)
            case FloatLit(value):  # E-Float
                return _const(counter, np.float32(value), F32)
            case BoolLit(value):  # E-Bool
                return _const(counter, bool(value), BOOL)
            case Var(name):  # E-Var (fixed: read up)
                def ev(idx: Idx, tgt: Perspective) -> Vec:
                    counter[0] += idx.size
                    var = bs.lookup(name, e, idx)
                    if not bs.leq(bs.persp, var.persp):
                        lane_error(bs, Stuck, "E-Var", e, idx,
                                   f"perspective mismatch: reading {name} at "
                                   f"{var.persp} from code at {bs.persp} (read up "
                                   f"needs code <= data)")
                    if isinstance(var.vec, VPtr):
                        lane_error(bs, Stuck, "E-Var", e, idx,
                                   f"type mismatch: {name} is an array")
                    return var.vec[idx]
                return ev
            case PartitionId():
                return self._partition_id(e)
            case Index(array, index):
                return self._index(e, array, index)
            case BinOp(op, left, right):
                return self._binop(e, op, self.compile(left), self.compile(right))
            case UnOp(op, operand):
                return self._unop(e, op, self.compile(operand))
            case Fma(a, b, c):
                return self._fma(e, self.compile(a), self.compile(b), self.compile(c))
        raise TypeError(f"not an expression: {e!r}")

    def ptr(self, e: Expr, rule: str) -> PtrEval:
        """(⟨l, n⟩ on the active lanes, the array variable's perspective)."""
        bs = self.bs
        if isinstance(e, Var):
            def var_ptr(idx: Idx, tgt: Perspective) -> tuple[VPtr, Perspective]:
                var = bs.lookup(e.name, e, idx)
                if not isinstance(var.vec, VPtr):
                    lane_error(bs, Stuck, rule, e, idx,
                               f"type mismatch: {e.name} is not an array")
                return var.vec.take(idx), var.persp
            return var_ptr
        if isinstance(e, BinOp) and e.op == "+":
            base, off = self.ptr(e.left, rule), self.compile(e.right)

            def off_ptr(idx: Idx, tgt: Perspective) -> tuple[VPtr, Perspective]:
                p, persp = base(idx, tgt)
                k = _typed(bs, e, idx, off(idx, tgt), I32).astype(np.int64)
                return VPtr(p.storage, p.off + k, p.length - k,
                            np.maximum(p.extent - k, 0)), persp
            return off_ptr
        def not_array(idx: Idx, tgt: Perspective) -> tuple[VPtr, Perspective]:
            # like small-step: stuck when evaluated
            lane_error(bs, Stuck, rule, e, idx, "type mismatch: not an array")
        return not_array

    def bounds(self, ptr: VPtr, i: Idx, node: object, idx: Idx, rule: str) -> Idx:
        """The cell numbers l + i, or a trap naming the first lane out of bounds."""
        bad = (i < 0) | (i >= ptr.length)
        if bad.any():
            j = int(np.argmax(bad))
            lane_error(self.bs, Trap, rule, node, idx,
                       f"out of bounds: index {int(i[j])} of an array of length "
                       f"{int(ptr.length[j])}", lane=idx[j])
        return ptr.off + i

    def check_shared(self, ptr: VPtr, node: object, idx: Idx, rule: str) -> None:
        bs = self.bs
        if self._is_shared(ptr) and not bs.leq(bs.persp, BLOCK1):
            lane_error(bs, Stuck, rule, node, idx, "perspective mismatch: shared "
                       f"memory from code at {bs.persp} (needs <= {BLOCK1})")

    def _is_shared(self, ptr: VPtr) -> bool:
        return self.bs.store_kind.get(ptr.storage) is MemKind.SHARED

    def _index(self, e: Index, array: Expr, index: Expr) -> LaneEval:
        # E-Arr-Access (fixed: read up)
        bs, counter = self.bs, self.bs.exprs
        fa, fi = self.ptr(array, "E-Arr-Access"), self.compile(index)

        def ev(idx: Idx, tgt: Perspective) -> Vec:
            counter[0] += idx.size
            ptr, apersp = fa(idx, tgt)
            i = _typed(bs, e, idx, fi(idx, tgt), I32).astype(np.int64)
            if not bs.leq(bs.persp, apersp):
                lane_error(bs, Stuck, "E-Arr-Access", e, idx,
                           f"perspective mismatch: reading an array at {apersp} from "
                           f"code at {bs.persp} (read up needs code <= data)")
            self.check_shared(ptr, e, idx, "E-Arr-Access-Shared")
            cells = self.bounds(ptr, i, e, idx, "E-Arr-Access")
            if self.log is not None:
                self.log.append((ptr.storage, idx, cells))
            return bs.store[ptr.storage][cells]
        return ev

    def _partition_id(self, e: PartitionId) -> LaneEval:
        # E-Partition-Id (lead's reading; errata)
        bs, counter = self.bs, self.bs.exprs
        T = bs.shape.threads

        def ev(idx: Idx, tgt: Perspective) -> Vec:
            counter[0] += idx.size
            code = bs.persp
            if not (bs.rules.lt(code, GRID1, bs.shape) and bs.leq(tgt, code)):
                lane_error(bs, Stuck, "E-Partition-Id", e, idx,
                           f"perspective mismatch: partition_id needs target {tgt} <= "
                           f"code {code} < {GRID1}")
            r: int | Idx
            if tgt.level == code.level:
                r = 0
            elif tgt.level == Level.THREAD:
                t = bs.tid[idx] % T
                r = t if code.level == Level.BLOCK else bs.bid[idx] * T + t
            else:
                r = bs.bid[idx]
            ratio = level_ratio(code.level, tgt.level, bs.shape)
            return ((bs.P[idx] * ratio + r) // tgt.n).astype(np.int32)
        return ev

    def _binop(self, e: BinOp, op: str, fl: LaneEval, fr: LaneEval) -> LaneEval:
        bs, counter = self.bs, self.bs.exprs
        if op in ("&&", "||"):
            is_and = op == "&&"

            def logic(idx: Idx, tgt: Perspective) -> Vec:
                # E-Bop on bool, short-circuit per lane
                counter[0] += idx.size
                a = _typed(bs, e, idx, fl(idx, tgt), BOOL)
                need = a if is_and else ~a
                out = a.copy()
                if need.any():
                    out[need] = _typed(bs, e, idx[need], fr(idx[need], tgt), BOOL)
                return out
            return logic

        def ev(idx: Idx, tgt: Perspective) -> Vec:  # E-Bop / E-Cmp
            counter[0] += idx.size
            a, b = fl(idx, tgt), fr(idx, tgt)
            if a.dtype != b.dtype:
                lane_error(bs, Stuck, "E-Bop", e, idx,
                           f"type mismatch: {a.dtype} {op} {b.dtype}")
            return _apply(bs, e, idx, op, a, b)
        return ev

    def _fma(self, e: Fma, fa: LaneEval, fb: LaneEval, fc: LaneEval) -> LaneEval:
        bs, counter = self.bs, self.bs.exprs

        def ev(idx: Idx, tgt: Perspective) -> Vec:
            # E-Fma (extension), lane-wise; exact as fma32.fma32
            counter[0] += idx.size
            x, y, z = fa(idx, tgt), fb(idx, tgt), fc(idx, tgt)
            if not x.dtype == y.dtype == z.dtype == F32:
                lane_error(bs, Stuck, "E-Fma", e, idx,
                           f"type mismatch: fma({x.dtype}, {y.dtype}, {z.dtype})")
            return fma32_vec(x, y, z)
        return ev

    def _unop(self, e: UnOp, op: str, f: LaneEval) -> LaneEval:
        bs, counter = self.bs, self.bs.exprs

        def ev(idx: Idx, tgt: Perspective) -> Vec:
            counter[0] += idx.size
            v = f(idx, tgt)
            if op == "-" and v.dtype in (I32, F32):
                return -v
            if op == "!" and v.dtype == BOOL:
                return ~v
            lane_error(bs, Stuck, "E-Unop", e, idx, f"type mismatch: {op}{v.dtype}")
        return ev


def _has_index(e: Expr) -> bool:
    return isinstance(e, Index) or any(_has_index(c) for c in child_exprs(e))


def _const(counter: list[int], v: object, dtype: np.dtype[Any]) -> LaneEval:
    def ev(idx: Idx, tgt: Perspective) -> Vec:
        counter[0] += idx.size
        return np.full(idx.size, v, dtype=dtype)
    return ev


def _typed(bs: Lanes, e: Expr, idx: Idx, v: Vec, dtype: np.dtype[Any]) -> Vec:
    if v.dtype != dtype:
        lane_error(bs, Stuck, "E-Bop", e, idx, f"type mismatch: {v.dtype}, not {dtype}")
    return v


_CMP: dict[str, Callable[[Vec, Vec], Vec]] = {
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "==": np.equal, "!=": np.not_equal}


def _apply(bs: Lanes, e: BinOp, idx: Idx, op: str, a: Vec, b: Vec) -> Vec:
    if op in _CMP:
        if a.dtype == BOOL and op not in ("==", "!="):
            lane_error(bs, Stuck, "E-Cmp", e, idx, f"type mismatch: bool {op} bool")
        return _CMP[op](a, b)
    if a.dtype == BOOL:
        lane_error(bs, Stuck, "E-Bop", e, idx, f"type mismatch: bool {op} bool")
    if a.dtype == F32:
        match op:
            case "+":
                return a + b
            case "-":
                return a - b
            case "*":
                return a * b
            case "/":
                return a / b
            case _:
                return np.fmod(a, b)
    match op:  # int32
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
    zero = b == 0
    if zero.any():
        j = int(np.argmax(zero))
        lane_error(bs, Trap, "E-Bop", e, idx, f"division by zero: {int(a[j])} {op} 0",
                   lane=idx[j])
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    q = np.abs(a64) // np.abs(b64)
    q = np.where((a64 < 0) != (b64 < 0), -q, q)
    if op == "/":
        return q.astype(np.int32)  # INT_MIN / -1 = 2^31 wraps to INT_MIN
    return (a64 - q * b64).astype(np.int32)
