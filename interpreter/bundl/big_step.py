"""Big-step Bundl: all B × T threads in lockstep, vectorised with NumPy masks.

The same programs and the same meaning as the small-step semantics (Appendix A.3 of the
Prism paper, seed 004) under `--rules fixed`, for one schedule: every thread runs each
statement together with the other threads of its perspective, and divergence (if,
while, split, claim) is a mask of active lanes. Perspectives are static per program
point, so π is one value and only p varies per lane. Used by the compiler's
differential tests; it must agree with small-step round-robin on race-free programs
(tests/bundl/test_big_small.py).

Conventions (paper -> Python):
  t, b, p            -> `self.tid`, `self.bid`, `self.P` (vectors over all lanes)
  π                  -> `self.persp`   (scalar: static per program point)
  η (scalars)        -> `self.env[x] = Var(vec, persp, type)` (vec over all lanes)
  ⟨l, n⟩             -> `VPtr(storage, off, length, extent)` (vectors over all lanes)
  σ, Σ, local arrays -> `self.store[storage]`: one NumPy array per allocation; a Shared
                        array holds B blocks' copies, a Local one N threads' copies
  init/dec/wait      -> a completeness check: all size(π) threads of a unit arrive
                        together, else the small-step run would deadlock
Each expression closure `f(idx, tgt)` evaluates on the active lanes `idx` and counts
len(idx) evaluated expressions (the benchmark's unit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gpusem.calculus.bundl.ast import (
    Alloc,
    ArrAssign,
    Assign,
    AsyncMemcpy,
    AsyncPartition,
    BaseType,
    Call,
    Claim,
    Decl,
    Destruct,
    Free,
    Group,
    If,
    Lower,
    Memcpy,
    MemKind,
    Partition,
    Program,
    Seq,
    Skip,
    Split,
    SyncDec,
    SyncInit,
    SyncWait,
    While,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    THREAD1,
    Level,
    MachineShape,
    align_to,
)
from gpusem.calculus.bundl.perspective import (
    destruct as persp_destruct,
)
from gpusem.calculus.bundl.perspective import (
    size as persp_size,
)
from gpusem.calculus.errors import BadInput, BudgetExhausted, Deadlock, Stuck, Trap
from gpusem.interpreter.bundl.big_expr import DTYPE, ExprCompiler, VPtr, lane_error
from gpusem.interpreter.bundl.machine import Outcome
from gpusem.typing_rules.bundl.context import rule_set


@dataclass
class Var:
    vec: object  # np.ndarray over all lanes, or VPtr
    persp: object
    type: object


class BigStep:
    def __init__(self, prog: Program, shape: MachineShape, max_steps: int):
        self.prog, self.shape, self.max_steps = prog, shape, max_steps
        self.rules = rule_set("fixed")
        N = shape.blocks * shape.threads
        self.N = N
        self.tid = np.arange(N, dtype=np.int64)
        self.bid = self.tid // shape.threads
        self.P = np.zeros(N, dtype=np.int64)
        self.unit = np.zeros(N, dtype=np.int64)
        self.persp = GRID1
        self.env: dict[str, Var] = {}
        self.store: list[np.ndarray] = []
        self.store_kind: dict[int, MemKind] = {}
        self.globals: dict[str, Var] = {}
        self.fns = {f.name: f for f in prog.fns}
        self.steps = 0
        self.exprs = [0]
        self.psi: dict = {}
        self.deferred: list[list] = []  # Φ: one FIFO per enclosing async_partition
        self.ex = ExprCompiler(self)
        for g in prog.globals:
            self._global(g)

    def leq(self, a, b) -> bool:
        return self.rules.leq(a, b, self.shape)

    # ------------------------------------------------------------------ memory
    def _global(self, g) -> None:
        from gpusem.calculus.bundl.ast import ArrayType, Iota

        if g.init is None:
            vals = [0] * g.size
        elif isinstance(g.init, Iota):
            vals = list(range(g.size))
        else:
            vals = [x.value for x in g.init]
            if len(vals) != g.size:
                raise BadInput(f"{g.span}: {g.name} has {g.size} elements but "
                               f"{len(vals)} initial values")
        self.store.append(np.array(vals, dtype=DTYPE[g.elem]))
        self.store_kind[len(self.store) - 1] = MemKind.GLOBAL
        n = self.N
        ptr = VPtr(len(self.store) - 1, np.zeros(n, np.int64),
                   np.full(n, g.size, np.int64), np.full(n, g.size, np.int64))
        self.globals[g.name] = Var(ptr, GRID1, ArrayType(g.elem, MemKind.GLOBAL))

    def lookup(self, name: str, node, idx):
        v = self.env.get(name)
        if v is None:
            v = self.globals.get(name)
            if v is None:
                lane_error(self, Stuck, "E-Var", node, idx, f"unbound variable: {name}")
        return v

    def memory(self) -> dict[str, list]:
        out = {}
        for g in self.prog.globals:
            arr = self.store[self.globals[g.name].vec.storage]
            conv = {BaseType.BOOL: bool, BaseType.FLOAT: float}.get(g.elem, int)
            out[g.name] = [conv(v) for v in arr]
        return out

    # -------------------------------------------------------------- statements
    def run(self, s, idx) -> None:
        if idx.size == 0:
            return
        self.steps += idx.size
        if self.steps > self.max_steps:
            raise BudgetExhausted(f"step budget exhausted: {self.max_steps} lane-steps",
                                  rule="S-Program")
        EXEC[type(s)](self, s, idx)

    def x_seq(self, s: Seq, idx):  # S-Seq-First / S-Seq-Done, in lockstep
        for st in s.stmts:
            self.run(st, idx)

    def x_skip(self, s, idx):
        pass

    def _scoped(self, name: str, var: Var, body, idx) -> None:
        old = self.env.get(name)
        self.env[name] = var
        try:
            self.run(body, idx)
        finally:
            if old is None:
                self.env.pop(name, None)
            else:
                self.env[name] = old

    def x_decl(self, s: Decl, idx):  # S-Decl
        tgt = s.persp
        self._require(self.leq(tgt, self.persp), "S-Decl", s, idx,
                      f"perspective mismatch: declaring {s.name}: {tgt} is not <= "
                      f"{self.persp}")
        v = self._typed(self.ex.compile(s.init)(idx, tgt), s.type, "S-Decl", s, idx)
        vec = np.zeros(self.N, dtype=v.dtype)
        vec[idx] = v
        self._scoped(s.name, Var(vec, tgt, s.type), s.body, idx)

    def x_assn(self, s: Assign, idx):  # S-Assn
        var = self.lookup(s.name, s, idx)
        self._require(self.leq(var.persp, self.persp), "S-Assn", s, idx,
                      f"perspective mismatch: writing {s.name}: {var.persp} is not <= "
                      f"{self.persp}")
        if isinstance(var.vec, VPtr):
            lane_error(self, Stuck, "S-Assn", s, idx,
                       f"type mismatch: {s.name} is an array")
        v = self.ex.compile(s.value)(idx, var.persp)
        var.vec[idx] = self._typed(v, var.type, "S-Assn", s, idx)

    def x_arr_assn(self, s: ArrAssign, idx):  # S-Arr-Assn
        if idx.size > 1 and self.ex.reads_memory(s):
            # Note: a statement that reads memory and writes it can race (e.g.
            # `A[A[1]] = v` at grid[1]). A round-robin round runs it thread by thread,
            # so lane j sees the writes of lanes i < j. Evaluate vectorised, and fall
            # back to lane-by-lane when some lane read a cell an earlier lane writes.
            self.ex.log = []
            try:
                plan = self._arr_assn(s, idx, commit=False)
            except Trap:
                plan = None
            finally:
                log, self.ex.log = self.ex.log, None
            if plan is None or _conflict(plan[0], plan[1], idx, log,
                                         self.store[plan[0]].size):
                for lane in idx:
                    self._arr_assn(s, idx[lane == idx])
                return
            self.store[plan[0]][plan[1]] = plan[2]
            return
        self._arr_assn(s, idx)

    def _arr_assn(self, s: ArrAssign, idx, commit: bool = True):
        ptr, apersp = self.ex.ptr(s.array, "S-Arr-Assn")(idx, self.persp)
        i = self._typed(self.ex.compile(s.index)(idx, self.persp), BaseType.INT,
                        "S-Arr-Assn", s, idx).astype(np.int64)
        self._require(self.leq(apersp, self.persp), "S-Arr-Assn", s, idx,
                      f"perspective mismatch: writing an array at {apersp} from code "
                      f"at {self.persp} (write down needs data <= code)")
        self.ex.check_shared(ptr, s, idx, "S-Arr-Assn-Shared")
        cells = self.ex.bounds(ptr, i, s, idx, "S-Arr-Assn")
        elem = next(k for k, d in DTYPE.items()
                    if np.dtype(d) == self.store[ptr.storage].dtype)
        v = self._typed(self.ex.compile(s.value)(idx, apersp), elem, "S-Arr-Assn", s,
                        idx)
        if not commit:
            return ptr.storage, cells, v
        self.store[ptr.storage][cells] = v

    def x_if(self, s: If, idx):  # S-If-True / S-If-False
        c = self._typed(self.ex.compile(s.cond)(idx, self.persp), BaseType.BOOL,
                        "S-If", s, idx)
        self.run(s.then, idx[c])
        self.run(s.orelse, idx[~c])

    def x_while(self, s: While, idx):  # S-While, unrolled per lockstep iteration
        cond = self.ex.compile(s.cond)
        while idx.size:
            self.steps += idx.size
            idx = idx[self._typed(cond(idx, self.persp), BaseType.BOOL, "S-If", s,
                                  idx)]
            self.run(s.body, idx)

    def _narrow(self, persp, p_new, unit_new, body, idx) -> None:
        old = self.persp, self.P[idx].copy(), self.unit[idx].copy()
        self.persp = persp
        self.P[idx] = p_new
        self.unit[idx] = unit_new
        try:
            self.run(body, idx)
        finally:
            self.persp = old[0]
            self.P[idx] = old[1]
            self.unit[idx] = old[2]

    def x_split(self, s: Split, idx):  # S-Split-Left / -Right / -None
        h, n = self.persp.level, self.persp.n
        self._require(align_to(s.n1, s.n2, n), "S-Split", s, idx,
                      f"perspective mismatch: split({s.n1}, {s.n2}) does not align to "
                      f"{self.persp}")
        p = self.P[idx]
        left, right = idx[p < s.n1], idx[(p >= s.n1) & (p < s.n1 + s.n2)]
        from gpusem.calculus.bundl.perspective import Perspective
        if left.size:
            self._narrow(Perspective(h, s.n1), self.P[left], self.unit[left] * 3 + 1,
                         s.left, left)
        if right.size:
            self._narrow(Perspective(h, s.n2), self.P[right] - s.n1,
                         self.unit[right] * 3 + 2, s.right, right)

    def x_group(self, s: Group, idx):  # S-Group
        from gpusem.calculus.bundl.perspective import Perspective
        if type(s.body) is Skip:
            return
        self._require(s.q > 0 and self.persp.n % s.q == 0, "S-Group", s, idx,
                      f"perspective mismatch: group {s.q} needs a code perspective "
                      f"(h, {s.q}·n), code is at {self.persp}")
        n = self.persp.n // s.q
        p = self.P[idx]
        self._narrow(Perspective(self.persp.level, n), p % n,
                     self.unit[idx] * (s.q + 1) + p // n, s.body, idx)

    def x_destruct(self, s: Destruct, idx):  # S-Destruct-Block / -Grid
        if type(s.body) is Skip:
            self._require(not self.P[idx].any(), "S-Destruct-Done", s, idx,
                          "perspective mismatch: destruct needs p = 0")
            return
        ok = self.persp in (BLOCK1, GRID1) and not self.P[idx].any()
        self._require(ok, "S-Destruct-Block" if self.persp.level == Level.BLOCK else
                      "S-Destruct-Grid", s, idx, "perspective mismatch: destruct needs "
                      f"{BLOCK1} or {GRID1} with p = 0, code is at {self.persp}")
        inner = persp_destruct(self.persp, self.shape)
        p = (self.tid[idx] % self.shape.threads if self.persp == BLOCK1
             else self.bid[idx] % self.shape.blocks)
        self._narrow(inner, p, self.unit[idx], s.body, idx)

    # ----------------------------------------------- data perspectives and sync
    def _sync(self, s, idx) -> None:
        """init_ψ; …; dec_ψ; wait_ψ in lockstep: every thread of each unit must be
        here, or the small-step wait would never open (a deadlock)."""
        size = persp_size(self.persp, self.shape)
        _, counts = np.unique(self.unit[idx], return_counts=True)
        if (counts != size).any():
            err = Deadlock(f"deadlock: {int(counts.min())} of {size} threads of a unit "
                           f"reach the barrier of {type(s).__name__.lower()}",
                           rule="S-Sync-Wait-Spin", span=s.span)
            i = idx[0]
            err.thread = (int(self.tid[i]), int(self.bid[i]), int(self.P[i]))
            raise err

    def _renamed(self, s, x: str, persp, idx, piece=None) -> Var:
        var = self.lookup(x, s, idx)
        ptr = var.vec
        rule = "S-" + type(s).__name__
        if not isinstance(ptr, VPtr):
            lane_error(self, Stuck, rule, s, idx, f"type mismatch: {x} is not an array")
        if not isinstance(s, AsyncPartition):  # T-Partition / T-Claim / T-Lower
            local = self.store_kind.get(ptr.storage) is MemKind.LOCAL
            self._require(var.persp == self.persp and not local, rule, s, idx,
                          f"perspective mismatch: {x} lives at {var.persp}"
                          f"{' in Local memory' if local else ''}, code is at "
                          f"{self.persp}")
        if piece is not None:
            k, chunk = piece
            i = k * chunk
            ptr = VPtr(ptr.storage, ptr.off + i, ptr.length - i, chunk)
        return Var(ptr, persp, var.type)

    def x_partition(self, s: Partition, idx):  # S-Partition (fixed)
        from gpusem.calculus.bundl.perspective import Perspective
        x = self.lookup(s.source, s, idx)
        n = self.persp.n
        self._require(x.persp == self.persp and s.by > 0 and n % s.by == 0,
                      "S-Partition", s, idx, f"perspective mismatch: partition of "
                      f"{s.source} at {x.persp} by {s.by} from code at {self.persp}")
        k = self.P[idx] // (n // s.by)
        chunk = x.vec.extent[idx] // s.by
        full_k = np.zeros(self.N, np.int64)
        full_c = np.zeros(self.N, np.int64)
        full_k[idx], full_c[idx] = k, chunk
        y = self._renamed(s, s.source, Perspective(self.persp.level, n // s.by), idx,
                          (full_k, full_c))
        self._sync(s, idx)
        self._scoped(s.target, y, s.body, idx)

    def x_claim(self, s: Claim, idx):  # S-Claim (fixed: the first n' units run s)
        from gpusem.calculus.bundl.perspective import Perspective
        n = self.persp.n
        self._require(s.at > 0 and n % s.at == 0, "S-Claim", s, idx,
                      f"perspective mismatch: claim at {s.at} from code at "
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

    def x_lower(self, s: Lower, idx):  # S-Lower
        self._require(self.persp.n == 1 and self.persp.level != Level.THREAD, "S-Lower",
                      s, idx, "perspective mismatch: lower needs ↓π defined, code is "
                      f"at {self.persp}")
        y = self._renamed(s, s.source, persp_destruct(self.persp, self.shape), idx)
        self._sync(s, idx)
        self._scoped(s.target, y, s.body, idx)

    def x_sync(self, s, idx):
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
                err.thread = (int(self.tid[idx[0]]), int(self.bid[idx[0]]),
                              int(self.P[idx[0]]))
                raise err
            else:
                self.psi.pop(key, None)  # the next init starts a new generation

    def x_free(self, s: Free, idx):  # S-Free (the memory bound is checked statically)
        pass

    def x_alloc(self, s: Alloc, idx):  # S-Alloc-Local / -Shared / -Global (fixed)
        from gpusem.calculus.bundl.ast import ArrayType
        n, N = s.size, self.N
        if s.mem is MemKind.SHARED:
            self._require(self.persp == BLOCK1, "S-Alloc-Shared", s, idx,
                          f"perspective mismatch: S-Alloc-Shared needs code at "
                          f"{BLOCK1}, code is at {self.persp}")
            owners, persp = self.bid, BLOCK1
        elif s.mem is MemKind.LOCAL:
            owners, persp = self.tid, self.persp
        else:  # once per unit of the code perspective
            _, inv = np.unique(self.unit, return_inverse=True)
            owners, persp = inv.astype(np.int64), self.persp
        count = int(owners.max()) + 1
        self.store.append(np.zeros(count * n, dtype=DTYPE[s.elem]))
        self.store_kind[len(self.store) - 1] = s.mem
        ptr = VPtr(len(self.store) - 1, owners * n, np.full(N, n, np.int64),
                   np.full(N, n, np.int64))
        self._scoped(s.name, Var(ptr, persp, ArrayType(s.elem, s.mem)), s.body, idx)

    def x_memcpy(self, s: Memcpy, idx):  # S-Memcpy (fixed: element-wise)
        d, r = self.lookup(s.dst, s, idx), self.lookup(s.src, s, idx)
        self._require(self.leq(d.persp, self.persp) and self.leq(self.persp, r.persp),
                      "S-Memcpy", s, idx, "perspective mismatch: memcpy")
        dp, rp = d.vec, r.vec
        dst, src = self.store[dp.storage], self.store[rp.storage]
        for lane in idx:
            k = int(min(dp.length[lane], rp.length[lane]))
            a, b = int(dp.off[lane]), int(rp.off[lane])
            dst[a:a + k] = src[b:b + k]
        self.exprs[0] += idx.size

    def x_async(self, s: AsyncPartition, idx):  # S-Async-Partition-Congr/-Unwind/-Done
        self._require(self.persp == THREAD1, "S-Async-Partition-Congr", s, idx,
                      f"perspective mismatch: needs {THREAD1}, code is at {self.persp}")
        from gpusem.calculus.bundl.ast import ArrayType, AsyncType
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

    def x_async_memcpy(self, s: AsyncMemcpy, idx):  # S-Async-Memcpy
        self._require(self.persp == THREAD1 and self.deferred, "S-Async-Memcpy", s, idx,
                      "perspective mismatch: async_memcpy needs thread[1] inside "
                      "async_partition")
        self.deferred[-1].append((Memcpy(s.dst, s.src, s.span), idx.copy()))

    def x_call(self, s: Call, idx):  # S-Function-Call (fixed: the body's own η)
        fn = self.fns.get(s.fn)
        self._require(fn is not None and fn.persp == self.persp and
                      len(fn.params) == len(s.args), "S-Function-Call", s, idx,
                      f"perspective mismatch: cannot call {s.fn} from {self.persp}")
        new = {}
        for prm, arg in zip(fn.params, s.args):
            v = self.ex.value(arg, idx, prm.persp)
            new[prm.name] = Var(v, prm.persp, prm.type)
        saved, self.env = self.env, new
        try:
            self.run(fn.body, idx)
        finally:
            self.env = saved

    def _typed(self, v, want, rule, node, idx):
        """The dynamic type check of small-step's `_check_value`."""
        if not isinstance(want, BaseType) or v.dtype != np.dtype(DTYPE[want]):
            lane_error(self, Stuck, rule, node, idx, f"type mismatch: expected "
                       f"{getattr(want, 'value', want)}, got {v.dtype}")
        return v

    def _require(self, cond, rule, node, idx, message):
        if not cond:
            lane_error(self, Stuck, rule, node, idx, message)


def _conflict(storage: int, cells, lanes, log, size: int) -> bool:
    """Whether some lane read a cell of `storage` that a lower lane writes."""
    first = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, cells, lanes)
    return any(st == storage and (first[rc] < rl).any() for st, rl, rc in log)


EXEC = {
    Seq: BigStep.x_seq, Skip: BigStep.x_skip, Decl: BigStep.x_decl,
    Assign: BigStep.x_assn, ArrAssign: BigStep.x_arr_assn, If: BigStep.x_if,
    While: BigStep.x_while, Split: BigStep.x_split, Group: BigStep.x_group,
    Destruct: BigStep.x_destruct, Partition: BigStep.x_partition,
    Claim: BigStep.x_claim, Lower: BigStep.x_lower, SyncInit: BigStep.x_sync,
    SyncDec: BigStep.x_sync, SyncWait: BigStep.x_sync, Free: BigStep.x_free,
    Alloc: BigStep.x_alloc, Memcpy: BigStep.x_memcpy, AsyncPartition: BigStep.x_async,
    AsyncMemcpy: BigStep.x_async_memcpy, Call: BigStep.x_call,
}


def run_big_step(prog: Program, max_steps: int = 100_000_000, rules: str = "fixed", *,
                 blocks: int | None = None, threads: int | None = None) -> Outcome:
    """Evaluate `prog` in lockstep; an Outcome like `run_program`'s (steps counts
    lane-statements; `exprs` counts evaluated expressions, one per lane)."""
    if rule_set(rules).name != "fixed":
        raise BadInput("big-step implements --rules fixed only (use the small-step "
                       "interpreter for --rules paper)")
    B = blocks if blocks is not None else prog.machine.blocks
    T = threads if threads is not None else prog.machine.threads
    if B <= 0 or T <= 0:
        raise BadInput(f"machine size out of range: blocks={B}, threads={T}")
    bs = BigStep(prog, MachineShape(B, T), max_steps)
    kind, err = "terminated", None
    with np.errstate(all="ignore"):
        try:
            bs.run(prog.main, np.arange(bs.N, dtype=np.int64))
        except (Stuck, Trap) as e:
            kind, err = "stuck", e
        except Deadlock as e:
            kind, err = "deadlock", e
        except BudgetExhausted as e:
            kind, err = "budget", e
    out = Outcome(kind, bs.memory(), bs.steps)
    out.exprs = bs.exprs[0]
    if err is not None:
        out.error, out.rule, out.message = err, err.rule, err.message
        out.thread = getattr(err, "thread", None)
        out.trap = isinstance(err, Trap)
    return out
