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
