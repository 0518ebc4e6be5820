"""The sequential reading of GPU IR: seq⟦p⟧ (Exo-GPU Section 2.3), computed with NumPy.

Parallel loops (`cuda_tasks`, `cuda_threads`) run as ordinary loops in order,
`CudaDeviceFunction` / `CudaWarps` are plain blocks, synchronisation statements
(Fence, Arrive, Await) are no-ops, and an instruction call runs its sequential
behaviour (calculus/gpuir/instructions.py) on NumPy views of its argument windows.
This is the value a correct parallel execution must reproduce.

Exactness: every value lives in its variable's precision (float32 for f32, int32 for
i32, ...); each arithmetic step is one NumPy operation in that precision (never a
float64 intermediate, no FMA); integer arithmetic wraps, `/` on integers truncates
toward zero as in C, integer division by zero traps.

Conventions: σ (control environment) -> `self.env`; the store (data variables) ->
`self.vars`; a loop body run for many iterations at once -> "lanes".

Note (vectorisation): a loop whose iterations provably do not interact is run once
with its iterator bound to a NumPy vector of all its values ("lanes"): its body may
only write variables it allocates itself (one copy per lane) or cells indexed
injectively by the iterator, and may only read the cells it writes at the same index;
no instruction calls, windows or guards on the iterator. Each lane then performs the
same float32 operations in the same order as the sequential loop, so the results are
bit-identical (tests/gpuir/test_seq.py compares against `vectorise=False`).

Note: allocations start zero-filled; reading memory before writing it is undefined in
the parallel program, zero makes the sequential reading deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Mapping, assert_never, cast

import numpy as np
from gpusem.calculus import budgets
from gpusem.calculus.budgets import MemoryGuard
from gpusem.calculus.errors import BadInput, BudgetExhausted, Trap
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import (
    CValue,
    affine,
    bvars,
    cdiv,
    compile_c,
    cvars,
    eval_b,
    eval_c,
)
from gpusem.calculus.gpuir.instructions import INSTRUCTIONS
from gpusem.calculus.gpuir.walk import data_reads
from gpusem.calculus.span import Span

DTYPES: dict[A.DataType, type[np.generic]] = {
    A.DataType.F32: np.float32, A.DataType.F64: np.float64,
    A.DataType.F16: np.float16, A.DataType.I32: np.int32,
    A.DataType.UI16: np.uint16, A.DataType.I8: np.int8, A.DataType.UI8: np.uint8}

DEFAULT_MAX_STEPS = 200_000_000

# A data value: a NumPy scalar of its variable's dtype, or an array of them (one per
# lane). NumPy's ufuncs are typed to return Any, so this is Any too.
Value = Any


def run_sequential(proc: A.Proc, defines: Mapping[str, int],
                   inputs: Mapping[str, np.ndarray], *, vectorise: bool = True,
                   max_steps: int = DEFAULT_MAX_STEPS,
                   poison: bool = False) -> dict[str, np.ndarray]:
    """seq⟦proc⟧ on `inputs` (data parameters; missing ones start zero-filled).
    Returns the final value of every data parameter. Allocations start zero-filled
    (our choice: the paper leaves fresh memory unspecified, CUDA leaves it
    uninitialised); `poison`: they start as NaN (floats) or -123456789 (ints)
    instead, so that comparing the two runs tells whether a program's outputs depend
    on memory it never wrote (`reads_uninitialised`)."""
    ev = _Evaluator(proc, dict(defines), vectorise, max_steps)
    ev.poison = poison
    ev.bind_params(inputs)
    with np.errstate(all="ignore"):
        ev.block(proc.body)
    return {p.name: ev.vars[p.name].array.copy() for p in proc.data_params}


def reads_uninitialised(proc: A.Proc, defines: Mapping[str, int],
                        inputs: Mapping[str, np.ndarray],
                        expected: Mapping[str, np.ndarray]) -> str | None:
    """The first output (`name[index]`) that changes when fresh allocations start
    poisoned instead of zero-filled (`expected`: the zero-filled run): the program
    reads memory it never wrote, whose value CUDA leaves undefined. None if none."""
    poisoned = run_sequential(proc, defines, inputs, poison=True)
    for name, want in expected.items():
        got = poisoned[name]
        same = (want == got) | (np.isnan(want) & np.isnan(got)) if np.issubdtype(
            want.dtype, np.floating) else want == got
        if not np.all(same):
            idx = tuple(int(i) for i in np.argwhere(~same)[0])
            return f"{name}{list(idx)}"
    return None


def _check_size(name: str, shape: tuple[int, ...], span: Span) -> None:
    """One allocation (with its lanes) within the elements budget: the static Limits
    check bounds an array once; a vectorised loop allocates it once per lane."""
    n = 1
    for k in shape:
        n *= k
    if n > budgets.current().elements:
        raise budgets.over("elements", f"{name} would hold {n} elements", span,
                           rule="seq")


@dataclass
class _Var:
    array: np.ndarray
    depth: int       # lane axes the variable has (allocated inside that many batches)
    dtype: type[np.generic]


class _Evaluator:
    def __init__(self, proc: A.Proc, defines: dict[str, int], vectorise: bool,
                 max_steps: int):
        self.proc = proc
        self.env: dict[str, object] = dict(defines)
        self.defines = dict(defines)
        self.vars: dict[str, _Var] = {}
        self.lanes: list[int] = []   # batch axis sizes, newest first
        self.vectorise = vectorise
        self.steps = 0
        self.max_steps = max_steps
        self.guard = MemoryGuard(proc.span.file)
        self.iterations = budgets.current().iterations
        self._batchable: dict[int, bool] = {}
        # each control expression of the proc compiled once a run (ctrl.compile_c),
        # by the node's id; the node is kept so that its id is not reused
        self._compiled: dict[int, tuple[A.CExpr, Callable[..., CValue]]] = {}
        self.poison = False

    def ev(self, c: A.CExpr) -> CValue:
        """eval_c(c, self.env), through c's compiled closure."""
        hit = self._compiled.get(id(c))
        if hit is None:
            hit = self._compiled[id(c)] = (c, compile_c(c))
        return hit[1](self.env)

    def fresh(self, shape: tuple[int, ...], dt: type[np.generic]) -> np.ndarray:
        """A new allocation: zeros, or the poison value (run_sequential)."""
        if not self.poison:
            return np.zeros(shape, dt)
        bad = np.nan if np.issubdtype(dt, np.floating) else -123456789
        return np.full(shape, bad, dt)

    # ------------------------------------------------------------ parameters
    def bind_params(self, inputs: Mapping[str, np.ndarray]) -> None:
        known = {p.name for p in self.proc.data_params}
        for name in inputs:
            if name not in known:
                raise BadInput(f"unknown input: {name} is not a data parameter of "
                               f"{self.proc.name}")
        for cp in self.proc.ctrl_params:
            if cp.name not in self.env:
                raise BadInput(f"missing definition: {cp.name} (pass -D "
                               f"{cp.name}=...)", span=cp.span)
        for p in self.proc.data_params:
            shape = tuple(int(eval_c(c, self.env)) for c in p.shape)
            if any(k < 0 for k in shape):
                raise BadInput(f"bad definition: {p.name} has a negative extent {shape}",
                               span=p.span)
            _check_size(p.name, shape, p.span)
            dt = DTYPES[p.dtype]
            if p.name in inputs:
                arr = np.array(inputs[p.name]).astype(dt)
                if arr.shape != shape:
                    raise BadInput(f"bad input: {p.name} has shape {arr.shape}, "
                                   f"expected {shape}")
            else:
                arr = np.zeros(shape, dt)
            self.vars[p.name] = _Var(arr, 0, dt)

    # ------------------------------------------------------------ statements
    def tick(self, span: Span) -> None:
        n = 1
        for k in self.lanes:
            n *= k
        self.steps += n
        if self.steps > self.max_steps:
            raise BudgetExhausted(f"step budget exhausted: more than {self.max_steps} "
                                  "statement executions", rule="seq", span=span)
        self.guard.tick(span, "seq")

    def block(self, body: tuple[A.Stmt, ...]) -> None:
        bound: list[str] = []
        try:
            for s in body:
                self.stmt(s)
                if isinstance(s, (A.Alloc, A.WindowStmt)):
                    bound.append(s.name)
        finally:
            for n in bound:
                self.vars.pop(n, None)

    def stmt(self, s: A.Stmt) -> None:
        self.tick(s.span)
        match s:
            case A.For():
                self.loop(s)
            case A.CudaDeviceFunction(body=b) | A.CudaWarps(body=b):
                self.block(b)
            case A.If(cond=c, body=b):
                if eval_b(c, self.env):
                    self.block(b)
            case A.Assign(name=n, idx=idx, rhs=e):
                self.write(s, n, idx, e, reduce=False)
            case A.Reduce(name=n, idx=idx, rhs=e):
                self.write(s, n, idx, e, reduce=True)
            case A.Alloc(name=n, dtype=t, shape=sh):
                shape = tuple(int(eval_c(c, self.env)) for c in sh)
                if any(k < 0 for k in shape):
                    raise Trap(f"bad allocation: {n} has a negative extent {shape}",
                               rule="seq", span=s.span)
                dt = DTYPES[t]
                _check_size(n, shape, s.span)
                self.vars[n] = _Var(self.fresh(tuple(self.lanes) + shape, dt),
                                    len(self.lanes), dt)
            case A.WindowStmt(name=n, source=src):
                v = self.vars[src.name]
                self.vars[n] = _Var(self.view(src, s.span), 0, v.dtype)
            case A.InstrCall():
                self.instr(s)
            case (A.BarrierAlloc() | A.Free() | A.Fence() | A.Arrive() | A.Await()):
                pass  # synchronisation is invisible to the sequential reading
            case _:
                assert_never(s)

    def loop(self, f: A.For) -> None:
        lo, hi = self.ev(f.lo), self.ev(f.hi)
        if isinstance(lo, np.ndarray) or isinstance(hi, np.ndarray):
            raise AssertionError("loop bounds vary across lanes")  # excluded by _ok
        if hi <= lo:
            return
        lanes = 1
        for k in self.lanes:
            lanes *= k
        if (hi - lo) * lanes > self.iterations:  # before any lane array is made
            raise BudgetExhausted(
                f"iteration budget exhausted: {f.var} runs {hi - lo} iterations on "
                f"{lanes} lane(s), more than the iterations budget of "
                f"{self.iterations} ({budgets.FLAGS['iterations']})",
                rule="seq", span=f.span)
        if self.vectorise and hi - lo > 1 and self.batchable(f):
            shape = (hi - lo,) + (1,) * len(self.lanes)
            self.lanes.insert(0, hi - lo)
            self.env[f.var] = np.arange(lo, hi, dtype=np.int64).reshape(shape)
            try:
                self.block(f.body)
            finally:
                self.lanes.pop(0)
                del self.env[f.var]
            return
        try:
            for y in range(lo, hi):
                self.env[f.var] = y
                self.block(f.body)
        finally:
            self.env.pop(f.var, None)

    # ------------------------------------------------------------ data access
    def index(self, v: _Var, name: str, idx: tuple[CValue, ...],
              span: Span) -> tuple[CValue, ...]:
        """The full NumPy index of `name[idx]` in the current lanes, bounds-checked."""
        shape = v.array.shape[v.depth:]
        if len(idx) != len(shape):
            raise Trap(f"shape mismatch: {name} has {len(shape)} dimension(s), "
                       f"indexed with {len(idx)}", rule="seq", span=span)
        if not self.lanes:  # the common scalar case, kept cheap
            for d, i in enumerate(idx):
                if not 0 <= i < shape[d]:
                    raise Trap(f"out of bounds: {name} index {i} in dimension {d} "
                               f"(extent {shape[d]})", rule="seq", span=span)
            return tuple(idx)
        out = []
        for d, i in enumerate(idx):
            if np.any((np.asarray(i) < 0) | (np.asarray(i) >= shape[d])):
                bad = np.asarray(i)[(np.asarray(i) < 0) | (np.asarray(i) >= shape[d])]
                raise Trap(f"out of bounds: {name} index {int(bad.flat[0])} in "
                           f"dimension "
                           f"{d} (extent {shape[d]})", rule="seq", span=span)
            out.append(i)
        k = len(self.lanes)
        lane_ix = []
        for j in range(k - v.depth, k):  # the variable's lane axes: the oldest ones
            grid = np.arange(self.lanes[j]).reshape(
                (1,) * j + (self.lanes[j],) + (1,) * (k - j - 1))
            lane_ix.append(grid)
        return tuple(lane_ix) + tuple(out)

    def read(self, r: A.DRead, dtype: type[np.generic], span: Span) -> Value:
        v = self.vars[r.name]
        # points only: the front end rejects a window read in an expression
        idx = tuple(self.ev(cast(A.WPoint, c).index) for c in r.coords)
        full = self.index(v, r.name, idx, span)
        val = v.array[full] if full else v.array
        return val.astype(dtype, copy=False) if val.dtype != dtype else val

    def write(self, s: A.Assign | A.Reduce, name: str, idx: tuple[A.CExpr, ...],
              e: A.DExpr, reduce: bool) -> None:
        v = self.vars[name]
        value = self.dexpr(e, v.dtype, s.span)
        full = self.index(v, name, tuple(self.ev(c) for c in idx), s.span)
        if self.lanes:
            shape = tuple(self.lanes)
            full = tuple(np.broadcast_to(ix, shape) for ix in full) if full else ()
            value = np.broadcast_to(np.asarray(value, v.dtype), shape)
        if reduce:
            old = v.array[full] if full else v.array[()]
            value = self._arith("+", np.asarray(old), np.asarray(value, v.dtype),
                                s.span)
        if full:
            v.array[full] = value
        else:
            v.array[()] = value

    def dexpr(self, e: A.DExpr, dtype: type[np.generic], span: Span) -> Value:
        match e:
            case A.DConst(value=c):
                return np.asarray(c).astype(dtype)[()]
            case A.DRead():
                return self.read(e, dtype, span)
            case A.DBin(op=op, lhs=l, rhs=r):
                a, b = self.dexpr(l, dtype, span), self.dexpr(r, dtype, span)
                return self._arith(op, a, b, span)
            case A.DNeg(arg=a):
                return np.negative(self.dexpr(a, dtype, span))
        raise AssertionError(e)

    def _arith(self, op: str, a: Value, b: Value, span: Span) -> Value:
        if op == "+":
            return np.add(a, b)
        if op == "-":
            return np.subtract(a, b)
        if op == "*":
            return np.multiply(a, b)
        if np.issubdtype(np.asarray(a).dtype, np.integer):
            if np.any(np.asarray(b) == 0):
                raise Trap("division by zero: integer / by 0", rule="seq", span=span)
            q = cdiv(np.asarray(a, np.int64), np.asarray(b, np.int64))
            return np.asarray(q).astype(np.asarray(a).dtype)
        return np.divide(a, b)

    # ------------------------------------------------------------ instructions
    def view(self, r: A.DRead, span: Span) -> np.ndarray:
        """A NumPy view of window `r` (points drop their dimension)."""
        v = self.vars[r.name]
        if v.depth:
            raise AssertionError("windows of lane-private variables")  # excluded by _ok
        shape = v.array.shape
        coords = r.coords or tuple(A.WInterval(None, None) for _ in shape)
        if len(coords) != len(shape):
            raise Trap(f"shape mismatch: {r.name} has {len(shape)} dimension(s), "
                       f"windowed with {len(coords)}", rule="seq", span=span)
        ix: list[int | slice] = []
        for d, c in enumerate(coords):
            if isinstance(c, A.WPoint):
                i = int(self.ev(c.index))
                if not 0 <= i < shape[d]:
                    raise Trap(f"out of bounds: {r.name} index {i} in dimension {d} "
                               f"(extent {shape[d]})", rule="seq", span=span)
                ix.append(i)
            else:
                lo = 0 if c.lo is None else int(self.ev(c.lo))
                hi = shape[d] if c.hi is None else int(self.ev(c.hi))
                if not 0 <= lo <= hi <= shape[d]:
                    raise Trap(f"out of bounds: {r.name} window {lo}:{hi} in dimension "
                               f"{d} (extent {shape[d]})", rule="seq", span=span)
                ix.append(slice(lo, hi))
        if all(isinstance(i, int) for i in ix):  # points only: NumPy would copy the
            pts = cast(list[int], ix)
            cell = v.array[tuple(slice(i, i + 1) for i in pts)] if ix else v.array[...]
            return cell.reshape(())  # cell out; a 0-d view aliases it, as windows do
        window: np.ndarray = v.array[tuple(ix)]
        return window

    def instr(self, s: A.InstrCall) -> None:
        g = INSTRUCTIONS.get(s.instr)
        if g is None:
            raise BadInput(f"unknown instruction: {s.instr}", span=s.span)
        if len(s.args) != len(g.params):
            raise BadInput(f"bad call: {g.name} takes {len(g.params)} "
                           "argument(s)", span=s.span)
        kwargs: dict[str, object] = {}
        for p, a in zip(g.params, s.args):
            # the argument kinds the front end's InstrCall rule demands: a data
            # parameter takes a window, a control parameter a control value
            if (p.kind == "data") != isinstance(a, A.DRead):
                want = "a window x[...]" if p.kind == "data" else "a control value"
                raise BadInput(f"bad argument: {g.name} argument {p.name} must be "
                               f"{want}", span=s.span)
            match a:
                case A.DRead():
                    kwargs[p.name] = self.view(a, s.span)
                case A.DConst(value=c):
                    kwargs[p.name] = c
                case _:
                    kwargs[p.name] = int(eval_c(a, self.env))
        try:
            g.behaviour(**kwargs)
        except (ValueError, IndexError, TypeError) as err:
            raise Trap(f"bad instruction arguments: {g.name}: {err}", rule="seq",
                       span=s.span) from None

    # ------------------------------------------------------------ vectorisation
    def batchable(self, f: A.For) -> bool:
        key = id(f)
        if key not in self._batchable:
            self._batchable[key] = _Batch(f, self.defines).ok()
        return self._batchable[key]


class _Batch:
    """Decides whether the iterations of loop `f` can run as lanes (module Note)."""

    def __init__(self, f: A.For, consts: Mapping[str, int] | None = None):
        self.f = f
        self.consts = dict(consts or {})
        self.private: set[str] = set()
        self.inner: dict[str, int | None] = {}  # iterators bound inside: trip count
        self.writes: dict[str, list[tuple[A.CExpr, ...]]] = {}
        self.reads: dict[str, list[tuple[A.WCoord, ...]]] = {}

    def ok(self) -> bool:
        if not self.scan(self.f.body):
            return False
        y = self.f.var
        for name, idxs in self.writes.items():
            if name in self.private:
                continue
            first = idxs[0]
            if any(i != first for i in idxs) or not self.injective(first, y):
                return False
            for coords in self.reads.get(name, []):
                pts = tuple(c.index if isinstance(c, A.WPoint) else None
                            for c in coords)
                if pts != first:
                    return False
        return True

    def injective(self, idx: tuple[A.CExpr, ...], y: str) -> bool:
        """Distinct iterations write distinct cells: some coordinate is a*y + rest
        where `rest` does not depend on y and, over one iteration, spans less than
        |a| (inner iterators with known trip counts: `x[task * 128 + tid]`)."""
        for c in idx:
            a = affine(c, self.consts)
            if a is None or a.coeff(y) == 0:
                continue
            spread: int | None = 0
            for v, k in a.coeffs:
                if v in self.inner:
                    trips = self.inner[v]
                    spread = None if trips is None or spread is None else \
                        spread + abs(k) * max(trips - 1, 0)
            if spread is not None and spread < abs(a.coeff(y)):
                return True
        return False

    def scan(self, body: tuple[A.Stmt, ...]) -> bool:
        y = self.f.var
        for s in body:
            match s:
                case A.Assign(name=n, idx=idx, rhs=e) | \
                        A.Reduce(name=n, idx=idx, rhs=e):
                    self.writes.setdefault(n, []).append(idx)
                    if isinstance(s, A.Reduce):
                        pts = tuple(A.WPoint(c) for c in idx)
                        self.reads.setdefault(n, []).append(pts)
                    for r in data_reads(e):
                        if any(isinstance(c, A.WInterval) for c in r.coords):
                            return False
                        self.reads.setdefault(r.name, []).append(r.coords)
                case A.Alloc(name=n, shape=sh):
                    if any(y in cvars(c) for c in sh):
                        return False  # one extent per lane: not one NumPy array
                    self.private.add(n)
                case A.For(var=v, lo=lo, hi=hi, body=b):
                    if y in cvars(lo) | cvars(hi):
                        return False
                    la, ha = affine(lo, self.consts), affine(hi, self.consts)
                    self.inner[v] = ha.const - la.const if la is not None \
                        and ha is not None and la.is_const and ha.is_const else None
                    if not self.scan(b):
                        return False
                case A.If(cond=c, body=b):
                    if y in bvars(c):
                        return False
                    if not self.scan(b):
                        return False
                case A.CudaWarps(body=b) | A.CudaDeviceFunction(body=b):
                    if not self.scan(b):
                        return False
                case A.BarrierAlloc() | A.Fence() | A.Arrive() | A.Await() | A.Free():
                    pass
                case _:
                    return False  # instruction calls, windows
        return True
