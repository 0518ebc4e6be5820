"""Pass 1, `from_bundl`: Bundl AST -> high-level KIR ("erase perspectives" on data).

Every Bundl statement becomes the KIR statement of the same shape; what disappears is
the perspective *annotation* of variables (a `let x : int @ block[1]` is an ordinary
per-thread C variable: information flows only downwards, so all threads of the block
hold the same value). Code-perspective constructs (destruct/group/split) and data
perspective constructs (partition/claim/lower) survive as KIR nodes annotated with the
code perspective at which they run; later passes lower them.

Names: every Bundl binder gets a unique C name (`v_x`, `v_x_2`, ...), so nested scopes
and re-declarations never collide in C++. Arrays carry a length expression: Bundl's
⟨l, n⟩ is (`v_x`, `v_x_len`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import cast

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.perspective import (
    GRID1,
    Level,
    MachineShape,
    Perspective,
    destruct,
    level_ratio,
)
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.errors import CompileError
from gpusem.compiler.bundl_cuda.faults import active
from gpusem.compiler.bundl_cuda.paths import note

# ------------------------------------------------------------------ environments


@dataclass(frozen=True, slots=True)
class VarInfo:
    cname: str
    type: B.BaseType | B.ArrayType
    persp: Perspective
    length: K.KExpr | None = None  # arrays only

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, B.ArrayType)

    @property
    def elem(self) -> B.BaseType:
        return self.type.elem if isinstance(self.type, B.ArrayType) else self.type


@dataclass
class Names:
    """Unique C names for the binders of one function."""

    used: set[str] = field(default_factory=set)

    def fresh(self, name: str) -> str:
        base = f"v_{name}"
        cname, i = base, 1
        while cname in self.used:
            i += 1
            cname = f"{base}_{i}"
        self.used.add(cname)
        return cname


@dataclass(frozen=True)
class Env:
    vars: dict[str, VarInfo]
    fns: dict[str, B.FnDef]
    shape: MachineShape
    names: Names
    global_names: tuple[str, ...] = ()

    def bind(self, name: str, info: VarInfo) -> Env:
        return replace(self, vars={**self.vars, name: info})

    def hide(self, name: str) -> Env:
        return replace(self, vars={k: v for k, v in self.vars.items() if k != name})

    def lookup(self, name: str, span) -> VarInfo:
        if name not in self.vars:
            raise CompileError(f"unknown variable: {name}", span=span)
        return self.vars[name]


# ------------------------------------------------------------------- expressions


def expr_type(e: B.Expr, env: Env) -> B.BaseType | B.ArrayType:
    match e:
        case B.IntLit() | B.PartitionId():
            return B.BaseType.INT
        case B.FloatLit():
            return B.BaseType.FLOAT
        case B.BoolLit():
            return B.BaseType.BOOL
        case B.Var(name, span):
            return env.lookup(name, span).type
        case B.Index(array, _):
            t = expr_type(array, env)
            if not isinstance(t, B.ArrayType):
                raise CompileError("index into a non-array", span=e.span)
            return t.elem
        case B.BinOp(op, left, _):
            lt = expr_type(left, env)
            if isinstance(lt, B.ArrayType):
                return lt
            if op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
                return B.BaseType.BOOL
            return lt
        case B.UnOp(op, operand):
            return B.BaseType.BOOL if op == "!" else expr_type(operand, env)
        case B.Fma():
            return B.BaseType.FLOAT
    raise CompileError(f"unexpected expression {type(e).__name__}", span=e.span)


def scalar_type(e: B.Expr, env: Env) -> B.BaseType:
    """`expr_type` of a literal or an operand of T-Bop / T-Uop, which the typing rules
    give a base type (a pointer offset `x + k` is lowered on its own)."""
    return cast(B.BaseType, expr_type(e, env))


def lower_expr(e: B.Expr, env: Env, code: Perspective, target: Perspective) -> K.KExpr:
    """Lower `e`, read at code perspective `code` for a variable at `target` (the π and
    π' of the expression judgment ⊢^π_π' e ⇓ v; only `partition_id` depends on π')."""
    match e:
        case B.IntLit(v) | B.FloatLit(v) | B.BoolLit(v):
            return K.KConst(v, scalar_type(e, env))
        case B.Var(name, span):
            return K.KVar(env.lookup(name, span).cname)
        case B.Index(array, index):
            # E-Arr-Access: η, σ, Σ ⊢^π_π' e1 ⇓ ⟨l, n⟩ and ⊢^π_π' e2 ⇓ i: the index is
            # evaluated against the enclosing target π', like the array operand (a
            # `partition_id` in it counts π' units, as the interpreter's does)
            at = code if active("index-at-code-perspective") else target
            if target != code:
                note("compile:from_bundl:index at a narrower target")
            return K.KLoad(lower_expr(array, env, code, target),
                           lower_expr(index, env, code, at))
        case B.PartitionId():
            return partition_id(code, target, env.shape)
        case B.BinOp("+", left, right) if isinstance(expr_type(left, env), B.ArrayType):
            # a pointer offset `y + k` (S-Partition's runtime form): both operands at
            # the enclosing target, as E-Bop's are
            note("compile:from_bundl:pointer offset")
            return K.KPtrAdd(lower_expr(left, env, code, target),
                             lower_expr(right, env, code, target))
        case B.BinOp(op, left, right):
            operand_type = scalar_type(left, env)
            return K.KBin(op, lower_expr(left, env, code, target),
                          lower_expr(right, env, code, target), operand_type)
        case B.UnOp(op, operand):
            return K.KUn(op, lower_expr(operand, env, code, target),
                         scalar_type(operand, env))
        case B.Fma(a, b, c):  # explicit fma: __fmaf_rn on the device, fmaf on the cpu
            return K.KFma(*(lower_expr(x, env, code, target) for x in (a, b, c)))
    raise CompileError(f"unexpected expression {type(e).__name__}", span=e.span)


def partition_id(code: Perspective, target: Perspective, shape: MachineShape) -> K.KExpr:
    """E-Partition-Id, fixed reading (errata): the index of the `target`-sized unit that
    holds this resource inside the code perspective: (p·(h/h') + r) div n'."""
    # Index arithmetic on ids below B·T: plain C (`KRaw` via KPerspId text later).
    ratio = level_ratio(code.level, target.level, shape)
    if code.level != Level.GRID:  # T-Partition-Id: grid code never evaluates one
        note("compile:from_bundl:partition_id " + (
            "same level" if code.level == target.level
            else f"{code.level.keyword}->{target.level.keyword}"))
    r = _position_within_unit(code.level, target.level, shape)
    scaled = (K.KPerspId() if ratio == 1
              else K.KBin("*", K.KPerspId(), K.KConst(ratio, B.BaseType.INT),
                          B.BaseType.INT))
    total = K.KBin("+", scaled, r, B.BaseType.INT) if r is not None else scaled
    if target.n == 1:
        return total
    return K.KBin("/", total, K.KConst(target.n, B.BaseType.INT), B.BaseType.INT)


def _position_within_unit(upper: Level, lower: Level, shape: MachineShape):
    """r: the resource's position at level `lower` inside its `upper` unit."""
    if upper == lower:
        return None
    if upper == Level.BLOCK:  # Block -> Thread
        return K.KBuiltin("threadIdx.x")
    if lower == Level.BLOCK:  # Grid -> Block
        return K.KBuiltin("blockIdx.x")
    return K.KRaw(f"(blockIdx.x * {shape.threads} + threadIdx.x)")  # Grid -> Thread


def array_length(e: B.Expr, env: Env, code: Perspective) -> K.KExpr:
    """The `n` of ⟨l, n⟩ for an array-valued expression at code perspective `code`
    (pointer + int shrinks it by the offset, evaluated as the pointer's is)."""
    match e:
        case B.Var(name, span):
            info = env.lookup(name, span)
            assert info.length is not None
            return info.length
        case B.BinOp("+", left, right):
            off = lower_expr(right, env, code, code)
            return K.KBin("-", array_length(left, env, code), off, B.BaseType.INT)
    raise CompileError("array argument must be a variable or a pointer offset",
                       span=e.span)


# -------------------------------------------------------------------- statements


def lower_stmt(s: B.Stmt, env: Env, code: Perspective) -> tuple[K.KStmt, ...]:
    """One KIR statement (or a few) per Bundl statement, at code perspective `code`."""
    match s:
        case B.Skip():
            return ()
        case B.Seq(stmts):
            return _lower_seq(stmts, env, code)
        case B.Decl(name, ty, persp, init, body, span):
            value = lower_expr(init, env, code, persp)
            info = VarInfo(env.names.fresh(name), ty, persp)
            decl = K.KDecl(info.cname, K.CTYPE[ty], value, span)
            return (decl, *lower_stmt(body, env.bind(name, info), code))
        case B.Alloc():
            return _lower_alloc(s, env, code)
        case B.Assign(name, value, span):
            info = env.lookup(name, span)
            return (K.KAssign(info.cname, lower_expr(value, env, code, info.persp), span),)
        case B.ArrAssign(array, index, value, span):
            target = _array_persp(array, env, code)
            return (K.KStore(lower_expr(array, env, code, code),
                             lower_expr(index, env, code, code),
                             lower_expr(value, env, code, target), span),)
        case B.If(cond, then, orelse, span):
            return (K.KIf(lower_expr(cond, env, code, code), lower_stmt(then, env, code),
                          lower_stmt(orelse, env, code), span),)
        case B.While(cond, body, span):
            return (K.KWhile(lower_expr(cond, env, code, code),
                             lower_stmt(body, env, code), span),)
        case B.Split(n1, n2, left, right, span):
            h = code.level
            return (K.KSplit(n1, n2, lower_stmt(left, env, Perspective(h, n1)),
                             lower_stmt(right, env, Perspective(h, n2)), span),)
        case B.Group(q, body, span):
            inner = Perspective(code.level, code.n // q)
            return (K.KGroup(q, inner, lower_stmt(body, env, inner), span),)
        case B.Destruct(body, span):
            inner = destruct(code, env.shape)
            return (K.KDestruct(code, lower_stmt(body, env, inner), span),)
        case B.Partition() | B.Claim() | B.Lower() | B.AsyncPartition():
            return _lower_data_persp(s, env, code)
        case B.AsyncMemcpy(dst, src, span):
            note("compile:from_bundl:async_memcpy")
            info = env.lookup(dst, span)
            return (K.KAsyncCopy(info.cname, env.lookup(src, span).cname, info.elem, span),)
        case B.Memcpy(dst, src, span):
            note("compile:from_bundl:memcpy")
            d, r = env.lookup(dst, span), env.lookup(src, span)
            count = K.KRaw(f"gs_imin({_len_text(d)}, {_len_text(r)})")
            return (K.KCopy(K.KVar(d.cname), K.KVar(r.cname), count,
                            K.CTYPE[d.elem], span),)
        case B.Free(amount, span):
            return (K.KComment(f"free {amount} (S-Free: returns shared-memory budget)",
                               span),)
        case B.Call(fn, args, span):
            return (_lower_call(fn, args, env, code, span),)
        case B.SyncInit() | B.SyncDec() | B.SyncWait():
            raise CompileError(
                "unsupported: init/dec/wait are compiled only as the consecutive triple "
                "`init l; dec l; wait l` (a barrier)", span=s.span)
    raise CompileError(f"unexpected statement {type(s).__name__}", span=s.span)


def _lower_seq(stmts, env: Env, code: Perspective) -> tuple[K.KStmt, ...]:
    """Statements in order; the runtime triple `init ψ; dec ψ; wait ψ` (what S-Partition
    produces, also writable by hand) is one barrier over the current perspective."""
    out: list[K.KStmt] = []
    i = 0
    while i < len(stmts):
        triple = stmts[i : i + 3]
        if (len(triple) == 3 and isinstance(triple[0], B.SyncInit)
                and isinstance(triple[1], B.SyncDec)
                and isinstance(triple[2], B.SyncWait)
                and len({t.label for t in triple}) == 1):
            label = triple[0].label
            note("compile:from_bundl:barrier written by hand")
            out.append(K.KBarrier(code, K.KPerspId(), f"init/dec/wait {label}",
                                  triple[0].span))
            i += 3
            continue
        out.extend(lower_stmt(stmts[i], env, code))
        i += 1
    return tuple(out)


def _len_text(info: VarInfo) -> str:
    assert info.length is not None
    match info.length:
        case K.KConst(v):
            return str(v)
        case K.KVar(name):
            return name
    raise CompileError(f"array {info.cname} has no simple length")


def _array_persp(array: B.Expr, env: Env, code: Perspective) -> Perspective:
    match array:
        case B.Var(name, span):
            return env.lookup(name, span).persp
        case B.BinOp("+", left, _):
            return _array_persp(left, env, code)
    return code


def _lower_alloc(s: B.Alloc, env: Env, code: Perspective) -> tuple[K.KStmt, ...]:
    cname = env.names.fresh(s.name)
    mem = s.mem
    persp = Perspective(Level.BLOCK, 1) if mem == B.MemKind.SHARED else code
    if s.persp is not None:  # S-Alloc-Local-At (our extension): still per thread
        persp = s.persp
    info = VarInfo(cname, B.ArrayType(s.elem, mem), persp,
                   K.KConst(s.size, B.BaseType.INT))
    body = lower_stmt(s.body, env.bind(s.name, info), code)
    note(f"compile:from_bundl:alloc {mem.value}")
    if mem == B.MemKind.SHARED:
        return (K.KSharedAlloc(cname, s.elem, s.size, body, s.span),)
    if mem == B.MemKind.GLOBAL and not active("global-alloc-per-thread"):
        # S-Alloc-Global (fixed): one array in Σ per unit of the code perspective, so
        # the unit's threads share it (x :^π τ[]^Global of T-Alloc; errata)
        return (K.KGlobalAlloc(cname, s.elem, s.size, code, body, s.span),)
    # S-Alloc-Local: in η, per thread
    return (K.KLocalArray(cname, K.CTYPE[s.elem], s.size, s.span), *body)


def _lower_data_persp(s, env: Env, code: Perspective) -> tuple[K.KStmt, ...]:
    src = env.lookup(s.source, s.span)
    if not src.is_array:
        raise CompileError(f"{s.source} is not an array", span=s.span)
    cname = env.names.fresh(s.target)
    length = K.KVar(cname + "_len")
    match s:
        case B.Partition(by=c):
            persp, body_code = Perspective(code.level, code.n // c), code
        case B.Claim(at=n1):
            persp = body_code = Perspective(code.level, n1)
        case B.Lower():
            persp, body_code = destruct(code, env.shape), code
        case B.AsyncPartition():
            persp, body_code = code, code
    info = VarInfo(cname, src.type, persp, length)
    inner = env.hide(s.source).bind(s.target, info)
    body = lower_stmt(s.body, inner, body_code)
    elem = src.elem
    src_length = src.length
    assert src_length is not None  # every array is bound with its length
    node: K.KStmt
    match s:
        case B.Partition(by=c, offset=None):
            node = K.KPartition(src.cname, cname, c, src_length, elem, code, body,
                                s.span)
        case B.Partition(by=c, offset=off) if off is not None:
            # S-Partition-Offset: e at (h, n/c)
            note("compile:from_bundl:partition at an offset")
            at = lower_expr(off, env, persp, persp)
            node = K.KPartition(src.cname, cname, c, src_length, elem, code, body,
                                s.span, at)
        case B.Claim(at=n1):
            node = K.KClaim(src.cname, cname, n1, src_length, elem, code, body, s.span)
        case B.Lower():
            node = K.KLower(src.cname, cname, src_length, elem, code, body, s.span)
        case B.AsyncPartition():
            node = K.KAsyncScope(src.cname, cname, src_length, elem, body, s.span)
    return (node,)


def _lower_call(fn: str, args, env: Env, code: Perspective, span) -> K.KCall:
    fdef = env.fns.get(fn)
    if fdef is None:
        raise CompileError(f"unknown function: {fn}", span=span)
    note("compile:from_bundl:call")
    out: list[K.KExpr] = []
    for param, arg in zip(fdef.params, args, strict=True):
        if param.persp != code:
            note("compile:from_bundl:call argument at another perspective")
        # S-Function-Call evaluates every argument at the caller's perspective, ambient
        # and target (⊢^π_π), whatever the parameter's own perspective
        out.append(lower_expr(arg, env, code, code))
        if isinstance(param.type, B.ArrayType):
            out.append(array_length(arg, env, code))
    out += [K.KVar(f"g_{g}") for g in env.global_names]
    out += [K.KPerspId(), K.KBuiltin("blockIdx.x"), K.KSmemTop()]
    return K.KCall(f"fn_{fn}", tuple(out), span)


# ---------------------------------------------------------------------- programs


def _global_env(prog: B.Program, fns, shape: MachineShape) -> tuple[Env, list[K.KParam]]:
    """Globals live at (Grid, 1) in Σ; every function sees them (G-Global), so device
    functions receive the global pointers too, under the same names `g_<x>`."""
    names = Names()
    env = Env({}, fns, shape, names, tuple(g.name for g in prog.globals))
    params = []
    for g in prog.globals:
        cname = f"g_{g.name}"
        names.used.add(cname)
        info = VarInfo(cname, B.ArrayType(g.elem, B.MemKind.GLOBAL), GRID1,
                       K.KConst(g.size, B.BaseType.INT))
        env = env.bind(g.name, info)
        params.append(K.KParam(cname, K.CTYPE[g.elem] + "*"))
    return env, params


def from_bundl(prog: B.Program) -> K.KProgram:
    shape = MachineShape(prog.machine.blocks, prog.machine.threads)
    fns = {f.name: f for f in prog.fns}
    functions = [_lower_fn(f, prog, fns, shape) for f in prog.fns]
    env, params = _global_env(prog, fns, shape)
    body = lower_stmt(prog.main, env, GRID1)
    kernel = K.KFunction("bundl_main", tuple(params), body, GRID1, True, prog.main.span)
    return K.KProgram(
        functions=(*functions, kernel), blocks=shape.blocks, threads=shape.threads,
        globals=tuple((g.name, g.elem, g.size) for g in prog.globals),
    )


def _lower_fn(f: B.FnDef, prog: B.Program, fns, shape: MachineShape) -> K.KFunction:
    """A Bundl function becomes a __device__ function taking, besides its parameters
    and the globals, the relative perspective id, the block id and a shared-memory
    offset (Prism Section 5)."""
    env, global_params = _global_env(prog, fns, shape)
    params: list[K.KParam] = []
    for p in f.params:
        cname = env.names.fresh(p.name)
        if isinstance(p.type, B.ArrayType):
            length = K.KVar(cname + "_len")
            env = env.bind(p.name, VarInfo(cname, p.type, p.persp, length))
            params += [K.KParam(cname, K.CTYPE[p.type.elem] + "*"),
                       K.KParam(cname + "_len", "int", length_of=cname)]
        else:
            env = env.bind(p.name, VarInfo(cname, p.type, p.persp))
            params.append(K.KParam(cname, K.CTYPE[p.type]))
    params += global_params
    params += [K.KParam("gs_p", "int"), K.KParam("gs_block", "int"),
               K.KParam("gs_smem_off", "int")]
    body = lower_stmt(f.body, env, f.persp)
    return K.KFunction(f"fn_{f.name}", tuple(params), body, f.persp, False, f.span)
