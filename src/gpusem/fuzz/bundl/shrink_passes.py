"""The candidate passes of the Bundl counterexample reducer (`fuzz/bundl/shrink.py`,
whose docstring lists them in order): each maps a program to smaller variants of
itself; `PASSES` orders them and says which are race-safe."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from functools import partial
from typing import TYPE_CHECKING, TypeVar, cast

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.walk import child_stmts, statement_count
from gpusem.calculus.errors import GpusemError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

N = TypeVar("N", bound="DataclassInstance")
# The statements with one child statement, their `body` (`walk.child_stmts`).
Scoped = (B.Decl | B.Alloc | B.While | B.Group | B.Destruct | B.Partition | B.Claim
          | B.Lower | B.AsyncPartition)


def typechecks(p: B.Program) -> bool:
    from gpusem.typing_rules.bundl.stmt import check_program

    try:
        check_program(p, "fixed")
    except GpusemError:
        return False
    except RecursionError:
        return False
    return True


# --------------------------------------------------------------------------- measure


def _weight(x) -> int:
    """Nodes, a variable counting 2 and a literal 1 + its magnitude's digits, so that
    replacing a variable by a constant, or a big literal by a small one, is smaller."""
    match x:
        case B.Var():
            return 2
        case B.IntLit(value=n) | B.FloatLit(value=n):  # 0, 1, -1 weigh least
            return 1 + len(str(abs(n)).rstrip("0").rstrip(".")) if abs(n) > 1 else 1
        case tuple():
            return sum(_weight(y) for y in x)
        case B.Machine(blocks=b, threads=t):
            return b + t
        case B.Alloc(size=n, body=b):
            return 1 + n + _weight(b)
        case B.GlobalDecl(size=n, init=init):
            return 1 + n + (_weight(init) if isinstance(init, tuple) else 0)
    if hasattr(x, "__dataclass_fields__"):
        return 1 + sum(_weight(getattr(x, f.name)) for f in fields(x) if f.name != "span")
    return 0


def size_key(p: B.Program) -> tuple[int, int]:
    return (statement_count(p), _weight(p))


# --------------------------------------------------------------------------- rewrite


def with_field(node: N, name: str, value: object) -> N:
    """`node` with its field `name` (chosen at run time) set to `value`."""
    return replace(node, **{name: value})


def _with_children(s: B.Stmt, kids: tuple[B.Stmt, ...]) -> B.Stmt:
    match s:
        case B.Seq():  # a deleted element leaves no `skip` behind
            return B.seq(*(k for k in kids if not isinstance(k, B.Skip)))
        case B.If():
            return replace(s, then=kids[0], orelse=kids[1])
        case B.Split():
            return replace(s, left=kids[0], right=kids[1])
    return replace(cast(Scoped, s), body=kids[0])  # child_stmts(s) == (body,)


def _everywhere(s: B.Stmt, local: Callable[[B.Stmt], Iterator[B.Stmt]]) -> Iterator[B.Stmt]:
    """Every one-step variant of `s`: `local` applied at one position, outermost first."""
    yield from local(s)
    kids = child_stmts(s)
    for k, kid in enumerate(kids):
        for v in _everywhere(kid, local):
            yield _with_children(s, kids[:k] + (v,) + kids[k + 1:])


def in_program(p: B.Program, local) -> Iterator[B.Program]:
    for v in _everywhere(p.main, local):
        yield replace(p, main=v)
    for j, f in enumerate(p.fns):
        for v in _everywhere(f.body, local):
            yield replace(p, fns=p.fns[:j] + (replace(f, body=v),) + p.fns[j + 1:])


# -------------------------------------------------------------------------- passes


def drop_functions(p: B.Program) -> Iterator[B.Program]:
    for f in p.fns:
        def no_call(s, name=f.name):
            return B.Skip() if isinstance(s, B.Call) and s.fn == name else s
        rest = tuple(g for g in p.fns if g.name != f.name)
        yield B.Program(p.machine, p.globals, tuple(replace(g, body=_map_stmts(g.body, no_call))
                                                    for g in rest),
                        _map_stmts(p.main, no_call))


def _map_stmts(s: B.Stmt, fn) -> B.Stmt:
    kids = child_stmts(s)
    if kids:
        s = _with_children(s, tuple(_map_stmts(k, fn) for k in kids))
    return fn(s)


def _delete_synced(s: B.Stmt) -> Iterator[B.Stmt]:
    """Deletions of code that synchronises: a barrier may go (the oracle's race
    analysis decides whether the rest is still race-free)."""
    match s:
        case B.Seq(stmts):
            for k, x in enumerate(stmts):
                if not _sync_free(x):
                    yield B.seq(*stmts[:k], *stmts[k + 1:])
        case _ if not _sync_free(s):
            yield B.Skip()


def _delete_plain(s: B.Stmt) -> Iterator[B.Stmt]:
    """Deletions of sync-free code: accesses go, barriers stay (race-safe). A long
    Seq loses halves, quarters, ... of itself first (delta debugging's chunks), so a
    generated block of hundreds of stores goes in a few steps, not one per store."""
    match s:
        case B.Seq(stmts):
            free = [_sync_free(x) for x in stmts]  # once: every chunk size reads it
            size = len(stmts) // 2
            while size >= 2:
                for k in range(0, len(stmts), size):
                    if all(free[k:k + size]):
                        yield B.seq(*stmts[:k], *stmts[k + size:])
                size //= 2
            for k, is_free in enumerate(free):
                if is_free:
                    yield B.seq(*stmts[:k], *stmts[k + 1:])
        case B.Skip():
            return
        case _ if _sync_free(s):
            yield B.Skip()


SYNCING = (B.Partition, B.Claim, B.Lower, B.AsyncPartition, B.Destruct, B.Group,
            B.Split, B.Alloc, B.Call, B.SyncInit, B.SyncDec, B.SyncWait, B.AsyncMemcpy,
            B.Memcpy, B.Free)


def _sync_free(s: B.Stmt) -> bool:
    return not isinstance(s, SYNCING) and all(_sync_free(c) for c in child_stmts(s))


def _hoist_control(s: B.Stmt) -> Iterator[B.Stmt]:
    """A let by its scope, a loop by its body, an if by an arm: no barrier moves, each
    thread's accesses stay in its own data (race-safe for kernel-shaped programs)."""
    match s:
        case B.Decl(body=b) | B.While(body=b):
            yield b
        case B.If(then=a, orelse=b):
            yield a
            yield b


def inline(s: B.Stmt) -> Iterator[B.Stmt]:
    """`let x = e in x = f; s` as `let x = f[x := e] in s`, and `let x = e in s` with x
    never assigned as `s[x := e]`. Reads move later (maybe past a barrier): the race
    analysis decides."""
    if not isinstance(s, B.Decl):
        return
    first, rest = (s.body.stmts[0], B.seq(*s.body.stmts[1:])) if isinstance(
        s.body, B.Seq) else (s.body, B.Skip())
    if isinstance(first, B.Assign) and first.name == s.name:
        yield replace(s, init=substitute(first.value, s.name, s.init), body=rest)
    if not _assigns(s.body, s.name):
        yield substitute(s.body, s.name, s.init)


def _assigns(s, name: str) -> bool:
    if isinstance(s, B.Assign) and s.name == name:
        return True
    return any(_assigns(c, name) for c in child_stmts(s))


def substitute(s, name: str, e: B.Expr):
    """`s` with every variable `name` replaced by the expression `e`."""
    match s:
        case B.Var(name=n) if n == name:
            return e
        case tuple():
            return tuple(substitute(x, name, e) for x in s)
    if not hasattr(s, "__dataclass_fields__"):
        return s
    changes = {f.name: substitute(getattr(s, f.name), name, e) for f in fields(s)
               if f.name != "span" and (hasattr(getattr(s, f.name), "__dataclass_fields__")
                                        or isinstance(getattr(s, f.name), tuple))}
    return replace(s, **changes) if changes else s


def hoist(s: B.Stmt) -> Iterator[B.Stmt]:
    """A compound statement replaced by a body (perspectives: the view renamed back to
    the array it was carved from; T-Partition / T-Lower / T-Claim undone)."""
    match s:
        case B.Alloc(body=b) | B.Destruct(body=b):
            yield b
        case B.Group(q=q, body=b):
            yield b
            yield _scale(b, q)
        case B.Split(left=a, right=b):
            yield a
            yield b
        case B.Partition(source=x, target=y, body=b) | B.Claim(source=x, target=y, body=b):
            yield from _unview(x, y, b)
            yield from _flatten_group(s)
        case B.Lower(source=x, target=y, body=b) | B.AsyncPartition(source=x, target=y,
                                                                      body=b):
            yield from _unview(x, y, b)


def _flatten_group(s: B.Stmt) -> Iterator[B.Stmt]:
    """`partition x1 into y1 by q { .. partition xk into yk by q { group q { s }}}}` by
    s with each yi renamed xi and its counts scaled by q: one level of the thread
    hierarchy gone (the kernel templates' `group` form, T-Group and T-Partition undone
    together; one alone is ill-typed)."""
    renames, cur = [], s
    while isinstance(cur, B.Partition):
        renames.append((cur.target, cur.source, cur.by))
        cur = cur.body
    if not isinstance(cur, B.Group) or any(by != cur.q for _, _, by in renames):
        return
    body = cur.body
    for y, x, _ in renames:
        body = rename(body, y, x)
    yield _scale(body, cur.q)


def _scale(s: B.Stmt, q: int) -> B.Stmt:
    """The counts of `s`'s own thread level times q (a group, the next level, stops)."""
    match s:
        case B.Group(q=n):
            return replace(s, q=n * q)
        case B.Partition(by=n, body=b):
            return replace(s, by=n * q, body=_scale(b, q))
        case B.Claim(at=n, body=b):
            return replace(s, at=n * q, body=_scale(b, q))
        case B.Split(n1=a, n2=b, left=x, right=y):
            return replace(s, n1=a * q, n2=b * q, left=_scale(x, q), right=_scale(y, q))
    kids = child_stmts(s)
    return _with_children(s, tuple(_scale(k, q) for k in kids)) if kids else s


def _unview(x: str, y: str, body: B.Stmt) -> Iterator[B.Stmt]:
    renamed = rename(body, y, x)
    if isinstance(renamed, (B.Group, B.Destruct)):  # the pair in one step
        yield renamed.body
    yield renamed


def _simplify_exprs(s: B.Stmt) -> Iterator[B.Stmt]:
    """Statement `s` with one of its own expressions simplified."""
    for name in _EXPR_FIELDS.get(type(s), ()):
        e = getattr(s, name)
        for v in expr_variants(e):
            yield with_field(s, name, v)
    if isinstance(s, B.Call):
        for k, e in enumerate(s.args):
            for v in expr_variants(e):
                yield replace(s, args=s.args[:k] + (v,) + s.args[k + 1:])


_EXPR_FIELDS = {B.Decl: ("init",), B.Assign: ("value",), B.ArrAssign: ("value", "index"),
                B.If: ("cond",), B.While: ("cond",)}


def expr_variants(e: B.Expr) -> Iterator[B.Expr]:
    match e:
        case B.BinOp(left=l, right=r):
            yield l
            yield r
            yield from _constants(e)
            for v in expr_variants(l):
                yield replace(e, left=v)
            for v in expr_variants(r):
                yield replace(e, right=v)
        case B.UnOp(operand=x):
            yield x
            yield from _constants(e)
            for v in expr_variants(x):
                yield replace(e, operand=v)
        case B.Index(index=ix):  # the array stays: only its index simplifies
            yield ix
            yield from _constants(e)
            for v in expr_variants(ix):
                yield replace(e, index=v)
        case B.IntLit(value=n) if n:
            yield from (B.IntLit(m) for m in dict.fromkeys((0, 1, n // 2)) if abs(m) < abs(n))
        case B.FloatLit(value=x) if x:
            yield B.FloatLit(0.0)
            yield B.FloatLit(1.0)
        case B.Var() | B.PartitionId():
            yield from _constants(e)
        case B.BoolLit():
            return
        case _:  # any other operator (e.g. an fma extension): operands, constants
            yield from _generic_variants(e)


def _generic_variants(e: B.Expr) -> Iterator[B.Expr]:
    subs = [f.name for f in fields(e) if isinstance(getattr(e, f.name), B.EXPR_CLASSES)]
    yield from (getattr(e, name) for name in subs)
    yield from _constants(e)
    for name in subs:
        for v in expr_variants(getattr(e, name)):
            yield with_field(e, name, v)


def _constants(e: B.Expr) -> Iterator[B.Expr]:
    """Constants of each type: the type checker keeps the one that fits."""
    yield B.IntLit(0)
    yield B.IntLit(1)
    yield B.BoolLit(False)
    yield B.BoolLit(True)
    yield B.FloatLit(1.0)


def _zero(x: B.IntLit | B.FloatLit | B.BoolLit) -> B.IntLit | B.FloatLit | B.BoolLit:
    """The literal 0 of `x`'s type (False for a bool)."""
    match x:
        case B.IntLit():
            return B.IntLit(0)
        case B.FloatLit():
            return B.FloatLit(0.0)
        case B.BoolLit():
            return B.BoolLit(False)


def drop_globals(p: B.Program) -> Iterator[B.Program]:
    for g in p.globals:
        yield replace(p, globals=tuple(h for h in p.globals if h is not g))


def shrink_globals(p: B.Program) -> Iterator[B.Program]:
    """Initialised inputs: every value set to 0 (fewer digits to read), one at a time."""
    for j, g in enumerate(p.globals):
        if isinstance(g.init, tuple) and any(x.value for x in g.init):
            zero = tuple(_zero(x) for x in g.init)
            yield replace(p, globals=p.globals[:j] + (replace(g, init=zero),)
                          + p.globals[j + 1:])


def shrink_machine(p: B.Program) -> Iterator[B.Program]:
    """Fewer blocks / threads; the partition, group, claim and split counts that named
    the old count (the kernel templates' `by B`, `group T`) follow it."""
    b, t = p.machine.blocks, p.machine.threads
    for nb, nt in [(x, t) for x in (1, 2) if x < b] + [(b, x) for x in (1, 2, 4, 8, 32)
                                                      if x < t]:
        old, new = (b, nb) if nb != b else (t, nt)
        recount = partial(_recount, old=old, new=new)
        yield replace(p, machine=replace(p.machine, blocks=nb, threads=nt),
                      main=_map_stmts(p.main, recount),
                      fns=tuple(replace(f, body=_map_stmts(f.body, recount))
                                for f in p.fns))


def _recount(s: B.Stmt, old: int, new: int) -> B.Stmt:
    match s:
        case B.Partition(by=n) if n == old:
            return replace(s, by=new)
        case B.Group(q=n) if n == old:
            return replace(s, q=new)
        case B.Claim(at=n) if n == old:
            return replace(s, at=new)
    return s


def shrink_arrays(p: B.Program) -> Iterator[B.Program]:
    """Shorter shared / global arrays (an initialised input keeps its first values).
    Race-safe only without partitions: a length the partition count does not divide
    is well typed, and its pieces may overlap (len div c = 0), so the race analysis
    decides."""
    for j, g in enumerate(p.globals):
        for n in _shorter(g.size):
            init = g.init[:n] if isinstance(g.init, tuple) else g.init
            yield replace(p, globals=p.globals[:j] + (replace(g, size=n, init=init),)
                          + p.globals[j + 1:])
    yield from in_program(p, lambda s: (replace(s, size=n) for n in _shorter(s.size))
                           if isinstance(s, B.Alloc) else iter(()))


def _shorter(n: int) -> list[int]:
    return [m for m in dict.fromkeys((1, 2, 4, n // 2)) if 0 < m < n]


def _flat(p: B.Program) -> bool:
    return not p.fns and _sync_free(p.main)


def hoist_pairs(p: B.Program) -> Iterator[B.Program]:
    """Two hoists at once, where the first alone is ill-typed: perspectives nest, so
    `lower s into st { lower ob into ot { destruct { .. st .. } } }` loses its inner
    lower only together with the outer one (T-Lower needs code at s's perspective)."""
    for c in in_program(p, hoist):
        if not typechecks(c):
            yield from in_program(c, hoist)


# (pass, race-safe): a race-safe edit of a program race-free by construction gives one
# (it removes accesses, or keeps each thread's accesses in its own data, and moves no
# barrier), so the oracle need not ask the z3 race analysis to prove it again.
PASSES: tuple[tuple[Callable[[B.Program], Iterator[B.Program]], bool], ...] = (
    (lambda p: in_program(p, _delete_plain), True),  # first: no race analysis needed
    (lambda p: in_program(p, _hoist_control), True),
    # Early: the oracle's reference interpreter costs about linearly in threads, so
    # every later candidate is cheaper on a smaller machine.
    (lambda p: shrink_machine(p) if _flat(p) else iter(()), True),  # uniform code
    (lambda p: iter(()) if _flat(p) else shrink_machine(p), False),
    (lambda p: shrink_arrays(p) if _flat(p) else iter(()), True),
    (lambda p: iter(()) if _flat(p) else shrink_arrays(p), False),
    (drop_functions, False),
    (lambda p: in_program(p, _delete_synced), False),
    (lambda p: in_program(p, hoist), False),
    (lambda p: in_program(p, inline), False),
    (hoist_pairs, False),
    (lambda p: in_program(p, _simplify_exprs), True),
    (drop_globals, True),
    (shrink_globals, True),
)


# -------------------------------------------------------------------------- renaming


def rename(s, old: str, new: str):
    """`s` with every mention of the name `old` (variables, view and copy operands,
    assigned names) replaced by `new`; the type checker rejects a capture."""
    match s:
        case B.Var(name=n) if n == old:
            return replace(s, name=new)
        case tuple():
            return tuple(rename(x, old, new) for x in s)
        case str() | int() | float() | bool() | None:
            return s
    if not hasattr(s, "__dataclass_fields__"):
        return s
    changes = {}
    for f in fields(s):
        if f.name == "span":
            continue
        v = getattr(s, f.name)
        if f.name in _NAME_FIELDS and v == old:
            changes[f.name] = new
        elif hasattr(v, "__dataclass_fields__") or isinstance(v, tuple):
            changes[f.name] = rename(v, old, new)
    return replace(s, **changes) if changes else s


_NAME_FIELDS = {"name", "source", "target", "dst", "src"}
