"""Big-step Bundl, part 2: data perspectives, memory, synchronisation, asynchrony and
calls (Appendix A.3.3-A.3.6 of the Prism paper, seed 004), in lockstep over all lanes.

The rules S-Partition, S-Claim, S-Lower, init/dec/wait, S-Free, S-Alloc-*, S-Memcpy,
S-Async-Partition-*, S-Async-Memcpy and S-Function-Call as methods of `DataRules`, a
base class of `big_step.BigStep`: the machine, its driver and the rules of A.3.2 and
control flow are there (same conventions). `Var` is a name's binding over all lanes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from gpusem.calculus.bundl.ast import (
    Alloc,
    ArrayType,
    AsyncMemcpy,
    AsyncPartition,
    Call,
    Claim,
    FnDef,
    Free,
    Lower,
    Memcpy,
    MemKind,
    Partition,
    Stmt,
    SyncDec,
    SyncInit,
    SyncWait,
    Type,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    THREAD1,
    Level,
    MachineShape,
    Perspective,
)
from gpusem.calculus.bundl.perspective import (
    destruct as persp_destruct,
)
from gpusem.calculus.bundl.perspective import (
    size as persp_size,
)
from gpusem.calculus.errors import Deadlock, Stuck, Trap
from gpusem.interpreter.bundl.big_expr import (
    DTYPE,
    ExprCompiler,
    Idx,
    Vec,
    VPtr,
    lane_error,
)
from gpusem.interpreter.bundl.values import located
from gpusem.typing_rules.bundl.context import RuleSet


@dataclass
class Var:
    vec: Vec | VPtr  # one value per lane, or ⟨l, n⟩ per lane for an array
    persp: Perspective
    type: Type


class DataRules:
    """The rules of A.3.3-A.3.6 for `BigStep`, which sets the state and provides the
    helpers declared here (declarations only: they add nothing at run time)."""

    N: int
    shape: MachineShape
    rules: RuleSet
    persp: Perspective
    tid: Idx
    bid: Idx
    P: Idx
    unit: Idx
    env: dict[str, Var]
    store: list[Vec]
    store_kind: dict[int, MemKind]
    fns: dict[str, FnDef]
    exprs: list[int]
    psi: dict[tuple[str, int], int]
    deferred: list[list[tuple[Memcpy, Idx]]]  # Φ: one FIFO per async_partition
    ex: ExprCompiler
    lookup: Callable[[str, object, Idx], Var]
    leq: Callable[[Perspective, Perspective], bool]
    run: Callable[[Stmt, Idx], None]
    _require: Callable[[object, str, object, Idx, str | Callable[[], str]], None]
    _scoped: Callable[[str, Var, Stmt, Idx], None]
    _narrow: Callable[[Perspective, Idx, Idx, Stmt, Idx], None]

    def _sync(self, s: Partition | Claim | Lower, idx: Idx) -> None:
        """init_ψ; …; dec_ψ; wait_ψ in lockstep: every thread of each unit must be
        here, or the small-step wait would never open (a deadlock)."""
        size = persp_size(self.persp, self.shape)
        _, counts = np.unique(self.unit[idx], return_counts=True)
        if (counts != size).any():
            err = Deadlock(f"deadlock: {int(counts.min())} of {size} threads of a unit "
                           f"reach the barrier of {type(s).__name__.lower()}",
                           rule="S-Sync-Wait-Spin", span=s.span)
            i = idx[0]
            located(err).thread = (int(self.tid[i]), int(self.bid[i]), int(self.P[i]))
            raise err

    def _renamed(self, s: Partition | Claim | Lower | AsyncPartition, x: str,
                 persp: Perspective, idx: Idx,
                 piece: tuple[Idx, Idx] | None = None) -> Var:
        var = self.lookup(x, s, idx)
        ptr = var.vec
        rule = "S-" + type(s).__name__
        if not isinstance(ptr, VPtr):
            lane_error(self, Stuck, rule, s, idx, f"type mismatch: {x} is not an array")
        if not isinstance(s, AsyncPartition):  # T-Partition / T-Claim / T-Lower
            local = self.store_kind.get(ptr.storage) is MemKind.LOCAL
            self._require(var.persp == self.persp and not local, rule, s, idx,
                          lambda: f"perspective mismatch: {x} lives at {var.persp}"
                          f"{' in Local memory' if local else ''}, code is at "
                          f"{self.persp}")
        if piece is not None:
            k, chunk = piece
            i = k * chunk
            ptr = VPtr(ptr.storage, ptr.off + i, ptr.length - i, chunk)
        return Var(ptr, persp, var.type)

    def x_partition(self, s: Partition, idx: Idx) -> None:  # S-Partition (fixed)
        from gpusem.calculus.bundl.perspective import Perspective
        if s.offset is not None:
            return self.x_partition_offset(s, idx)
        x = self.lookup(s.source, s, idx)
        n = self.persp.n
        self._require(x.persp == self.persp and s.by > 0 and n % s.by == 0,
                      "S-Partition", s, idx,
                      lambda: f"perspective mismatch: partition of {s.source} at "
                              f"{x.persp} by {s.by} from code at {self.persp}")
        if not isinstance(x.vec, VPtr):  # small-step's rename_var says the same
            lane_error(self, Stuck, "S-Partition", s, idx,
                       f"type mismatch: {s.source} is not an array")
        k = self.P[idx] // (n // s.by)
        chunk = x.vec.extent[idx] // s.by
        full_k = np.zeros(self.N, np.int64)
        full_c = np.zeros(self.N, np.int64)
        full_k[idx], full_c[idx] = k, chunk
        y = self._renamed(s, s.source, Perspective(self.persp.level, n // s.by), idx,
                          (full_k, full_c))
        self._sync(s, idx)
        self._scoped(s.target, y, s.body, idx)

    def x_partition_offset(self, s: Partition, idx: Idx) -> None:
        # S-Partition-Offset (our extension; small_step_data.s_partition_offset):
        # each lane's offset e, evaluated at the piece's perspective (h, n/c)
        from gpusem.calculus.bundl.perspective import Perspective
        rule, n = "S-Partition-Offset", self.persp.n
        self._require(s.by > 0 and n % s.by == 0, rule, s, idx,
                      lambda: f"perspective mismatch: partition of {s.source} by "
                              f"{s.by} from code at {self.persp}")
        piece = Perspective(self.persp.level, n // s.by)
        x = self.lookup(s.source, s, idx)
        if not isinstance(x.vec, VPtr):
            lane_error(self, Stuck, rule, s, idx,
                       f"type mismatch: {s.source} is not an array")
        y = self._renamed(s, s.source, piece, idx)
        assert s.offset is not None and isinstance(y.vec, VPtr)  # checked above
        code = self.persp
        self.persp = piece  # Γ ⊢^(h,n/c) e : int
        try:
            off = self.ex.compile(s.offset)(idx, piece).astype(np.int64)
        finally:
            self.persp = code
        bad = (off < 0) | (off > y.vec.length[idx])
        if bad.any():
            lane_error(self, Trap, rule, s, idx[bad],
                       f"out of bounds: partition offset {int(off[bad][0])} outside "
                       f"{s.source} (length {int(y.vec.length[idx][bad][0])})")
        full = np.zeros(self.N, np.int64)
        full[idx] = off
        ptr = VPtr(y.vec.storage, y.vec.off + full, y.vec.length - full,
                   np.maximum(y.vec.extent - full, 0))
        self._sync(s, idx)
        self._scoped(s.target, Var(ptr, piece, y.type), s.body, idx)

    def x_claim(self, s: Claim, idx: Idx) -> None:
        # S-Claim (fixed: the first n' units run s)
        from gpusem.calculus.bundl.perspective import Perspective
        n = self.persp.n
        self._require(s.at > 0 and n % s.at == 0, "S-Claim", s, idx,
                      lambda: f"perspective mismatch: claim at {s.at} from code at "
                      f"{self.persp}")
        inner = Perspective(self.persp.level, s.at)
        y = self._renamed(s, s.source, inner, idx)
        self._sync(s, idx)
        sub = idx[self.P[idx] < s.at]
        if sub.size:
            old = self.env.get(s.target)
            self.env[s.target] = y
            try:
                self._narrow(inner, self.P[sub], self.unit[sub] * 3 + 1, s.body, sub)
            finally:
                self.env.pop(s.target) if old is None else self.env.__setitem__(
                    s.target, old)

    def x_lower(self, s: Lower, idx: Idx) -> None:  # S-Lower
        self._require(self.persp.n == 1 and self.persp.level != Level.THREAD, "S-Lower",
                      s, idx, lambda: "perspective mismatch: lower needs ↓π defined, "
                                      f"code is at {self.persp}")
        y = self._renamed(s, s.source, persp_destruct(self.persp, self.shape), idx)
        self._sync(s, idx)
        self._scoped(s.target, y, s.body, idx)

    def x_sync(self, s: SyncInit | SyncDec | SyncWait, idx: Idx) -> None:
        """init / dec / wait written by hand (runtime forms), per unit of π: in lockstep
        the k lanes of a unit run each form together (S-Sync-Init-Zero/-Nonzero,
        S-Sync-Dec k times, S-Sync-Wait-Done or a deadlock)."""
        units, counts = np.unique(self.unit[idx], return_counts=True)
        size = persp_size(self.persp, self.shape)
        for u, k in zip(units.tolist(), counts.tolist()):
            key = (s.label, u)
            c = self.psi.get(key, 0)
            if isinstance(s, SyncInit):
                self.psi[key] = c or size
            elif isinstance(s, SyncDec):
                if c < k:
                    lane_error(self, Stuck, "S-Sync-Dec", s, idx,
                               f"sync underflow: dec {s.label} with counter {c} by {k} "
                               f"threads")
                self.psi[key] = c - k
            elif c:
                err = Deadlock(f"deadlock: wait {s.label} with counter {c}",
                               rule="S-Sync-Wait-Spin", span=s.span)
                located(err).thread = (int(self.tid[idx[0]]), int(self.bid[idx[0]]),
                                       int(self.P[idx[0]]))
                raise err
            else:
                self.psi.pop(key, None)  # the next init starts a new generation

    def x_free(self, s: Free, idx: Idx) -> None:
        # S-Free (the memory bound is checked statically)
        pass

    def x_alloc(self, s: Alloc, idx: Idx) -> None:
        # S-Alloc-Local / -Shared / -Global (fixed)
        n, N = s.size, self.N
        if s.mem is MemKind.SHARED:
            self._require(self.persp == BLOCK1, "S-Alloc-Shared", s, idx,
                          lambda: f"perspective mismatch: S-Alloc-Shared needs code at "
                          f"{BLOCK1}, code is at {self.persp}")
            owners, persp = self.bid, BLOCK1
        elif s.mem is MemKind.LOCAL:
            owners, persp = self.tid, self.persp
            if s.persp is not None:  # S-Alloc-Local-At (our extension)
                self._require(self.leq(s.persp, self.persp), "S-Alloc-Local-At", s,
                              idx, lambda: f"perspective mismatch: declaring {s.name} "
                                           f"at {s.persp} from code at {self.persp}")
                persp = s.persp
        else:  # once per unit of the code perspective
            _, inv = np.unique(self.unit, return_inverse=True)
            owners, persp = inv.astype(np.int64), self.persp
        count = int(owners.max()) + 1
        self.store.append(np.zeros(count * n, dtype=DTYPE[s.elem]))
        self.store_kind[len(self.store) - 1] = s.mem
        ptr = VPtr(len(self.store) - 1, owners * n, np.full(N, n, np.int64),
                   np.full(N, n, np.int64))
        self._scoped(s.name, Var(ptr, persp, ArrayType(s.elem, s.mem)), s.body, idx)

    def x_memcpy(self, s: Memcpy, idx: Idx) -> None:  # S-Memcpy (fixed: element-wise)
        d, r = self.lookup(s.dst, s, idx), self.lookup(s.src, s, idx)
        dp, rp = d.vec, r.vec
        if not (isinstance(dp, VPtr) and isinstance(rp, VPtr)):  # as small-step's
            lane_error(self, Stuck, "S-Memcpy", s, idx,
                       "type mismatch: memcpy needs two arrays")
        self._require(self.leq(d.persp, self.persp) and self.leq(self.persp, r.persp),
                      "S-Memcpy", s, idx, "perspective mismatch: memcpy")
        dst, src = self.store[dp.storage], self.store[rp.storage]
        for lane in idx:
            k = int(min(dp.length[lane], rp.length[lane]))
            a, b = int(dp.off[lane]), int(rp.off[lane])
            dst[a:a + k] = src[b:b + k]
        self.exprs[0] += idx.size

    def x_async(self, s: AsyncPartition, idx: Idx) -> None:
        # S-Async-Partition-Congr/-Unwind/-Done
        self._require(self.persp == THREAD1, "S-Async-Partition-Congr", s, idx,
                      lambda: f"perspective mismatch: needs {THREAD1}, code is at "
                              f"{self.persp}")
        from gpusem.calculus.bundl.ast import AsyncType
        y = self._renamed(s, s.source, THREAD1, idx)
        if isinstance(y.type, ArrayType):
            y = Var(y.vec, y.persp, AsyncType(y.type))
        self.deferred.append([])
        old = self.env.get(s.target)
        self.env[s.target] = y
        try:
            self.run(s.body, idx)
            for st, lanes in self.deferred[-1]:  # Φ(φ), per thread, FIFO
                self.run(st, lanes)
        finally:
            self.deferred.pop()
            self.env.pop(s.target) if old is None else self.env.__setitem__(
                s.target, old)

    def x_async_memcpy(self, s: AsyncMemcpy, idx: Idx) -> None:  # S-Async-Memcpy
        self._require(self.persp == THREAD1 and self.deferred, "S-Async-Memcpy", s, idx,
                      "perspective mismatch: async_memcpy needs thread[1] inside "
                      "async_partition")
        self.deferred[-1].append((Memcpy(s.dst, s.src, s.span), idx.copy()))

    def _all_lanes(self, ptr: VPtr, idx: Idx) -> VPtr:
        """⟨l, n⟩ on the active lanes `idx`, as a binding over all lanes."""
        full = [np.zeros(self.N, np.int64) for _ in range(3)]
        for vec, part in zip(full, (ptr.off, ptr.length, ptr.extent), strict=True):
            vec[idx] = part
        return VPtr(ptr.storage, *full)

    def x_call(self, s: Call, idx: Idx) -> None:
        # S-Function-Call (fixed: the body's own η)
        fn = self.fns.get(s.fn)
        self._require(fn is not None and fn.persp == self.persp and
                      len(fn.params) == len(s.args), "S-Function-Call", s, idx,
                      lambda: f"perspective mismatch: cannot call {s.fn} from "
                              f"{self.persp}")
        assert fn is not None  # `_require` raised otherwise
        new: dict[str, Var] = {}
        for prm, arg in zip(fn.params, s.args):
            if isinstance(prm.type, ArrayType):  # passed, not read (as small-step)
                ptr, apersp = self.ex.ptr(arg, "S-Function-Call")(idx, self.persp)
                self._require(apersp == prm.persp, "S-Function-Call", s, idx,
                              f"perspective mismatch: {prm.name} of {s.fn} is a "
                              f"pointer at {prm.persp}; the argument lives at {apersp}")
                new[prm.name] = Var(self._all_lanes(ptr, idx), prm.persp, prm.type)
                continue
            # ⊢^π_π: at the caller's perspective, ambient and target (S-Function-Call)
            v = self.ex.value(arg, idx, self.persp)
            new[prm.name] = Var(v, prm.persp, prm.type)
        saved, self.env = self.env, new
        try:
            self.run(fn.body, idx)
        finally:
            self.env = saved
