"""The surface rules of Prism that do not survive elaboration into Bundl (Sec 3.3-3.6):
checked on the surface tree, before `calculus.prism.elaborate` inlines calls and
erases `const` and the perspective bounds. Each is named, and its error carries the
surface span:

  Bound-Launch       a kernel's perspective bound fits the machine it is launched on
                     (`@requires(..., thread[n])`: n divides the threads of a block)
  Bound-Call         at a call, the callee's perspective bound can be satisfied by the
                     caller's code perspective (Sec 3.6: "functions can be called with
                     a broader code perspective than necessary, accounting for
                     alignment")
  Const-Pointer      a pointer argument lives at exactly the parameter's perspective,
                     unless the parameter is `ptr(const(...))`, which may receive a
                     broader pointer (Sec 3.6)
  Const-Write        nothing is stored through a const pointer (or a view of one)
  Claim-One-Branch   within a claim, every split uses the claimed pointer in at most
                     one of its cases (Sec 3.4.2, l.564)
  Smem-Budget        a function's shared allocations, plus its callees' declared
                     `smem`, fit the `smem=` of its @requires (Sec 3.4.2)

Conventions: π -> `persp` (the code perspective, Bundl's (level, n) with warp[n] =
thread[32n]); Γ of pointers -> `ptrs` (name -> perspective, const).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.calculus.bundl.perspective import (
    GRID1,
    Level,
    MachineShape,
    Perspective,
    leq,
)
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.prism import ast as S
from gpusem.calculus.prism.scope import persp_of
from gpusem.calculus.span import Span

_BYTES = {"bf16": 2, "bool": 1}


def require(ok: bool, rule: str, span: Span, msg: str) -> None:
    if not ok:
        raise IllTyped(msg, rule=rule, span=span)


def check_surface(mod: S.Module) -> None:
    """Every surface rule above, on every function; Bound-Launch on the kernel the
    `# launch:` header names."""
    for f in mod.functions:
        smem_budget(mod, f)
        _Walk(mod, f).run()
    launch = mod.launch
    kernel = mod.function(launch.kernel) if launch else None
    if launch is not None and kernel is not None:
        bound_launch(kernel, MachineShape(launch.blocks, launch.threads))


def bound_launch(kernel: S.Function, shape: MachineShape) -> None:
    # Bound-Launch
    for p in kernel.requires.bound:
        b = persp_of(p)
        units = {Level.GRID: 1, Level.BLOCK: shape.blocks,
                 Level.THREAD: shape.threads}[b.level]
        require(units % b.n == 0, "Bound-Launch", p.span,
                f"perspective bound: {kernel.name} requires {p}, the machine has "
                f"{units} {b.level.keyword} unit(s) per {_above(b.level)}")


def _above(level: Level) -> str:
    return {Level.GRID: "launch", Level.BLOCK: "grid", Level.THREAD: "block"}[level]


def smem_budget(mod: S.Module, f: S.Function) -> None:
    # Smem-Budget: shared allocations + the callees' declared smem <= smem=
    used, where = 0, f.requires.span
    for s in _stmts(f.body):
        if isinstance(s, S.Decl) and s.type.shared:
            n = 1
            for d in s.type.dims:
                n *= d
            used += n * _BYTES.get(s.type.base, 4)
        elif isinstance(s, S.ExprStmt | S.Decl | S.Assign):
            for call in _calls(s):
                g = mod.function(call.fn)
                if g is not None and g is not f:
                    used += g.requires.smem
    require(used <= f.requires.smem, "Smem-Budget", where,
            f"shared memory: {f.name} allocates {used} bytes (with its callees), its "
            f"bound declares smem={f.requires.smem}")


def _stmts(body: tuple[S.Stmt, ...]) -> list[S.Stmt]:
    out: list[S.Stmt] = []
    for s in body:
        out.append(s)
        match s:
            case S.If(_, a, b):
                out += _stmts(a) + _stmts(b)
            case S.While(_, b) | S.For(body=b) | S.Group(_, b):
                out += _stmts(b)
            case S.Partition(body=b) | S.Claim(body=b):
                out += _stmts(b)
            case S.Split(_, cases):
                for c in cases:
                    out += _stmts(c.body)
    return out


def _calls(s: S.Stmt) -> list[S.CallExpr]:
    match s:
        case S.ExprStmt(call):
            return [call]
        case S.Decl(init=S.CallExpr() as c) | S.Assign(value=S.CallExpr() as c):
            return [c]
    return []


def _names(e: S.Expr | None) -> set[str]:
    match e:
        case None:
            return set()
        case S.Name(name):
            return {name}
        case S.Bin(_, a, b):
            return _names(a) | _names(b)
        case S.Un(_, a) | S.Attr(a, _):
            return _names(a)
        case S.Subscript(base, idx):
            return _names(base).union(*(_names(i) for i in idx))
        case S.CallExpr(_, args, kwargs):
            return set().union(*(_names(a) for a in args),
                               *(_names(v) for _, v in kwargs))
        case S.Ternary(c, a, b):
            return _names(c) | _names(a) | _names(b)
    return set()


def _uses(body: tuple[S.Stmt, ...], name: str) -> bool:
    for s in _stmts(body):
        exprs: list[S.Expr | None] = []
        match s:
            case S.Decl(init=e):
                exprs = [e]
            case S.Assign(t, v):
                exprs = [t, v]
            case S.ExprStmt(c):
                exprs = [c]
            case S.If(c) | S.While(c):
                exprs = [c]
            case S.Partition(source=x) | S.Claim(source=x):
                if x == name:
                    return True
        if any(name in _names(e) for e in exprs):
            return True
    return False


@dataclass
class _Walk:
    mod: S.Module
    f: S.Function
    ptrs: dict[str, tuple[Perspective, bool]] = field(default_factory=dict)
    claimed: list[str] = field(default_factory=list)

    def run(self) -> None:
        for p in self.f.params:
            if p.type.pointer:
                self.ptrs[p.name] = (persp_of(p.persp), p.type.const)
        start = persp_of(self.f.requires.top) if self.f.kind == "device" else GRID1
        self.block(self.f.body, start)

    def block(self, body: tuple[S.Stmt, ...], persp: Perspective) -> None:
        for s in body:
            self.stmt(s, persp)

    def stmt(self, s: S.Stmt, persp: Perspective) -> None:  # noqa: C901
        match s:
            case S.Group(p, body):
                self.block(body, persp_of(p))
            case S.Split(level, cases):
                self.claim_one_branch(s)
                lv = Level.THREAD if level in ("warp", "warpgroup") else Level[
                    level.upper()]
                scale = {"warp": 32, "warpgroup": 128}.get(level, 1)
                for c in cases:
                    self.block(c.body, Perspective(lv, c.n * scale))
            case S.Partition(x, y, dim, body=body) | S.Claim(x, y, dim, body=body):
                at, const = self.ptrs.get(x, (persp, False))
                self.ptrs[y] = (persp_of(dim), const)
                if isinstance(s, S.Claim):
                    self.claimed.append(y)
                self.block(body, persp)
                if isinstance(s, S.Claim):
                    self.claimed.pop()
            case S.If(_, a, b):
                self.block(a, persp)
                self.block(b, persp)
            case S.While(_, body) | S.For(body=body):
                self.block(body, persp)
            case S.Assign(target=t):
                self.const_write(t)
            case S.Decl(name, ty, p, init):
                if ty.pointer or ty.shared:
                    self.ptrs[name] = (persp_of(p) if p else persp, ty.const)
                if isinstance(init, S.CallExpr):
                    self.call(init, persp)
            case S.ExprStmt(call):
                self.call(call, persp)

    def const_write(self, t: S.Expr) -> None:
        # Const-Write
        while isinstance(t, S.Subscript):
            t = t.base
        if isinstance(t, S.Name) and t.id in self.ptrs:
            require(not self.ptrs[t.id][1], "Const-Write", t.span,
                    f"const pointer: {t.id} is ptr(const(...)); nothing may be "
                    "stored through it (Sec 3.6)")

    def claim_one_branch(self, s: S.Split) -> None:
        # Claim-One-Branch (l.564)
        for y in self.claimed:
            users = [c for c in s.cases if _uses(c.body, y)]
            require(len(users) <= 1, "Claim-One-Branch", s.span,
                    f"claimed pointer: {y} is used in {len(users)} cases of one "
                    "split; a claim gives it to one branch only (Sec 3.4.2)")

    def call(self, call: S.CallExpr, persp: Perspective) -> None:
        g = self.mod.function(call.fn)
        if g is None or g.kind != "device":
            return  # not a function: the elaborator names it
        # Bound-Call: the callee's top perspective fits in the caller's, aligned
        top = persp_of(g.requires.top)
        require(leq(top, persp), "Bound-Call", call.span,
                f"perspective bound: {g.name} requires {g.requires.top}; code at "
                f"{persp} cannot call it (Sec 3.6)")
        for p in g.requires.bound:
            b = persp_of(p)
            if b.level == persp.level:
                require(persp.n % b.n == 0, "Bound-Call", call.span,
                        f"perspective bound: {g.name} requires {p}, which does not "
                        f"divide the caller's {persp}")
        for param, arg in zip(g.params, call.args, strict=False):
            if param.type.pointer and isinstance(arg, S.Name) and arg.id in self.ptrs:
                self.const_pointer(g, param, arg)

    def const_pointer(self, g: S.Function, param: S.Param, arg: S.Name) -> None:
        # Const-Pointer (Sec 3.6)
        at, const = self.ptrs[arg.id]
        want = persp_of(param.persp)
        if param.type.const:
            require(leq(want, at), "Const-Pointer", arg.span,
                    f"pointer argument: {arg.id} at {at} is narrower than "
                    f"{g.name}'s const parameter {param.name} at {param.persp}")
        else:
            require(at == want, "Const-Pointer", arg.span,
                    f"pointer argument: {arg.id} lives at {at}; {g.name}'s "
                    f"parameter {param.name} is a non-const pointer at "
                    f"{param.persp}, so the perspectives must match exactly")
            require(not const, "Const-Pointer", arg.span,
                    f"pointer argument: {arg.id} is const; {g.name}'s parameter "
                    f"{param.name} may write it")
