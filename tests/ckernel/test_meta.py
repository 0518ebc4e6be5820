"""Every AST class of CKernel has a printer case, a parser case, a typing rule, a
reference rule, an emitter case and a generator that draws it (STYLE 9)."""

from __future__ import annotations

import dataclasses
import typing

from gpusem.calculus.ckernel import ast as A
from gpusem.fuzz.ckernel.templates import kernels
from gpusem.fuzz.hunt import generate_round

NODE_UNIONS = (A.Expr, A.Stmt, A.Index)


def classes() -> set[type]:
    return {c for u in NODE_UNIONS for c in typing.get_args(u)}


def nodes(x: object) -> typing.Iterator[object]:
    if isinstance(x, tuple):
        for y in x:
            yield from nodes(y)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        yield x
        for f in dataclasses.fields(x):
            yield from nodes(getattr(x, f.name))


def test_the_generator_draws_every_ast_class() -> None:
    seen = {type(n) for d in generate_round(kernels(), 5, 300) for n in nodes(d.program)}
    assert classes() - seen == set()


def test_every_ast_class_has_a_case_in_every_stage() -> None:
    import inspect

    from gpusem.calculus.ckernel import parser, printer
    from gpusem.compiler.ckernel_cuda import emit
    from gpusem.interpreter.ckernel import machine
    from gpusem.typing_rules.ckernel import wellformed

    for module in (printer, wellformed, machine, emit):
        text = inspect.getsource(module)
        missing = [c.__name__ for c in classes() if f"A.{c.__name__}(" not in text]
        assert missing == [], (module.__name__, missing)
    assert all(f"A.{c.__name__}(" in inspect.getsource(parser) for c in classes())
