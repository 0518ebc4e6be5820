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

Here: the machine (`BigStep`), its driver `run_big_step`, and the rules of A.3.2 and
control flow (declarations, assignments, if, while, split, group, destruct); the data
rules (A.3.3-A.3.6: partition, claim, lower, sync, memory, async, calls) are in
`big_step_data`, the expressions (A.3.7) in `big_expr`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from gpusem.calculus.budgets import MemoryGuard
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
    GlobalDecl,
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
    Stmt,
    SyncDec,
    SyncInit,
    SyncWait,
    Type,
    While,
)
from gpusem.calculus.bundl.limits import check_limits
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    Level,
    MachineShape,
    Perspective,
    align_to,
)
from gpusem.calculus.bundl.perspective import (
    destruct as persp_destruct,
)
from gpusem.calculus.errors import (
    BadInput,
    BudgetExhausted,
    Deadlock,
    GpusemError,
    Stuck,
    Trap,
)
from gpusem.calculus.span import Span
from gpusem.interpreter.bundl.big_expr import (
    DTYPE,
    ExprCompiler,
    Idx,
    Read,
    Vec,
    VPtr,
    lane_error,
)
from gpusem.interpreter.bundl.big_step_data import DataRules, Var
from gpusem.interpreter.bundl.machine import Outcome
from gpusem.interpreter.bundl.values import GlobalMemory
from gpusem.typing_rules.bundl.context import rule_set


class BigStep(DataRules):
    def __init__(self, prog: Program, shape: MachineShape, max_steps: int):
        self.prog, self.shape, self.max_steps = prog, shape, max_steps
        self.guard = MemoryGuard(prog.span.file)
        self.rules = rule_set("fixed")
        N = shape.blocks * shape.threads
        self.N = N
        self.tid = np.arange(N, dtype=np.int64)
        self.bid = self.tid // shape.threads
        self.P = np.zeros(N, dtype=np.int64)
        self.unit = np.zeros(N, dtype=np.int64)
        self.persp = GRID1
        self.env: dict[str, Var] = {}
        self.store = []
        self.store_kind: dict[int, MemKind] = {}
        self.globals: dict[str, Var] = {}
        self.fns = {f.name: f for f in prog.fns}
        self.steps = 0
        self.exprs = [0]
        self.psi = {}
        self.deferred = []  # Φ: one FIFO per enclosing async_partition
        self.ex = ExprCompiler(self)
        for g in prog.globals:
            self._global(g)

    def leq(self, a: Perspective, b: Perspective) -> bool:
        return self.rules.leq(a, b, self.shape)

    # ------------------------------------------------------------------ memory
    def _global(self, g: GlobalDecl) -> None:
        from gpusem.calculus.bundl.ast import ArrayType, Iota

        vals: list[int | float | bool]
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

    def lookup(self, name: str, node: object, idx: Idx) -> Var:
        v = self.env.get(name)
        if v is None:
            v = self.globals.get(name)
            if v is None:
                lane_error(self, Stuck, "E-Var", node, idx, f"unbound variable: {name}")
        return v

    def memory(self) -> GlobalMemory:
        out: GlobalMemory = {}
        for g in self.prog.globals:
            arr = self.store[cast(VPtr, self.globals[g.name].vec).storage]  # an array
            # bool_ -> bool, int32 -> int, float32 -> float (its value exactly, as
            # float() gives it), in one call for the array instead of one a cell
            out[g.name] = arr.tolist()
        return out

    # -------------------------------------------------------------- statements
    def run(self, s: Stmt, idx: Idx) -> None:
        if idx.size == 0:
            return
        self.steps += idx.size
        if self.steps > self.max_steps:
            raise BudgetExhausted(f"step budget exhausted: {self.max_steps} lane-steps",
                                  rule="S-Program", span=self._at(s))
        self.guard.tick(self._at(s), "S-Program")
        EXEC[type(s)](self, s, idx)

    def _at(self, s: Stmt) -> Span:
        return s.span if s.span.line else self.prog.span

    def x_seq(self, s: Seq, idx: Idx) -> None:  # S-Seq-First / S-Seq-Done, in lockstep
        for st in s.stmts:
            self.run(st, idx)

    def x_skip(self, s: Skip, idx: Idx) -> None:
        pass

    def _scoped(self, name: str, var: Var, body: Stmt, idx: Idx) -> None:
        old = self.env.get(name)
        self.env[name] = var
        try:
            self.run(body, idx)
        finally:
            if old is None:
                self.env.pop(name, None)
            else:
                self.env[name] = old

    def x_decl(self, s: Decl, idx: Idx) -> None:  # S-Decl
        tgt = s.persp
        self._require(self.leq(tgt, self.persp), "S-Decl", s, idx,
                      lambda: f"perspective mismatch: declaring {s.name}: {tgt} is "
                              f"not <= {self.persp}")
        v = self._typed(self.ex.compile(s.init)(idx, tgt), s.type, "S-Decl", s, idx)
        vec = np.zeros(self.N, dtype=v.dtype)
        vec[idx] = v
        self._scoped(s.name, Var(vec, tgt, s.type), s.body, idx)

    def x_assn(self, s: Assign, idx: Idx) -> None:  # S-Assn
        var = self.lookup(s.name, s, idx)
        self._require(self.leq(var.persp, self.persp), "S-Assn", s, idx,
                      lambda: f"perspective mismatch: writing {s.name}: {var.persp} "
                              f"is not <= {self.persp}")
        if isinstance(var.vec, VPtr):
            lane_error(self, Stuck, "S-Assn", s, idx,
                       f"type mismatch: {s.name} is an array")
        v = self.ex.compile(s.value)(idx, var.persp)
        var.vec[idx] = self._typed(v, var.type, "S-Assn", s, idx)

    def x_arr_assn(self, s: ArrAssign, idx: Idx) -> None:  # S-Arr-Assn
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
            assert log is not None  # the list set above
            if plan is None or _conflict(plan[0], plan[1], idx, log,
                                         self.store[plan[0]].size):
                for lane in idx:
                    self._arr_assn(s, idx[lane == idx])
                return
            self.store[plan[0]][plan[1]] = plan[2]
            return
        self._arr_assn(s, idx)

    def _arr_assn(self, s: ArrAssign, idx: Idx,
                  commit: bool = True) -> tuple[int, Idx, Vec] | None:
        ptr, apersp = self.ex.ptr(s.array, "S-Arr-Assn")(idx, self.persp)
        i = self._typed(self.ex.compile(s.index)(idx, self.persp), BaseType.INT,
                        "S-Arr-Assn", s, idx).astype(np.int64)
        self._require(self.leq(apersp, self.persp), "S-Arr-Assn", s, idx,
                      lambda: f"perspective mismatch: writing an array at {apersp} "
                              f"from code at {self.persp} (write down needs data <= "
                              "code)")
        self.ex.check_shared(ptr, s, idx, "S-Arr-Assn-Shared")
        cells = self.ex.bounds(ptr, i, s, idx, "S-Arr-Assn")
        elem = next(k for k, d in DTYPE.items()
                    if np.dtype(d) == self.store[ptr.storage].dtype)
        v = self._typed(self.ex.compile(s.value)(idx, apersp), elem, "S-Arr-Assn", s,
                        idx)
        if not commit:
            return ptr.storage, cells, v
        self.store[ptr.storage][cells] = v
        return None

    def x_if(self, s: If, idx: Idx) -> None:  # S-If-True / S-If-False
        c = self._typed(self.ex.compile(s.cond)(idx, self.persp), BaseType.BOOL,
                        "S-If", s, idx)
        self.run(s.then, idx[c])
        self.run(s.orelse, idx[~c])

    def x_while(self, s: While, idx: Idx) -> None:
        # S-While, unrolled per lockstep iteration
        cond = self.ex.compile(s.cond)
        while idx.size:
            self.steps += idx.size
            idx = idx[self._typed(cond(idx, self.persp), BaseType.BOOL, "S-If", s,
                                  idx)]
            self.run(s.body, idx)

    def _narrow(self, persp: Perspective, p_new: Idx, unit_new: Idx, body: Stmt,
                idx: Idx) -> None:
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

    def x_split(self, s: Split, idx: Idx) -> None:  # S-Split-Left / -Right / -None
        h, n = self.persp.level, self.persp.n
        self._require(align_to(s.n1, s.n2, n), "S-Split", s, idx,
                      lambda: f"perspective mismatch: split({s.n1}, {s.n2}) does not "
                              f"align to {self.persp}")
        p = self.P[idx]
        left, right = idx[p < s.n1], idx[(p >= s.n1) & (p < s.n1 + s.n2)]
        from gpusem.calculus.bundl.perspective import Perspective
        if left.size:
            self._narrow(Perspective(h, s.n1), self.P[left], self.unit[left] * 3 + 1,
                         s.left, left)
        if right.size:
            self._narrow(Perspective(h, s.n2), self.P[right] - s.n1,
                         self.unit[right] * 3 + 2, s.right, right)

    def x_group(self, s: Group, idx: Idx) -> None:  # S-Group
        from gpusem.calculus.bundl.perspective import Perspective
        if type(s.body) is Skip:
            return
        self._require(s.q > 0 and self.persp.n % s.q == 0, "S-Group", s, idx,
                      lambda: f"perspective mismatch: group {s.q} needs a code "
                              f"perspective (h, {s.q}·n), code is at {self.persp}")
        n = self.persp.n // s.q
        p = self.P[idx]
        self._narrow(Perspective(self.persp.level, n), p % n,
                     self.unit[idx] * (s.q + 1) + p // n, s.body, idx)

    def x_destruct(self, s: Destruct, idx: Idx) -> None:  # S-Destruct-Block / -Grid
        if type(s.body) is Skip:
            self._require(not self.P[idx].any(), "S-Destruct-Done", s, idx,
                          "perspective mismatch: destruct needs p = 0")
            return
        ok = self.persp in (BLOCK1, GRID1) and not self.P[idx].any()
        self._require(ok, "S-Destruct-Block" if self.persp.level == Level.BLOCK else
                      "S-Destruct-Grid", s, idx,
                      lambda: f"perspective mismatch: destruct needs {BLOCK1} or "
                              f"{GRID1} with p = 0, code is at {self.persp}")
        inner = persp_destruct(self.persp, self.shape)
        p = (self.tid[idx] % self.shape.threads if self.persp == BLOCK1
             else self.bid[idx] % self.shape.blocks)
        self._narrow(inner, p, self.unit[idx], s.body, idx)

    def _typed(self, v: Vec, want: Type, rule: str, node: object, idx: Idx) -> Vec:
        """The dynamic type check of small-step's `_check_value`."""
        if not isinstance(want, BaseType) or v.dtype != np.dtype(DTYPE[want]):
            lane_error(self, Stuck, rule, node, idx, f"type mismatch: expected "
                       f"{getattr(want, 'value', want)}, got {v.dtype}")
        return v

    def _require(self, cond: object, rule: str, node: object, idx: Idx,
                 message: str | Callable[[], str]) -> None:
        """Stuck under `rule` unless `cond`. A message that names perspectives comes
        as a function, formatted only when the premise fails (issue 31.3: the
        statements that hold formatted it each time they ran)."""
        if not cond:
            lane_error(self, Stuck, rule, node, idx,
                       message if isinstance(message, str) else message())


def _conflict(storage: int, cells: Idx, lanes: Idx, log: list[Read], size: int) -> bool:
    """Whether some lane read a cell of `storage` that a lower lane writes."""
    first = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, cells, lanes)
    return any(st == storage and (first[rc] < rl).any() for st, rl, rc in log)


# The rule for each class of statement (each method annotates the class it takes).
EXEC: dict[type, Callable[[BigStep, Any, Idx], None]] = {
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
    check_limits(prog, blocks, threads)  # B, T and the arrays fit the budgets
    bs = BigStep(prog, MachineShape(B, T), max_steps)
    err: GpusemError | None
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
