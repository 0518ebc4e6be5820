"""Issue 31.3's cuts in the Bundl -> CUDA passes, each held to the slow answer.

`place_sync` asks `accesses` of every statement and again of every statement that
encloses it; the walk of each statement is now recorded once (`accesses.Scripts`) and
replayed. The replay must give what the walk gives, with the same pointer roots
learned on the way, and it must walk each statement once (the cost it cuts).
`map_stmt_exprs` keeps a statement whose expressions it does not change (no copy)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem import api
from gpusem.calculus.bundl.ast import BaseType
from gpusem.compiler.bundl_cuda import accesses as acc_module
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.accesses import Roots, Scripts, accesses
from gpusem.compiler.bundl_cuda.from_bundl import from_bundl
from gpusem.compiler.bundl_cuda.galloc import place_global_allocations
from gpusem.compiler.bundl_cuda.lower_async import lower_async_copies
from gpusem.compiler.bundl_cuda.lower_code import lower_code_perspectives
from gpusem.compiler.bundl_cuda.lower_data import lower_data_perspectives
from gpusem.compiler.bundl_cuda.pipeline import zero_shared_allocations
from gpusem.compiler.bundl_cuda.sync import place_sync
from gpusem.compiler.bundl_cuda.traverse import bodies, map_stmt_exprs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [p for p in sorted((ROOT / "examples/bundl").glob("*.bundl"))
            if p.stem in {"block_reduce_shared", "async_copy_shared", "claim_mask",
                          "fn_shared_scratch", "producer_consumer_split",
                          "runtime_sync_forms", "while_triangle", "split_arms"}]


def _before_sync(path: Path) -> K.KProgram:
    """The KIR `place_sync` receives (the pipeline's passes up to it)."""
    kp = from_bundl(api.parse(path.read_text()))
    for lower in (place_global_allocations, lower_data_perspectives,
                  lower_async_copies, zero_shared_allocations,
                  lower_code_perspectives):
        kp = lower(kp)
    return kp


def _post_order(stmts: tuple, out: list[K.KStmt]) -> list[K.KStmt]:
    """Inner statements before the one holding them: the order `place_sync` asks."""
    for s in stmts:
        for b in bodies(s):
            _post_order(b, out)
        out.append(s)
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_recorded_accesses_are_the_walked_ones(path: Path) -> None:
    kp = _before_sync(path)
    asked = 0
    for f in kp.functions:
        walked, replayed, memo = Roots(), Roots(), Scripts()
        for s in _post_order(f.body, []):
            want = accesses(s, walked)
            assert accesses(s, replayed, memo) == want, s
            assert replayed.of == walked.of
            asked += 1
    assert asked > 10


def test_place_sync_walks_each_statement_once(monkeypatch) -> None:
    kp = _before_sync(ROOT / "examples/bundl/block_reduce_shared.bundl")
    statements = sum(len(_post_order(f.body, [])) for f in kp.functions)
    walks = [0]
    real = acc_module.exprs_of

    def counted(s: K.KStmt) -> list[K.KExpr]:
        walks[0] += 1
        return real(s)

    monkeypatch.setattr(acc_module, "exprs_of", counted)
    place_sync(kp, sync_motion=True)
    # Each statement of the input is recorded once; the barriers `place_sync` puts
    # and the statements it rebuilds around moved ones are new, and recorded too.
    assert 0 < walks[0] <= 2 * statements


def test_map_stmt_exprs_keeps_an_unchanged_statement() -> None:
    INT = BaseType.INT
    s = K.KStore(K.KVar("o"), K.KConst(0, INT),
                 K.KBin("+", K.KVar("a"), K.KConst(1, INT), INT))
    assert map_stmt_exprs(s, lambda e: None) is s
    call = K.KCall("fn_f", (K.KVar("a"), K.KConst(2, INT)))
    assert map_stmt_exprs(call, lambda e: None) is call
    moved = map_stmt_exprs(call, lambda e: K.KVar("b") if e == K.KVar("a") else None)
    assert isinstance(moved, K.KCall) and moved.args == (K.KVar("b"), K.KConst(2, INT))


def test_every_kir_class_is_rebuilt_from_its_fields_in_order() -> None:
    """`traverse._replaced` calls a KIR class with every field positionally: that is
    `dataclasses.replace` only while each field is a plain init field."""
    import dataclasses
    import inspect

    classes = [c for c in vars(K).values()
               if inspect.isclass(c) and dataclasses.is_dataclass(c)
               and c.__module__ == K.__name__]
    assert len(classes) > 30
    for cls in classes:
        fields = dataclasses.fields(cls)
        assert all(f.init and not f.kw_only for f in fields), cls
        assert not hasattr(cls, "__post_init__"), cls
        params = list(inspect.signature(cls).parameters)
        assert params == [f.name for f in fields], cls
