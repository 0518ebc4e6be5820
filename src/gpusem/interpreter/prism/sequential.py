"""The per-thread reading of a Prism kernel (Sec 3), written directly on the surface
tree, for the `elaboration` property of the prism fuzz target: a surface program means
what this reading says, and its Bundl elaboration must end in the same memory.

The reading covers the fragment the generator writes (`fuzz/prism/strategies.py`):
a kernel that narrows an output pointer to one cell per thread (`partition` at the
offset `id()` gives, with `group` down to thread[1]) and computes that cell with
scalar code: declarations, assignment and `op=`, `for range` with `break`, `if`,
ternaries, reads of input arrays, calls of device functions with a result, and
`match split` whose cases choose which threads run. Each thread is read alone, in
order (the fragment has no communication between threads), with C's int32: wrapping
arithmetic, division truncating toward zero. Anything outside the fragment is a
`BadInput` naming its span (the reading does not guess).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.calculus.errors import BadInput
from gpusem.calculus.prism import ast as S

Value = int | bool
Code = tuple[str, int]  # a perspective as (base level, size): warp[1] is (thread, 32)


def wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q)


class _Break(Exception):
    pass


class _Return(Exception):
    def __init__(self, value: Value):
        super().__init__()
        self.value = value


@dataclass
class Thread:
    """One thread's view: its block b, its index t in the block, the machine."""

    b: int
    t: int
    threads: int
    blocks: int
    env: dict[str, Value] = field(default_factory=dict)
    views: dict[str, tuple[str, int]] = field(default_factory=dict)  # y -> (array, off)
    active: bool = True


def read_kernel(mod: S.Module, memory: dict[str, list[int]]) -> dict[str, list[int]]:
    """The final global memory of the launched kernel, each thread read in turn."""
    launch = mod.launch
    if launch is None:
        raise BadInput("missing header: # launch", rule="Launch-Header", span=mod.span)
    kernel = mod.function(launch.kernel)
    assert kernel is not None
    mem = {k: list(v) for k, v in memory.items()}
    scalars = {a.name: int(a.values[0]) for a in launch.args
               if a.elem is None and a.values is not None}
    for b in range(launch.blocks):
        for t in range(launch.threads):
            th = Thread(b, t, launch.threads, launch.blocks, dict(scalars))
            for p in kernel.params:
                if p.type.pointer:
                    th.views[p.name] = (p.name, 0)
            _Reader(mod, mem, th, ("grid", 1)).block(kernel.body)
    return mem


@dataclass
class _Reader:
    mod: S.Module
    mem: dict[str, list[int]]
    th: Thread
    level: Code  # the code's perspective (level, n): what id() counts in

    def block(self, body: tuple[S.Stmt, ...]) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: S.Stmt) -> None:  # noqa: C901 - one arm per construct
        th = self.th
        match s:
            case S.Decl(name, _, persp, init):
                at = (persp.base_level, persp.base_n) if persp else self.level
                th.env[name] = self.expr(init, at) if init is not None else 0
            case S.Assign(S.Name(name), value, op):
                v = self.expr(value, self.level)
                th.env[name] = self.arith(op, th.env[name], v) if op else v
            case S.Assign(S.Subscript(S.Name(arr), (idx,)), value, op):
                name, off = th.views[arr]
                i = off + self.expr(idx, self.level)
                v = self.expr(value, self.level)
                self.mem[name][i] = self.arith(op, self.mem[name][i], v) if op else v
            case S.If(cond, then, orelse):
                self.block(then if self.expr(cond, self.level) else orelse)
            case S.For(var, start, stop, step, body):
                th.env[var] = self.expr(start, self.level)
                hi, st = self.expr(stop, self.level), self.expr(step, self.level)
                try:
                    while th.env[var] < hi:
                        self.block(body)
                        th.env[var] = wrap(th.env[var] + st)
                except _Break:
                    pass
            case S.Break():
                raise _Break
            case S.Return(value):
                raise _Return(self.expr(value, self.level) if value else 0)
            case S.Pass():
                pass
            case S.Group(p, body):
                _Reader(self.mod, self.mem, th, (p.base_level, p.base_n)).block(body)
            case S.Partition(src, tgt, _, offset, None, body):
                name, off = th.views[src]
                dim = (s.dim.base_level, s.dim.base_n)
                th.views[tgt] = (name, off + self.expr(offset, dim))  # type: ignore
                self.block(body)
            case S.Split(_, cases):
                lo = 0
                for c in cases:
                    if lo <= th.t < lo + c.n:
                        _Reader(self.mod, self.mem, Thread(
                            th.b, th.t - lo, th.threads, th.blocks, th.env,
                            th.views), ("thread", c.n)).block(c.body)
                    lo += c.n
            case _:
                raise BadInput(f"outside the read fragment: {type(s).__name__}",
                               rule="Prism-Reading", span=s.span)

    def arith(self, op: str, a: Value, b: Value) -> Value:
        return self.expr(S.Bin(op, S.Num(int(a)), S.Num(int(b))), self.level)

    def expr(self, e: S.Expr, at: Code) -> Value:  # noqa: C901 - one arm per construct
        th = self.th
        match e:
            case S.Num(v):
                return int(v)
            case S.BoolConst(v):
                return v
            case S.Name(name):
                return th.env[name]
            case S.Id():
                return self.id_of(at)
            case S.Un("-", a):
                return wrap(-int(self.expr(a, at)))
            case S.Un("!", a):
                return not self.expr(a, at)
            case S.Bin(op, a, b):
                x, y = self.expr(a, at), self.expr(b, at)
                return _binop(op, x, y)
            case S.Ternary(c, a, b):
                return self.expr(a, at) if self.expr(c, at) else self.expr(b, at)
            case S.Subscript(S.Name(arr), (idx,)):
                name, off = th.views[arr]
                return self.mem[name][off + int(self.expr(idx, at))]
            case S.CallExpr(fn, args):
                return self.call(fn, [self.expr(a, at) for a in args])
        raise BadInput(f"outside the read fragment: {type(e).__name__}",
                       rule="Prism-Reading", span=e.span)

    def id_of(self, at: Code) -> int:
        """Sec 3.5: the index of the declared perspective's unit inside the code's
        (E-Partition-Id, fixed reading)."""
        th, (code, n), (lv, m) = self.th, self.level, at
        if code == "grid":
            return th.b // m if lv == "block" else (th.b * th.threads + th.t) // m
        if code == "block":
            return th.t // m if lv == "thread" else 0
        return (th.t % n) // m

    def call(self, fn: str, args: list[Value]) -> Value:
        f = self.mod.function(fn)
        if f is None:
            raise BadInput(f"unknown function: {fn}", rule="Prism-Reading")
        inner = Thread(self.th.b, self.th.t, self.th.threads, self.th.blocks,
                       {p.name: a for p, a in zip(f.params, args, strict=True)})
        try:
            _Reader(self.mod, self.mem, inner, self.level).block(f.body)
        except _Return as r:
            return r.value
        return 0


def _binop(op: str, x: Value, y: Value) -> Value:
    match op:
        case "+":
            return wrap(int(x) + int(y))
        case "-":
            return wrap(int(x) - int(y))
        case "*":
            return wrap(int(x) * int(y))
        case "/":
            return c_div(int(x), int(y))
        case "%":
            return wrap(int(x) - int(y) * c_div(int(x), int(y)))
        case "<":
            return x < y
        case "<=":
            return x <= y
        case ">":
            return x > y
        case ">=":
            return x >= y
        case "==":
            return x == y
        case "!=":
            return x != y
        case "&&":
            return bool(x) and bool(y)
        case "||":
            return bool(x) or bool(y)
    raise BadInput(f"outside the read fragment: operator {op}", rule="Prism-Reading")
