"""strategies/kernels.drop_dead_lets in one bottom-up walk (issue 31.3) must drop
exactly the lets the former version dropped: that one asked, for each let, whether
its (already cleaned) body mentions the name, walking the body again each time."""

from __future__ import annotations

from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.calculus.bundl.walk import child_stmts
from gpusem.fuzz.bundl.strategies.draws import node_fields
from gpusem.fuzz.bundl.strategies.kernels import _rebuild, drop_dead_lets
from gpusem.fuzz.bundl.strategies.programs import programs
from gpusem.fuzz.hunt import generate_round


def _former_drop(s: A.Stmt) -> A.Stmt:
    match s:
        case A.Decl(name, ty, persp, init, body, span):
            body = _former_drop(body)
            if not _former_mentions(body, name):
                return body
            return A.Decl(name, ty, persp, init, body, span)
        case A.Seq(stmts):
            return A.seq(*(_former_drop(x) for x in stmts))
    children = child_stmts(s)
    if not children:
        return s
    return _rebuild(s, tuple(_former_drop(c) for c in children))


def _former_mentions(s: object, name: str) -> bool:
    if isinstance(s, A.Var):
        return s.name == name
    if isinstance(s, A.Assign) and s.name == name:
        return True
    if isinstance(s, tuple):
        return any(_former_mentions(x, name) for x in s)
    children = node_fields(s)
    return children is not None and any(_former_mentions(getattr(s, f), name)
                                        for f in children)


def _lets(s: A.Stmt) -> int:
    return isinstance(s, A.Decl) + sum(_lets(c) for c in child_stmts(s))


def test_drops_what_the_former_walk_dropped() -> None:
    drawn = generate_round(programs(max_depth=4, max_stmts=4), 11, 40)
    dropped = 0
    for d in drawn:
        main = d.program.main
        want = _former_drop(main)
        assert drop_dead_lets(main) == want
        dropped += _lets(main) - _lets(want)
    assert dropped > 10  # the sample has dead lets to drop


def test_a_let_mentioned_only_by_an_assignment_or_an_inner_init_stays() -> None:
    INT = A.BaseType.INT
    p = Perspective(Level.THREAD, 1)
    inner = A.Decl("y", INT, p, A.Var("x"), A.Skip())  # x read only by y's init
    kept = A.Decl("x", INT, p, A.IntLit(1), A.seq(inner, A.Assign("y", A.IntLit(2))))
    assert drop_dead_lets(kept) == kept
    assigned = A.Decl("z", INT, p, A.IntLit(0), A.Assign("z", A.IntLit(3)))
    assert drop_dead_lets(assigned) == assigned
    dead = A.Decl("w", INT, p, A.IntLit(0), A.Assign("z", A.IntLit(3)))
    assert drop_dead_lets(dead) == A.Assign("z", A.IntLit(3))

