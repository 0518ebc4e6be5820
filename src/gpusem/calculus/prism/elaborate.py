"""Prism's surface (Sec 3) elaborated into Bundl (Sec 4, Appendix A), keeping spans.

The elaboration is the paper's own account of how the surface relates to the core
calculus (Sec 4.1: "Bundl's group ... directly corresponds to Prism's", split is "a
binary version of the n-ary split", destruct "makes explicit exactly where such shifts
occur"), made precise:

  with group(level[n])         -> group q, or (crossing a level) destruct + group:
                                  `descend` below; warp[n] = thread[32n]
  match split(level): case n_i -> destruct to `level`, then nested binary splits
                                  split(n_1, r - n_1){..}{split(n_2, ..)}; units past
                                  the cases idle (a final `skip` arm)
  with partition(x, dimension=π, offset=e) as y
                               -> pending until the code perspective reaches π, then
                                  lower (per level crossed) + partition x' into y by c
                                  at e (our extension T-Partition-Offset); an index
                                  function f: offset 0 and y[i] read as y[f(i)]
  with claim(x, scope=π) + match split -> claim x' into y at n
  x : τ @ π = e                -> let / alloc (Local arrays at π: our extension
                                  T-Alloc-Local-At); at grid code, a narrower
                                  declaration is made after each destruct of the grid
                                  (T-Partition-Id types partition_id below grid[1])
  id()                         -> partition_id (E-Partition-Id, fixed reading: the
                                  declared and the code perspective, Sec 3.5)
  for v in range(a, b, s)      -> let v = a; while v < b { ...; v = v + s }
  break                        -> a loop flag; the rest of the body is guarded
  f(args) (device function)    -> inlined: Bundl functions have no results, no pointer
                                  locals and no memory-kind polymorphism (errata)
  a if c else b                -> if c { x = a } else { x = b } (as a whole RHS)
  float4                       -> four floats; float4_cast(x[i]) reads x[i .. i+3]

Surface rules that do not survive elaboration (bounds at calls, the const-pointer
rule, claim in one branch, the smem budget) are checked before, on the surface tree,
by `typing_rules/prism`. Every Bundl node gets the span of the surface node it came
from, so a Bundl typing error names the surface line and column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.ast import BaseType, MemKind
from gpusem.calculus.bundl.perspective import (
    GRID1,
    Level,
    MachineShape,
    Perspective,
    destruct,
    leq,
)
from gpusem.calculus.errors import BadInput
from gpusem.calculus.prism import ast as S
from gpusem.calculus.prism.elaborate_expr import expr, float4_field, subscript
from gpusem.calculus.prism.scope import (
    Deferred,
    Names,
    Pending,
    Scope,
    Sym,
    base_type,
    persp_of,
)
from gpusem.calculus.span import Span

Stmts = list[B.Stmt]
Body = Callable[[Scope], Stmts]


def elaborate(mod: S.Module) -> B.Program:
    """The Bundl program of `mod`'s launched kernel (its `# launch:` header)."""
    return _Elaborator(mod).program()


class _Elaborator:
    def __init__(self, mod: S.Module):
        self.mod = mod

    # ------------------------------------------------------------------ program

    def program(self) -> B.Program:
        mod, launch = self.mod, self.mod.launch
        if launch is None:
            raise BadInput("missing header: a runnable .prism file names its kernel "
                           "and machine in `# launch: KERNEL blocks=B threads=T`",
                           rule="Launch-Header", span=mod.span)
        kernel = mod.function(launch.kernel)
        if kernel is None or kernel.kind != "global":
            raise BadInput(f"unknown kernel: no @prism(\"global\") {launch.kernel}",
                           rule="Launch-Header", span=launch.span)
        shape = MachineShape(launch.blocks, launch.threads)
        names = Names()
        sc = Scope(GRID1, {}, shape, names)
        args = {a.name: a for a in launch.args}
        globals_: list[B.GlobalDecl] = []
        lets: Stmts = []
        for p in kernel.params:
            a = args.get(p.name)
            if a is None:
                raise BadInput(f"missing argument: # arg {p.name} = ...",
                               rule="Launch-Header", span=p.span)
            elem = base_type(p.type)
            bname = names.fresh(p.name)
            if p.type.pointer:
                globals_.append(self.global_decl(bname, elem, a))
                sc.env[p.name] = Sym("array", bname, elem, persp_of(p.persp),
                                     MemKind.GLOBAL, const=p.type.const)
            else:
                if a.elem is not None or a.values is None:
                    raise BadInput(f"bad argument: {p.name} is a scalar",
                                   rule="Launch-Header", span=a.span)
                value = expr(S.Num(a.values[0], a.span), sc, elem)
                lets.append(B.Decl(bname, elem, persp_of(p.persp), value, B.Skip(),
                                   p.span))
                sc.env[p.name] = Sym("scalar", bname, elem, persp_of(p.persp),
                                     const=p.type.const)
        body = self.block(kernel.body, sc)
        main = B.seq(*lets, *body, span=kernel.span)
        return B.Program(B.Machine(launch.blocks, launch.threads, launch.span),
                         tuple(globals_), (), main, mod.span)

    def global_decl(self, bname: str, elem: BaseType, a: S.Arg) -> B.GlobalDecl:
        if a.elem is None:
            raise BadInput(f"bad argument: {a.name} is a pointer: give TYPE[N]",
                           rule="Launch-Header", span=a.span)
        init: B.GlobalInit = None
        if a.iota:
            init = B.Iota(a.span)
        elif a.values is not None:
            init = tuple(B.FloatLit(float(v), a.span) if elem is BaseType.FLOAT
                         else B.IntLit(int(v), a.span) for v in a.values)
        return B.GlobalDecl(bname, elem, a.size, init, a.span)

    # ---------------------------------------------------------------- statements

    def block(self, stmts: tuple[S.Stmt, ...], sc: Scope) -> Stmts:
        out: Stmts = []
        for i, s in enumerate(stmts):
            out += self.stmt(s, sc)
            if sc.brk is not None and _may_break(s) and i + 1 < len(stmts):
                # break: the rest of this body runs only while the flag is down
                rest = self.block(stmts[i + 1:], sc)
                guard = B.UnOp("!", B.Var(sc.brk, s.span), s.span)
                out.append(B.If(guard, B.seq(*rest), B.Skip(), s.span))
                break
        return out

    def stmt(self, s: S.Stmt, sc: Scope) -> Stmts:  # noqa: C901 - one arm per form
        match s:
            case S.Decl():
                return self.decl(s, sc)
            case S.Assign():
                return self.assign(s, sc)
            case S.ExprStmt(call, span):
                return self.call_stmt(call, sc, None, span)
            case S.If(cond, then, orelse, span):
                return [B.If(expr(cond, sc, BaseType.BOOL),
                             B.seq(*self.block(then, sc.child())),
                             B.seq(*self.block(orelse, sc.child())), span)]
            case S.While(cond, body, span):
                return self.loop(cond, body, [], sc, span)
            case S.For():
                return self.for_loop(s, sc)
            case S.Break(span):
                if sc.brk is None:
                    raise BadInput("break outside a loop", rule="Elab-Break", span=span)
                return [B.Assign(sc.brk, B.BoolLit(True, span), span)]
            case S.Continue(span):
                raise BadInput("unsupported statement: continue", rule="Elab-Continue",
                               span=span)
            case S.Return(value, span):
                if value is None:
                    return []
                if sc.result is None:
                    raise BadInput("bad return: a value returned from a kernel",
                                   rule="Elab-Return", span=span)
                want = sc.env[sc.result].elem if sc.result in sc.env else None
                return [B.Assign(sc.result, expr(value, sc, want), span)]
            case S.Pass():
                return []
            case S.Group(p, body, span):
                return self.descend(sc, persp_of(p), lambda s2: self.block(body, s2),
                                    span)
            case S.Split():
                return self.split(s, sc)
            case S.Partition() | S.Claim():
                return self.view(s, sc)
        raise BadInput(f"unsupported statement: {type(s).__name__.lower()}",
                       rule="Elab-Statement", span=s.span)

    def decl(self, s: S.Decl, sc: Scope) -> Stmts:
        ty, span = s.type, s.span
        at = persp_of(s.persp) if s.persp is not None else sc.persp
        if ty.base == "float4":
            return self.float4_decl(s, sc, at)
        if ty.pointer:
            raise BadInput(f"unsupported declaration: pointer local {s.name} (Bundl "
                           "has no pointer variables)", rule="Elab-Pointer-Local",
                           span=span)
        elem = base_type(ty)
        bname = sc.names.fresh(s.name)
        if ty.shared or ty.dims:
            return self.array_decl(s, sc, at, elem, bname)
        if sc.persp == GRID1 and at.level < Level.GRID:
            # made after each destruct of the grid (scope.Deferred)
            sc.env[s.name] = Sym("deferred", bname, elem, at, const=ty.const)
            sc.deferred.append(Deferred(replace(s, name=s.name)))
            return []
        init = s.init
        out: Stmts = []
        if isinstance(init, S.Ternary | S.CallExpr) or init is None:
            sc.env[s.name] = Sym("scalar", bname, elem, at, const=ty.const)
            out.append(B.Decl(bname, elem, at, _zero(elem, span), B.Skip(), span))
            if init is not None:
                out += self.assign_value(bname, elem, init, sc, span)
            return out
        value = expr(init, sc, elem)  # before the name is bound: its scope is after
        sc.env[s.name] = Sym("scalar", bname, elem, at, const=ty.const)
        return [B.Decl(bname, elem, at, value, B.Skip(), span)]

    def array_decl(self, s: S.Decl, sc: Scope, at: Perspective, elem: BaseType,
                   bname: str) -> Stmts:
        ty, span = s.type, s.span
        size = 1
        for d in ty.dims:
            size *= d
        if ty.shared:  # shared(τ[n]) @ block[1]: T-Alloc-Shared
            sc.env[s.name] = Sym("array", bname, elem, Perspective(Level.BLOCK, 1),
                                 MemKind.SHARED, ty.dims)
            return [B.Alloc(bname, elem, size, MemKind.SHARED, B.Skip(), span)]
        local_at = at if at != sc.persp else None  # T-Alloc-Local-At (extension)
        sc.env[s.name] = Sym("array", bname, elem, at, MemKind.LOCAL, ty.dims)
        out: Stmts = [B.Alloc(bname, elem, size, MemKind.LOCAL, B.Skip(), span,
                              local_at)]
        if isinstance(s.init, S.ListInit):
            out += self.fill(bname, elem, size, s.init.value, sc, at, span)
        elif s.init is not None:
            raise BadInput("bad initialiser: an array takes { v }", rule="Elab-Array",
                           span=s.init.span)
        return out

    def fill(self, bname: str, elem: BaseType, size: int, value: S.Expr, sc: Scope,
             at: Perspective, span: Span) -> Stmts:
        """{ v }: every element v, by a loop at the array's perspective."""
        v = expr(value, sc, elem)
        i = sc.names.fresh("fill_i")
        body = B.seq(B.ArrAssign(B.Var(bname, span), B.Var(i, span), v, span),
                     B.Assign(i, B.BinOp("+", B.Var(i, span), B.IntLit(1, span),
                                         span), span))
        loop = B.While(B.BinOp("<", B.Var(i, span), B.IntLit(size, span), span),
                       body, span)
        decl = B.Decl(i, BaseType.INT, at, B.IntLit(0, span), B.Skip(), span)
        if at == sc.persp:
            return [decl, loop]
        # the fill runs where the array's owners are: down to its perspective
        return self.descend(sc, at, lambda s2: [decl, loop], span)

    def float4_decl(self, s: S.Decl, sc: Scope, at: Perspective) -> Stmts:
        span = s.span
        parts = tuple(sc.names.fresh(f"{s.name}_{c}") for c in "xyzw")
        vals: list[B.Expr]
        init = s.init
        if init is None:
            vals = [B.FloatLit(0.0, span)] * 4
        elif (isinstance(init, S.CallExpr) and init.fn == "float4_cast"
              and len(init.args) == 1 and isinstance(init.args[0], S.Subscript)):
            arr, idx = subscript(init.args[0].base, init.args[0].indices, sc, span)
            vals = [B.Index(arr, B.BinOp("+", idx, B.IntLit(k, span), span), span)
                    for k in range(4)]
        else:
            raise BadInput("bad initialiser: a float4 is float4_cast(x[i]) or none",
                           rule="Elab-Float4", span=span)
        sc.env[s.name] = Sym("float4", parts[0], BaseType.FLOAT, at, fields=parts)
        return [B.Decl(n, BaseType.FLOAT, at, v, B.Skip(), span)
                for n, v in zip(parts, vals, strict=True)]

    def assign(self, s: S.Assign, sc: Scope) -> Stmts:
        target, span = s.target, s.span
        if isinstance(s.value, S.Ternary):  # x op= (a if c else b)
            t = s.value
            then = self.assign(replace(s, value=t.then), sc)
            orelse = self.assign(replace(s, value=t.orelse), sc)
            return [B.If(expr(t.cond, sc, BaseType.BOOL), B.seq(*then),
                         B.seq(*orelse), span)]
        value = S.Bin(s.op, target, s.value, span) if s.op else s.value
        match target:
            case S.Name(name):
                sym = sc.lookup(name, target.span)
                if sym.kind != "scalar":
                    raise BadInput(f"bad assignment: {name} is a {sym.kind}",
                                   rule="Elab-Assign", span=span)
                if sym.const:
                    raise BadInput(f"const variable: {name} is const", rule="Const",
                                   span=span)
                return self.assign_value(sym.bname, sym.elem, value, sc, span)
            case S.Attr(base, fld):
                return [B.Assign(float4_field(base, fld, sc), expr(value, sc,
                                 BaseType.FLOAT), span)]
            case S.Subscript(base, indices):
                arr, idx = subscript(base, indices, sc, span)
                root = base
                while isinstance(root, S.Subscript):
                    root = root.base
                assert isinstance(root, S.Name)  # subscript() checked it
                sym = sc.lookup(root.id, root.span)
                return [B.ArrAssign(arr, idx, expr(value, sc, sym.elem), span)]
        raise BadInput("bad assignment target", rule="Elab-Assign", span=span)

    def assign_value(self, bname: str, elem: BaseType, value: S.Expr, sc: Scope,
                     span: Span) -> Stmts:
        match value:
            case S.Ternary(cond, a, b):
                return [B.If(expr(cond, sc, BaseType.BOOL),
                             B.Assign(bname, expr(a, sc, elem), span),
                             B.Assign(bname, expr(b, sc, elem), span), span)]
            case S.CallExpr():
                return self.call_stmt(value, sc, bname, span)
        return [B.Assign(bname, expr(value, sc, elem), span)]

    # --------------------------------------------------------------------- loops

    def loop(self, cond: S.Expr, body: tuple[S.Stmt, ...], step: Stmts, sc: Scope,
             span: Span, pre: Stmts | None = None) -> Stmts:
        inner = sc.child()
        out: Stmts = list(pre or [])
        test = expr(cond, sc, BaseType.BOOL)
        if any(_may_break(s) for s in body):
            flag = sc.names.fresh("brk")
            out.append(B.Decl(flag, BaseType.BOOL, sc.persp, B.BoolLit(False, span),
                              B.Skip(), span))
            test = B.BinOp("&&", B.UnOp("!", B.Var(flag, span), span), test, span)
            inner = replace(inner, brk=flag)
            step = [B.If(B.UnOp("!", B.Var(flag, span), span), B.seq(*step),
                         B.Skip(), span)] if step else []
        else:
            inner = replace(inner, brk=None)
        out.append(B.While(test, B.seq(*self.block(body, inner), *step), span))
        return out

    def for_loop(self, s: S.For, sc: Scope) -> Stmts:
        span = s.span
        sym = sc.env.get(s.var)
        pre: Stmts = []
        if sym is not None and sym.kind == "scalar" and sym.persp == sc.persp:
            var = sym.bname  # Python's for assigns the existing variable
            pre.append(B.Assign(var, expr(s.start, sc, BaseType.INT), span))
        else:
            var = sc.names.fresh(s.var)
            sc.env[s.var] = Sym("scalar", var, BaseType.INT, sc.persp)
            pre.append(B.Decl(var, BaseType.INT, sc.persp,
                              expr(s.start, sc, BaseType.INT), B.Skip(), span))
        down = isinstance(s.step, S.Un) and s.step.op == "-" or (
            isinstance(s.step, S.Num) and s.step.value < 0)
        cond = S.Bin(">" if down else "<", S.Name(s.var, span), s.stop, span)
        step: Stmts = [B.Assign(var, B.BinOp("+", B.Var(var, span),
                                      expr(s.step, sc, BaseType.INT), span), span)]
        return self.loop(cond, s.body, step, sc, span, pre)

    # ------------------------------------------------------------- perspectives

    def descend(self, sc: Scope, target: Perspective, k: Body, span: Span) -> Stmts:
        """Code at sc.persp becomes code at `target` (T-Group, T-Destruct), placing
        the pending partitions whose perspective it passes."""
        cur = sc.persp
        if not leq(target, cur):
            raise BadInput(f"bad group: {target} is not narrower than the code's "
                           f"{cur} (Sec 3.3, Fig. 7)", rule="T-Group", span=span)
        if target == cur:
            return self.place(sc, cur, 1, k, span)
        if target.level == cur.level:
            mids = [p.dim.n for p in sc.pending if p.dim.level == cur.level
                    and target.n < p.dim.n < cur.n and cur.n % p.dim.n == 0
                    and p.dim.n % target.n == 0]
            if mids:
                mid = Perspective(cur.level, max(mids))
                return self.place(sc, mid, cur.n // mid.n,
                                  lambda s2: self.descend(s2, target, k, span), span)
            return self.place(sc, target, cur.n // target.n, k, span)
        if cur.n > 1:
            one = Perspective(cur.level, 1)
            return self.place(sc, one, cur.n,
                              lambda s2: self.descend(s2, target, k, span), span)
        return self.cross(sc, lambda s2: self.descend(s2, target, k, span), span)

    def to_level(self, sc: Scope, level: Level, k: Body, span: Span) -> Stmts:
        """Code at sc.persp goes down to `level`, every unit of it (match split)."""
        cur = sc.persp
        if cur.level == level:
            return k(sc)
        if cur.level < level:
            raise BadInput(f"bad split: {level.keyword} is broader than the code's "
                           f"{cur}", rule="T-Split", span=span)
        if cur.n > 1:
            return self.place(sc, Perspective(cur.level, 1), cur.n,
                              lambda s2: self.to_level(s2, level, k, span), span)
        return self.cross(sc, lambda s2: self.to_level(s2, level, k, span), span)

    def cross(self, sc: Scope, k: Body, span: Span) -> Stmts:
        """lower every pending source (T-Lower), destruct (T-Destruct), and after a
        destruct of the grid make the deferred declarations."""
        cur = sc.persp
        down = destruct(cur, sc.shape)
        inner = sc.at(down)
        lowers: list[tuple[str, str, Span]] = []
        for i, p in enumerate(inner.pending):
            low = sc.names.fresh(p.source)
            lowers.append((p.source, low, p.span))
            inner.pending[i] = replace(p, source=low)
        head: Stmts = []
        if cur == GRID1:
            for d in sc.deferred:
                sym = inner.env[d.decl.name]
                inner.env[d.decl.name] = replace(sym, kind="scalar")
                init = d.decl.init
                value = expr(init, inner, sym.elem) if init is not None else _zero(
                    sym.elem, d.decl.span)
                head.append(B.Decl(sym.bname, sym.elem, sym.persp, value, B.Skip(),
                                   d.decl.span))
            inner = replace(inner, deferred=[])
        node: B.Stmt = B.Destruct(B.seq(*head, *k(inner)), span)
        for src, low, pspan in reversed(lowers):
            node = B.Lower(None, src, low, node, pspan)
        return [node]

    def place(self, sc: Scope, to: Perspective, q: int, k: Body, span: Span) -> Stmts:
        """group q from sc.persp to `to`, first placing (partition x into y by q at e)
        each pending partition whose perspective is `to`, and passing the others
        through (at offset 0) so that their source stays at the code's perspective."""
        inner = sc.at(to)
        wraps: list[tuple[str, str, B.Expr, Span]] = []
        keep: list[Pending] = []
        for p in sc.pending:
            if p.kind == "partition" and p.dim == to:
                tgt = sc.names.fresh(p.target)
                if p.index is not None or p.offset is None:
                    off: B.Expr = B.IntLit(0, p.span)
                else:
                    off = expr(p.offset, sc.at(to), BaseType.INT)
                wraps.append((p.source, tgt, off, p.span))
                inner.env[p.target] = Sym("array", tgt, p.elem, to, p.mem,
                                          index=p.index)
            elif q > 1 and leq(p.dim, to):
                passed = sc.names.fresh(p.source)
                wraps.append((p.source, passed, B.IntLit(0, p.span), p.span))
                keep.append(replace(p, source=passed))
            else:
                keep.append(p)
        inner.pending[:] = keep
        body = k(inner)
        node: B.Stmt = B.Group(q, B.seq(*body), span) if q > 1 else B.seq(*body)
        for src, tgt, off, pspan in reversed(wraps):
            node = B.Partition(None, src, tgt, q, node, pspan, off)
        return [node]

    def split(self, s: S.Split, sc: Scope) -> Stmts:
        level = Level[("thread" if s.level in ("warp", "warpgroup") else
                       s.level).upper()]
        scale = {"warp": 32, "warpgroup": 128}.get(s.level, 1)
        cases = [(c.n * scale, c) for c in s.cases]
        return self.to_level(sc, level, lambda s2: self.split_at(s2, cases, s.span),
                             s.span)

    def split_at(self, sc: Scope, cases: list[tuple[int, S.Case]],
                 span: Span) -> Stmts:
        n = sc.persp.n
        if sum(c for c, _ in cases) > n:
            raise BadInput(f"bad split: the cases ask for {sum(c for c, _ in cases)} "
                           f"units of {sc.persp} (Sec 3.3, Fig. 9)", rule="T-Split",
                           span=span)
        claims = [p for p in sc.pending if p.kind == "claim"
                  and p.dim.level == sc.persp.level]
        if claims:
            return self.claim_split(sc, claims, cases, span)
        settle = [p for p in sc.pending if p.kind == "partition"
                  and p.dim.level == sc.persp.level and n % p.dim.n == 0]
        if settle:
            # the split's arms run narrower than the code: place the partitions of
            # this level now, while their sources are at the code's perspective
            return self.settle(sc, settle, lambda s2: self.split_at(s2, cases, span))

        def halves(rest: list[tuple[int, S.Case]], r: int) -> B.Stmt:
            """The cases, laid from unit 0, as aligned binary splits (T-Split: n2
            divides n1): a case filling r is its body; otherwise r is halved and each
            half takes the cases that fall in it (idle units: `skip`)."""
            if not rest:
                return B.Skip(span)
            m, case = rest[0]
            if m == r:
                return B.seq(*self.block(case.body,
                                         sc.at(Perspective(sc.persp.level, m))))
            half, acc, k = r // 2, 0, 0
            while k < len(rest) and acc + rest[k][0] <= half:
                acc += rest[k][0]
                k += 1
            if r % 2 or m > half or (k < len(rest) and acc != half):
                raise BadInput(f"misaligned split: the cases {[c for c, _ in cases]} "
                               f"do not tile {sc.persp} in aligned pieces (Sec 3.3, "
                               "Fig. 10)", rule="T-Split", span=case.span)
            return B.Split(half, half, halves(rest[:k], half), halves(rest[k:], half),
                           span)

        return [halves(cases, n)]

    def settle(self, sc: Scope, ps: list[Pending], k: Body) -> Stmts:
        """partition x into y by n/d at e for each of `ps`, code staying at (h, n)."""
        inner = sc.child()
        inner.pending[:] = [q for q in sc.pending if q not in ps]
        wraps: list[tuple[Pending, str, B.Expr]] = []
        for p in ps:
            tgt = sc.names.fresh(p.target)
            off: B.Expr = B.IntLit(0, p.span)
            if p.index is None and p.offset is not None:
                off = expr(p.offset, sc.at(p.dim), BaseType.INT)
            wraps.append((p, tgt, off))
            inner.env[p.target] = Sym("array", tgt, p.elem, p.dim, p.mem,
                                      index=p.index)
        node = B.seq(*k(inner))
        for p, tgt, off in reversed(wraps):
            node = B.Partition(None, p.source, tgt, sc.persp.n // p.dim.n, node,
                               p.span, off)
        return [node]

    def claim_split(self, sc: Scope, claims: list[Pending],
                    cases: list[tuple[int, S.Case]], span: Span) -> Stmts:
        """claim x into y at n (T-Claim) runs the first n units: the case that uses y
        must be the first (l.564: y in one branch only, typing_rules/prism)."""
        if len(claims) > 1 or len(cases) > 1 or claims[0].dim.n != cases[0][0]:
            raise BadInput("unsupported claim: one claim, consumed by a split with "
                           "one case of its size", rule="Elab-Claim", span=span)
        p, (m, case) = claims[0], cases[0]
        tgt = sc.names.fresh(p.target)
        inner = sc.at(p.dim)
        inner.pending[:] = [q for q in inner.pending if q is not p]
        inner.env[p.target] = Sym("array", tgt, p.elem, p.dim, p.mem)
        return [B.Claim(None, p.source, tgt, m, B.seq(*self.block(case.body, inner)),
                        p.span)]

    def view(self, s: S.Partition | S.Claim, sc: Scope) -> Stmts:
        """with partition / claim: x hidden, y pending until its perspective."""
        sym = sc.lookup(s.source, s.span)
        if sym.kind != "array" or sym.mem is MemKind.LOCAL:
            raise BadInput(f"bad partition: {s.source} is not a shared or global "
                           "pointer", rule="T-Partition", span=s.span)
        if sym.persp != sc.persp:
            raise BadInput(f"perspective mismatch: {s.source} lives at {sym.persp}; "
                           f"only code at {sym.persp} may narrow it (code is at "
                           f"{sc.persp})", rule="T-Partition", span=s.span)
        inner = sc.child()
        verb = "partitioned" if isinstance(s, S.Partition) else "claimed"
        inner.env[s.source] = Sym("hidden", "", sym.elem, sym.persp,
                                  why=f"is {verb} as {s.target}")
        if isinstance(s, S.Partition):
            dim, offset, index, kind = persp_of(s.dim), s.offset, s.index, "partition"
        else:
            if not (isinstance(s.offset, S.Num) and s.offset.value == 0):
                raise BadInput("unsupported claim: a claim at an offset (Bundl's claim "
                               "keeps the pointer)", rule="Elab-Claim", span=s.span)
            dim, offset, index, kind = persp_of(s.scope), None, None, "claim"
        assert sym.mem is not None  # an array
        inner.pending.append(Pending(kind, sym.bname, s.target, dim, offset, index,
                                     sym.elem, sym.mem, s.span))
        inner.env[s.target] = Sym("deferred", "", sym.elem, dim)
        if kind == "partition" and dim == sc.persp:
            return self.place(inner, dim, 1, lambda s2: self.block(s.body, s2),
                              s.span)
        return self.block(s.body, inner)

    # ------------------------------------------------------------------ calls

    def call_stmt(self, call: S.CallExpr, sc: Scope, result: str | None,
                  span: Span) -> Stmts:
        if call.fn == "unsafe":
            raise BadInput("unmodelled: unsafe(...) is raw CUDA; gpusem has no "
                           "semantics for it", rule="Unsafe-Unmodelled", span=span)
        if call.fn == "float4_store":
            return self.float4_store(call, sc, span)
        if call.fn == "intrinsic.mma":
            from gpusem.calculus.prism.intrinsics import mma_m16n8k8

            return mma_m16n8k8(call, sc, span)
        if call.fn == "intrinsic.wgmma":
            from gpusem.calculus.prism.intrinsics import wgmma

            return wgmma(call, sc, span)
        if call.fn == "intrinsic.shfl_up":
            from gpusem.calculus.prism.intrinsics import shfl_up

            return shfl_up(call, sc, span)
        f = self.mod.function(call.fn)
        if f is None or f.kind != "device":
            raise BadInput(f"unknown function: {call.fn} (no @prism(\"device\") "
                           "function or modelled intrinsic of that name)",
                           rule="Elab-Call", span=span)
        if sc.depth > 16 or len(call.args) != len(f.params) or call.kwargs:
            raise BadInput(f"bad call: {call.fn} takes {len(f.params)} positional "
                           "arguments (and no recursion)", rule="Elab-Call", span=span)
        inner = Scope(sc.persp, {}, sc.shape, sc.names, result=result,
                      depth=sc.depth + 1)
        if result is not None:
            inner.env[result] = Sym("scalar", result, BaseType.INT, sc.persp)
        out: Stmts = []
        for param, arg in zip(f.params, call.args, strict=True):
            out += self.bind_param(param, arg, sc, inner, span)
        return out + self.block(f.body, inner)

    def bind_param(self, param: S.Param, arg: S.Expr, sc: Scope, inner: Scope,
                   span: Span) -> Stmts:
        if param.type.pointer:
            if not isinstance(arg, S.Name):
                raise BadInput(f"bad argument: pointer parameter {param.name} takes a "
                               "named array", rule="Elab-Call", span=arg.span)
            sym = sc.lookup(arg.id, arg.span)
            if sym.kind != "array":
                raise BadInput(f"bad argument: {arg.id} is not an array",
                               rule="Elab-Call", span=arg.span)
            inner.env[param.name] = replace(sym, const=param.type.const)
            return []
        elem = base_type(param.type)
        at = persp_of(param.persp)
        at = at if leq(at, sc.persp) else sc.persp
        if isinstance(arg, S.Name):
            sym = sc.lookup(arg.id, arg.span)
            if sym.kind == "scalar" and sym.elem is elem:
                inner.env[param.name] = replace(sym, const=True)
                return []
        b = sc.names.fresh(param.name)
        inner.env[param.name] = Sym("scalar", b, elem, at)
        return [B.Decl(b, elem, at, expr(arg, sc, elem), B.Skip(), span)]

    def float4_store(self, call: S.CallExpr, sc: Scope, span: Span) -> Stmts:
        """float4_store(x[i], v): x[i .. i+3] = v.x .. v.w (one vector store)."""
        if (len(call.args) != 2 or not isinstance(call.args[0], S.Subscript)
                or not isinstance(call.args[1], S.Name)):
            raise BadInput("bad call: float4_store(x[i], v)", rule="Elab-Float4",
                           span=span)
        arr, idx = subscript(call.args[0].base, call.args[0].indices, sc, span)
        v = call.args[1]
        return [B.ArrAssign(arr, B.BinOp("+", idx, B.IntLit(k, span), span),
                            B.Var(float4_field(v, c, sc), span), span)
                for k, c in enumerate("xyzw")]


def _zero(elem: BaseType, span: Span) -> B.Expr:
    if elem is BaseType.FLOAT:
        return B.FloatLit(0.0, span)
    if elem is BaseType.BOOL:
        return B.BoolLit(False, span)
    return B.IntLit(0, span)


def _may_break(s: S.Stmt) -> bool:
    """`s` can run a break of the enclosing loop (not of a loop nested in it)."""
    match s:
        case S.Break():
            return True
        case S.If(_, then, orelse):
            return any(_may_break(x) for x in (*then, *orelse))
        case S.Group(_, body) | S.Partition(body=body) | S.Claim(body=body):
            return any(_may_break(x) for x in body)
        case S.Split(_, cases):
            return any(_may_break(x) for c in cases for x in c.body)
    return False
