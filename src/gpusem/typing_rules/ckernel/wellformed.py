"""Well-formedness of CKernel (calculus/ckernel/ast.py): ⊢ k ok.

A well-formed kernel has one meaning under every schedule and no undefined behaviour
in C or CUDA, so its emitted CUDA must compute what interpreter/ckernel computes:

- types agree (T-*); 16-bit values are promoted by an explicit cast;
- every access is in bounds by construction (the index forms of ast.py);
- race freedom by construction: a thread writes only cells it owns (Store-Own); it
  reads another thread's shared cell only after a `sync` that orders the write, and
  no thread writes that array again in the same phase (Shared-Ordered, Shared-WAR);
  a shared cell is read only once written (Shared-Init); an atomic buffer is touched
  by atomics of one commutative operation only, whose final value is
  schedule-independent (Atomic-Commutes); the old value is never read;
- collectives are converged: `sync` at the top level only (Sync-TopLevel), shuffles
  outside any branch (Shfl-Converged);
- no undefined behaviour: division by a constant that is neither 0 nor -1
  (DivC-Defined), `abs` of a value shifted right (Abs-Defined: never INT_MIN), no
  float -> int conversion (Cast-Defined), shift amounts masked by the emitter.

Conventions: `ctx` holds the scopes of locals (name -> type), whether the statement
is converged (`uniform`) and at the top level (`top`), and the phase state of shared
memory (`Phase`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import assert_never

from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.span import Span

BLOCK_SIZES = (32, 64, 128)
MAX_GRID = 8
MAX_TRIPS = 8


def require(cond: bool, rule: str, span: Span, msg: str) -> None:
    if not cond:
        raise IllTyped(msg, rule=rule, span=span)


@dataclass
class Phase:
    """Shared memory between barriers: the slots each thread has surely written (now
    and before the last barrier), the arrays written and neighbour-read since it."""

    defined: dict[str, set[int]] = field(default_factory=dict)
    defined_before: dict[str, set[int]] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    neighbour_read: set[str] = field(default_factory=set)

    def barrier(self) -> None:
        self.defined_before = {k: set(v) for k, v in self.defined.items()}
        self.written.clear()
        self.neighbour_read.clear()


@dataclass
class Ctx:
    kernel: A.Kernel
    scopes: list[dict[str, str]] = field(default_factory=lambda: [{}])
    loop_vars: set[str] = field(default_factory=set)
    uniform: bool = True
    top: bool = True
    phase: Phase = field(default_factory=Phase)
    atomic_ops: dict[str, str] = field(default_factory=dict)

    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None


def check_kernel(k: A.Kernel) -> None:
    """⊢ k ok, or IllTyped naming the rule and the span (WF-Kernel, T-*, ...)."""
    require(k.block in BLOCK_SIZES, "WF-Kernel", k.span,
            f"bad block size: {k.block} (expected one of {BLOCK_SIZES})")
    require(1 <= k.grid <= MAX_GRID, "WF-Kernel", k.span,
            f"bad grid size: {k.grid} (expected 1..{MAX_GRID})")
    names = [p.name for p in k.params] + [s.name for s in k.shared]
    require(len(set(names)) == len(names), "WF-Kernel", k.span, "duplicate buffer names")
    for p in k.params:
        require(p.ty in A.TYPES and p.mode in A.MODES, "WF-Param", p.span,
                f"bad parameter: {p.name}")
        require(p.mode != "atomic" or p.ty in ("i32", "u32"), "WF-Param", p.span,
                f"bad atomic parameter: {p.name} must be i32 or u32")
    check_block(Ctx(k), k.body)


def check_block(ctx: Ctx, block: A.Block) -> None:
    ctx.scopes.append({})
    for s in block.stmts:
        check_stmt(ctx, s)
    ctx.scopes.pop()


def _declare(ctx: Ctx, name: str, ty: str, span: Span) -> None:
    require(ctx.lookup(name) is None and ctx.kernel.param(name) is None
            and ctx.kernel.shared_array(name) is None and name not in A.BUILTINS,
            "T-Let", span, f"redeclared name: {name}")
    require(ty in A.TYPES, "T-Let", span, f"unknown type: {ty}")
    ctx.scopes[-1][name] = ty


def _nested(ctx: Ctx, block: A.Block, uniform: bool, loop_var: str = "") -> None:
    saved = (ctx.uniform, ctx.top)
    ctx.uniform, ctx.top = ctx.uniform and uniform, ctx.top and uniform
    if loop_var:
        ctx.scopes.append({loop_var: "i32"})
        ctx.loop_vars.add(loop_var)
    check_block(ctx, block)
    if loop_var:
        ctx.scopes.pop()
        ctx.loop_vars.discard(loop_var)
    ctx.uniform, ctx.top = saved


def check_stmt(ctx: Ctx, s: A.Stmt) -> None:
    k = ctx.kernel
    match s:
        case A.Let(name, ty, e):  # T-Let
            require(type_of(ctx, e) == ty, "T-Let", s.span,
                    f"type mismatch: {name} is {ty}, its value {e.ty}")
            _declare(ctx, name, ty, s.span)
        case A.Assign(name, e):  # T-Assign
            local = ctx.lookup(name)
            require(local is not None and name not in ctx.loop_vars, "T-Assign",
                    s.span, f"bad assignment: {name} is not an assignable local")
            require(type_of(ctx, e) == local, "T-Assign", s.span,
                    f"type mismatch: {name} is {local}, its value {e.ty}")
        case A.Store(buf, idx, e):  # Store-Own
            require(_writable(k, buf), "Store-Own", s.span,
                    f"bad store: {buf} is not writable")
            require(0 <= idx.slot < A.CELLS, "Store-Own", s.span,
                    f"bad slot: {idx.slot}")
            require(type_of(ctx, e) == _buf_ty(k, buf), "Store-Own", s.span,
                    f"type mismatch: {buf} holds {_buf_ty(k, buf)}, the value {e.ty}")
            _shared_write(ctx, buf, (idx.slot,), s.span)
        case A.VecLoad(names, ty, buf, idx):  # T-VecLoad
            width = len(names)
            _vector_shape(k, buf, ty, width, s.span)
            p = k.param(buf)
            require(p is not None and p.mode in ("ro", "rw", "rwr"), "T-VecLoad",
                    s.span, f"bad vector load: {buf} is not a readable parameter")
            if isinstance(idx, A.Own):
                require(0 <= idx.slot < A.CELLS // width, "T-VecLoad", s.span,
                        f"bad slot: {idx.slot}")
            else:
                require(p is not None and p.mode == "ro", "Load-Own", s.span,
                        f"bad index: {buf} is written, so read only own cells")
                _masked(ctx, idx)
            for n in names:
                _declare(ctx, n, ty, s.span)
        case A.VecStore(buf, slot, exprs):  # T-VecStore
            width = len(exprs)
            _vector_shape(k, buf, _buf_ty(k, buf), width, s.span)
            require(_writable(k, buf) and k.param(buf) is not None, "Store-Own",
                    s.span, f"bad vector store: {buf} is not a written parameter")
            require(0 <= slot < A.CELLS // width, "Store-Own", s.span,
                    f"bad slot: {slot}")
            for e in exprs:
                require(type_of(ctx, e) == _buf_ty(k, buf), "T-VecStore", s.span,
                        f"type mismatch: {buf} holds {_buf_ty(k, buf)}")
        case A.If(cond, then, orelse):  # T-If
            require(type_of(ctx, cond) == "i32", "T-If", s.span,
                    f"bad condition: {cond.ty} (expected i32)")
            _nested(ctx, then, uniform=False)
            _nested(ctx, orelse, uniform=False)
        case A.For(var, trips, _, body):  # T-For
            require(1 <= trips <= MAX_TRIPS, "T-For", s.span, f"bad trip count: {trips}")
            require(ctx.lookup(var) is None, "T-For", s.span, f"redeclared name: {var}")
            _nested(ctx, body, uniform=True, loop_var=var)
        case A.Sync():  # Sync-TopLevel
            require(ctx.top and len(ctx.scopes) == 2, "Sync-TopLevel", s.span,
                    "bad barrier: sync only at the kernel's top level")
            ctx.phase.barrier()
        case A.Atomic(op, buf, cell, e):  # Atomic-Commutes
            p = k.param(buf)
            require(p is not None and p.mode == "atomic", "Atomic-Commutes", s.span,
                    f"bad atomic: {buf} is not an atomic parameter")
            require(ctx.atomic_ops.setdefault(buf, op) == op, "Atomic-Commutes", s.span,
                    f"mixed atomics: {buf} takes {ctx.atomic_ops[buf]}, not {op}")
            require(0 <= cell < A.ATOMIC_CELLS, "Atomic-Commutes", s.span,
                    f"bad cell: {cell}")
            require(type_of(ctx, e) == _buf_ty(k, buf), "Atomic-Commutes", s.span,
                    f"type mismatch: {buf} holds {_buf_ty(k, buf)}, the value {e.ty}")
        case _:
            assert_never(s)


def _buf_ty(k: A.Kernel, buf: str) -> str:
    p = k.param(buf)
    if p is not None:
        return p.ty
    sh = k.shared_array(buf)
    if sh is None:
        raise IllTyped(f"unknown buffer: {buf}", rule="T-Buffer")
    return sh.ty


def _writable(k: A.Kernel, buf: str) -> bool:
    p = k.param(buf)
    return (p.mode in ("rw", "rwr")) if p is not None else k.shared_array(buf) is not None


def _vector_shape(k: A.Kernel, buf: str, ty: str, width: int, span: Span) -> None:
    require(width in (2, 4) and ty in ("i32", "f32") and _buf_ty(k, buf) == ty,
            "T-Vector", span, f"bad vector: {width} x {ty} of {buf}")


def _shared_write(ctx: Ctx, buf: str, slots: tuple[int, ...], span: Span) -> None:
    if ctx.kernel.shared_array(buf) is None:
        return
    require(buf not in ctx.phase.neighbour_read, "Shared-WAR", span,
            f"race: {buf} is read by other threads in this phase")
    ctx.phase.written.add(buf)
    if ctx.top:
        ctx.phase.defined.setdefault(buf, set()).update(slots)


def _masked(ctx: Ctx, idx: A.Masked) -> None:
    ty = type_of(ctx, idx.expr)
    require(ty in ("i32", "u32", "i64", "u64"), "Index-Masked", idx.span,
            f"bad index: {ty} (expected an int)")


def _load(ctx: Ctx, buf: str, idx: A.Index, span: Span) -> None:  # T-Load
    k = ctx.kernel
    p = k.param(buf)
    match idx:
        case A.Own(slot):
            require(0 <= slot < A.CELLS, "Load-Own", span, f"bad slot: {slot}")
            if p is None:
                require(slot in ctx.phase.defined.get(buf, set()), "Shared-Init", span,
                        f"uninitialised: {buf} slot {slot} is read before written")
        case A.Masked():
            require(p is not None and p.mode == "ro", "Load-Own", span,
                    f"bad index: {buf} is written, so read only own cells")
            _masked(ctx, idx)
        case A.Neighbour(_, slot):
            require(p is None, "Shared-Ordered", span,
                    f"bad index: {buf} is global; neighbours only in shared memory")
            require(0 <= slot < A.CELLS, "Load-Own", span, f"bad slot: {slot}")
            require(buf not in ctx.phase.written
                    and slot in ctx.phase.defined_before.get(buf, set()),
                    "Shared-Ordered", span,
                    f"race: {buf} slot {slot} is read across threads without a "
                    "barrier after its write")
            ctx.phase.neighbour_read.add(buf)
        case _:
            assert_never(idx)
    require(p is None or p.mode != "atomic", "Atomic-Commutes", span,
            f"bad load: {buf} is touched by atomics only")


def _arith(ty: str, span: Span, what: str) -> None:
    require(ty in A.ARITH_TYPES, "T-Arith", span,
            f"bad operand: {what} of {ty} (cast 16-bit values first)")


def type_of(ctx: Ctx, e: A.Expr) -> str:
    """Γ ⊢ e : τ; checks the premises and returns τ (which must be `e.ty`)."""
    k = ctx.kernel
    match e:
        case A.Lit(ty, value):  # T-Lit
            require(_literal_fits(ty, value), "T-Lit", e.span,
                    f"bad literal: {value} does not fit {ty}")
        case A.Var(name, ty):  # T-Var
            require(ctx.lookup(name) == ty, "T-Var", e.span,
                    f"unknown variable: {name} : {ty}")
        case A.Builtin(which, ty):  # T-Builtin
            require(which in A.BUILTINS and ty == "i32", "T-Builtin", e.span,
                    f"unknown builtin: {which}")
        case A.Unary(op, arg, ty):
            at = type_of(ctx, arg)
            _arith(at, e.span, op)
            expected = {"popc": "u32", "brev": "u32", "clz": "i32"}.get(op)
            if expected is not None:  # T-Bits
                require(at == expected, "T-Bits", e.span, f"bad operand: {op} of {at}")
            if op == "not":
                require(at != "f32", "T-Bits", e.span, "bad operand: not of f32")
            if op == "abs":  # Abs-Defined
                require(at in ("i32", "i64") and isinstance(arg, A.Binary)
                        and arg.op == ">>" and isinstance(arg.b, A.Lit)
                        and 1 <= int(arg.b.value) < A.BITS[at], "Abs-Defined", e.span,
                        "undefined: abs takes (>> e c), c >= 1, never INT_MIN")
            want = "i32" if op in ("popc", "clz") else at
            require(ty == want, "T-Unary", e.span, f"type mismatch: {op} is {want}")
        case A.Binary(op, a, b, ty):
            at, bt = type_of(ctx, a), type_of(ctx, b)
            _arith(at, e.span, op)
            require(at == bt, "T-Binary", e.span, f"type mismatch: {at} {op} {bt}")
            require(op in A.BIN_ARITH or op in A.BIN_COMPARE, "T-Binary", e.span,
                    f"unknown operator: {op}")
            if op in ("&", "|", "^", "<<", ">>"):
                require(at != "f32", "T-Bits", e.span, f"bad operand: {op} of f32")
            want = "i32" if op in A.BIN_COMPARE else at
            require(ty == want, "T-Binary", e.span, f"type mismatch: {op} is {want}")
        case A.DivC(op, a, d, ty):  # DivC-Defined
            at = type_of(ctx, a)
            require(at in ("i32", "u32", "i64", "u64") and ty == at, "DivC-Defined",
                    e.span, f"bad operand: {op} of {at}")
            require(op in ("/", "%") and d != 0 and (at not in A.SIGNED or d != -1)
                    and (at in A.SIGNED or d > 0) and _literal_fits(at, d),
                    "DivC-Defined", e.span, f"undefined: {op} by {d} of {at}")
        case A.Cast(ty, arg):  # Cast-Defined
            at = type_of(ctx, arg)
            require(ty in A.TYPES, "Cast-Defined", e.span, f"unknown type: {ty}")
            require(not (at == "f32" and ty != "f32"), "Cast-Defined", e.span,
                    "undefined: float to int conversion may overflow")
            # Note: a 64-bit int rounds once in CUDA's cvt.rn.f32.s64 but may round
            # twice (via double) in NumPy; the reference would be wrong, so excluded.
            require(not (ty == "f32" and at in ("i64", "u64")), "Cast-Defined",
                    e.span, "unsupported: 64-bit int to float conversion")
        case A.Select(c, a, b, ty):  # T-Select
            require(type_of(ctx, c) == "i32", "T-Select", e.span, "bad condition")
            # C evaluates only the chosen arm: a shuffle there would be divergent
            uniform, ctx.uniform = ctx.uniform, False
            arms = (type_of(ctx, a), type_of(ctx, b))
            ctx.uniform = uniform
            require(arms[0] == arms[1] == ty, "T-Select", e.span,
                    f"type mismatch: {a.ty} : {b.ty}")
        case A.Load(buf, idx, ldg, ty):  # T-Load
            _load(ctx, buf, idx, e.span)
            p = k.param(buf)
            require(not ldg or (p is not None and p.mode == "ro"), "Ldg-ReadOnly",
                    e.span, f"bad __ldg: {buf} is not read-only")
            require(ty == _buf_ty(k, buf), "T-Load", e.span, "type mismatch")
        case A.PtrSelect(c, ba, bb, idx, ty):  # T-PtrSelect
            require(type_of(ctx, c) == "i32", "T-PtrSelect", e.span, "bad condition")
            require(k.param(ba) is not None and k.param(bb) is not None, "T-PtrSelect",
                    e.span, "bad pointer select: both must be parameters")
            require(_buf_ty(k, ba) == _buf_ty(k, bb) == ty, "T-PtrSelect", e.span,
                    f"type mismatch: {ba} and {bb}")
            _load(ctx, ba, idx, e.span)
            _load(ctx, bb, idx, e.span)
        case A.Shfl(xor, value, kk, ty):  # Shfl-Converged
            require(ctx.uniform, "Shfl-Converged", e.span,
                    "divergent: shuffles only outside branches")
            vt = type_of(ctx, value)
            require(vt in A.ARITH_TYPES and vt == ty, "Shfl-Converged", e.span,
                    f"bad shuffle of {vt}")
            require((1 if xor else 0) <= kk < 32, "Shfl-Converged", e.span,
                    f"bad lane: {kk}")
        case _:
            assert_never(e)
    return e.ty


def _literal_fits(ty: str, value: float) -> bool:
    if ty == "f32":
        import math
        import struct

        if not isinstance(value, float) or not math.isfinite(value):
            return False
        return bool(struct.unpack("f", struct.pack("f", value))[0] == value)
    if not isinstance(value, int):
        return False
    bits = A.BITS[ty]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ty in A.SIGNED else (
        0, (1 << bits) - 1)
    return lo <= value <= hi
