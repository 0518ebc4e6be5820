"""The reference semantics of CKernel: the sequential reading in lock-step phases.

A well-formed kernel (typing_rules/ckernel) is race-free by construction: a thread
writes only its own cells, reads another thread's shared cell only after a barrier
ordered the write, and atomics commute. So every schedule of the CUDA threads ends in
the memory of ONE reading: each statement run by all threads before the next, threads
masked off by the branches they did not take (E-If), a barrier a no-op between phases
(E-Sync), a shuffle reading its source lane's value at that same statement
(E-Shfl: all lanes are converged, Shfl-Converged), each atomic cell the commutative
reduction of its operands (E-Atomic). One NumPy array per local holds every thread's
value; `values.py` is C's arithmetic on them.

The run also records which blocks any thread entered (`Run.reached`, block paths):
equivalence modulo inputs (fuzz/ckernel/emi.py) rewrites only blocks no thread reached
with these inputs, so every variant must end in the same memory.

Conventions: `mask` the threads that run a statement; `env` the scopes of locals;
`mem` the parameters (flat) and `smem` the shared arrays (one row per block).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, assert_never

import numpy as np

from gpusem.calculus.ckernel import ast as A
from gpusem.interpreter.ckernel import values as V
from gpusem.interpreter.ckernel.inputs import initial_memory

Arr = V.Arr
Path = tuple[int, ...]


@dataclass
class Run:
    """Final memory of every parameter, and the block paths any thread entered."""

    memory: dict[str, Arr]
    reached: set[Path] = field(default_factory=set)


class _Machine:
    def __init__(self, k: A.Kernel, memory: dict[str, Arr]) -> None:
        self.k = k
        n = k.threads
        self.n = n
        self.gid = np.arange(n, dtype=np.int32)
        self.tid = self.gid % np.int32(k.block)
        self.bid = self.gid // np.int32(k.block)
        self.lane = self.tid & np.int32(31)
        self.mem = memory
        self.smem = {s.name: np.zeros((k.grid, k.block * A.CELLS),
                                      dtype=V.DTYPES[s.ty]) for s in k.shared}
        self.env: list[dict[str, Arr]] = []
        self.reached: set[Path] = {()}

    # ------------------------------------------------------------------ statements
    def block(self, b: A.Block, mask: Arr, path: Path) -> None:
        if mask.any():
            self.reached.add(path)
        self.env.append({})
        for i, s in enumerate(b.stmts):
            self.stmt(s, mask, (*path, i))
        self.env.pop()

    def lookup(self, name: str) -> Arr:
        for scope in reversed(self.env):
            if name in scope:
                return scope[name]
        raise KeyError(name)

    def stmt(self, s: A.Stmt, mask: Arr, path: Path) -> None:
        match s:
            case A.Let(name, _, e):  # E-Let
                self.env[-1][name] = self.expr(e)
            case A.Assign(name, e):  # E-Assign: the masked-off threads keep theirs
                for scope in reversed(self.env):
                    if name in scope:
                        scope[name] = np.where(mask, self.expr(e), scope[name])
                        break
            case A.Store(buf, idx, e):  # E-Store
                self.write(buf, idx.slot, self.expr(e), mask)
            case A.VecLoad(names, _, buf, idx):  # E-VecLoad
                base = self.vector_base(buf, len(names), idx)
                for j, name in enumerate(names):
                    self.env[-1][name] = self.mem[buf][base + j]
            case A.VecStore(buf, slot, exprs):  # E-VecStore
                width = len(exprs)
                base = (self.gid * (A.CELLS // width) + slot) * width
                parts = [self.expr(e) for e in exprs]  # make_V(...) before the store
                for j, part in enumerate(parts):
                    self.mem[buf][base[mask] + j] = part[mask]
            case A.If(cond, then, orelse):  # E-If
                c = self.expr(cond) != 0
                self.block(then, mask & c, (*path, 0))
                self.block(orelse, mask & ~c, (*path, 1))
            case A.For(var, trips, _, body):  # E-For
                for it in range(trips):
                    self.env.append({var: np.full(self.n, it, dtype=np.int32)})
                    self.block(body, mask, (*path, 0))
                    self.env.pop()
            case A.Sync():  # E-Sync: race freedom makes the barrier a phase boundary
                pass
            case A.Atomic(op, buf, cell, e):  # E-Atomic
                vals = self.expr(e)[mask]
                if vals.size:
                    self.mem[buf][cell] = V.atomic(op, self.mem[buf][cell], vals)
            case _:
                assert_never(s)

    def write(self, buf: str, slot: int, value: Arr, mask: Arr) -> None:
        if buf in self.smem:
            self.smem[buf][self.bid[mask], self.tid[mask] * A.CELLS + slot] = value[mask]
        else:
            self.mem[buf][self.gid[mask] * A.CELLS + slot] = value[mask]

    def vector_base(self, buf: str, width: int, idx: A.Own | A.Masked) -> Arr:
        if isinstance(idx, A.Own):
            return (self.gid * (A.CELLS // width) + idx.slot) * width
        vectors = self.k.size_of(buf) // width
        return (self.masked(idx.expr, vectors) * width).astype(np.int64)

    def masked(self, e: A.Expr, size: int) -> Arr:
        return (self.expr(e).astype(np.uint64) & np.uint64(size - 1)).astype(np.int64)

    # ------------------------------------------------------------------ expressions
    def load(self, buf: str, idx: A.Index) -> Arr:
        if buf in self.smem:
            row = self.smem[buf]
            match idx:
                case A.Own(slot):
                    return np.asarray(row[self.bid, self.tid * A.CELLS + slot])
                case A.Neighbour(shift, slot):
                    other = (self.tid + np.int32(shift)) & np.int32(self.k.block - 1)
                    return np.asarray(row[self.bid, other * A.CELLS + slot])
            raise AssertionError(idx)
        match idx:
            case A.Own(slot):
                return self.mem[buf][self.gid * A.CELLS + slot]
            case A.Masked(e):
                return self.mem[buf][self.masked(e, self.k.size_of(buf))]
        raise AssertionError(idx)

    def expr(self, e: A.Expr) -> Arr:
        match e:
            case A.Lit(ty, value):
                return V.const(ty, value, self.n)
            case A.Var(name):
                return self.lookup(name)
            case A.Builtin(which):
                return {"tid": self.tid, "bid": self.bid, "gid": self.gid,
                        "lane": self.lane}[which]
            case A.Unary(op, arg, _):
                return V.unary(op, self.expr(arg), arg.ty)
            case A.Binary(op, a, b, _):
                return V.binary(op, self.expr(a), self.expr(b), a.ty)
            case A.DivC(op, a, d, ty):
                return V.divide(op, self.expr(a), d, ty)
            case A.Cast(ty, arg):
                return V.cast(self.expr(arg), ty)
            case A.Select(c, a, b, _):
                return np.where(self.expr(c) != 0, self.expr(a), self.expr(b))
            case A.Load(buf, idx):
                return self.load(buf, idx)
            case A.PtrSelect(c, ba, bb, idx):
                return np.where(self.expr(c) != 0, self.load(ba, idx),
                                self.load(bb, idx))
            case A.Shfl(xor, value, k):  # E-Shfl: every lane of the warp is here
                v = self.expr(value)
                base = self.gid - self.lane
                src = (self.lane ^ np.int32(k)) if xor else (
                    (self.lane + np.int32(k)) & np.int32(31))
                return np.asarray(v[base + src])
            case _:
                assert_never(e)


def run_kernel(k: A.Kernel, memory: dict[str, Arr] | None = None) -> Run:
    """The final memory of a well-formed kernel on its inputs (`initial_memory(k)`
    unless given), and the blocks its threads reached."""
    mem = {name: arr.copy() for name, arr in
           (memory if memory is not None else initial_memory(k)).items()}
    m = _Machine(k, mem)
    m.block(k.body, np.ones(k.threads, dtype=bool), ())
    return Run(m.mem, m.reached)


def outputs(k: A.Kernel, run: Run) -> dict[str, Any]:
    """The parameters a kernel may change (every one but the read-only ones)."""
    return {p.name: run.memory[p.name] for p in k.params if p.mode != "ro"}
