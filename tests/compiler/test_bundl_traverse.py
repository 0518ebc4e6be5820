"""compiler/bundl_cuda/traverse.py after issue 31.3's speed-ups: `exprs_of` walks
without copying, `map_expr` keeps unchanged subtrees; both must still see and give
what the copying versions did (the passes and the goldens rely on it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem import api
from gpusem.calculus.bundl.ast import BaseType
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.pipeline import compile_to_kir, kir_after_sync
from gpusem.compiler.bundl_cuda.traverse import (
    _expr_names,
    bodies,
    exprs_of,
    is_expr,
    map_expr,
    walk,
)

EXAMPLES = [p for p in sorted((Path(__file__).resolve().parents[2]
                              / "examples/bundl").glob("*.bundl"))
            if not p.stem.startswith("bad")][:12]  # bad_*: rejected on purpose


def _stmts(kp: K.KProgram) -> list[K.KStmt]:
    out: list[K.KStmt] = []
    for f in kp.functions:
        walk(f.body, out.append)
    return out


def _copying_exprs_of(s: K.KStmt) -> list[K.KExpr]:
    """The former `exprs_of`: map_expr with a collecting rewrite (post-order)."""
    out: list[K.KExpr] = []
    for name in s.__dataclass_fields__:
        value = getattr(s, name)
        if is_expr(value):
            map_expr(value, lambda e: out.append(e))
        elif name == "args":
            for a in value:
                map_expr(a, lambda e: out.append(e))
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_exprs_of_lists_what_map_expr_visits(path: Path) -> None:
    text = path.read_text()
    try:
        prog = api.parse(text)
        kps = [kir_after_sync(prog, source=text), compile_to_kir(prog, source=text)]
    except Exception as err:  # noqa: BLE001 - examples that do not compile say so
        pytest.fail(f"{path.name} does not reach KIR: {err}")
    seen = 0
    for kp in kps:
        for s in _stmts(kp):
            got = exprs_of(s)
            assert got == _copying_exprs_of(s)
            seen += len(got)
            for b in bodies(s):
                assert isinstance(b, tuple)
    assert seen > 0


def test_map_expr_keeps_what_it_does_not_change() -> None:
    INT = BaseType.INT
    e = K.KBin("+", K.KBin("*", K.KVar("a"), K.KConst(2, INT), INT), K.KVar("b"), INT)
    assert map_expr(e, lambda x: None) is e  # nothing rewritten: no copy
    swapped = map_expr(e, lambda x: K.KVar("c") if x == K.KVar("b") else None)
    assert swapped == K.KBin("+", e.left, K.KVar("c"), INT)
    assert isinstance(swapped, K.KBin) and swapped.left is e.left


def _undeclared_exprs(node: object, where: list[str]) -> None:
    """Every field of `node` and of the expressions under it (read from the class's
    fields, not from traverse's table) that holds an expression, or a tuple of them,
    without being one `_expr_names` lists: what the walks would miss."""
    import dataclasses

    declared = _expr_names(node)
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        inner = (value if isinstance(value, tuple) and value and is_expr(value[0])
                 else (value,) if is_expr(value) else ())
        if inner and f.name not in declared:
            where.append(f"{type(node).__name__}.{f.name}")
        for e in inner:
            _undeclared_exprs(e, where)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_expression_sits_in_a_declared_field(path: Path) -> None:
    """The walks read only the fields kir.py declares as expressions (issue 31.3):
    after every pass, no KIR node holds one anywhere else."""
    text = path.read_text()
    prog = api.parse(text)
    where: list[str] = []
    stmts = [s for kp in (kir_after_sync(prog, source=text),
                          compile_to_kir(prog, source=text)) for s in _stmts(kp)]
    for s in stmts:
        _undeclared_exprs(s, where)
    assert stmts and where == []


def test_the_declared_expression_fields() -> None:
    INT = BaseType.INT
    assert _expr_names(K.KConst(1, INT)) == () and _expr_names(K.KVar("a")) == ()
    assert _expr_names(K.KBin("+", K.KVar("a"), K.KVar("b"), INT)) == ("left",
                                                                      "right")
    assert _expr_names(K.KCall("fn_f", ())) == ("args",)
    assert _expr_names(K.KDecl("x", "int", None)) == ("init",)
    assert _expr_names(K.KIf(K.KVar("c"), (), ())) == ("cond",)
    assert _expr_names(K.KComment("c")) == ()
