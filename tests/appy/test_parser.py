"""The APPy front end: paper syntax, directive grammar, spans, print/parse identity."""

from __future__ import annotations

import pytest
from gpusem.calculus.appy import ast as A
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.appy.printer import print_program
from gpusem.calculus.errors import BadInput
from gpusem.fuzz.appy.strategies import programs
from hypothesis import HealthCheck, given, settings


def loop_of(src: str) -> A.For:
    fn = parse_program(src)
    assert isinstance(fn.body[0], A.For)
    return fn.body[0]


@pytest.mark.parametrize(("pragma", "directive"), [
    ("parallel for", A.ParallelFor()),
    ("parallel for simd", A.ParallelFor(simd=True)),
    ("parallel for simd(128)", A.ParallelFor(simd=True, width=128)),
    ("parallel for reduction(+:a,b)", A.ParallelFor(reduction=("a", "b"))),
    ("simd", A.Simd()),
    ("simd(64)", A.Simd(64)),
    ("sequential for", A.SequentialFor()),
])
def test_loop_directives(pragma: str, directive) -> None:
    src = f"def k(A, N):\n    #pragma {pragma}\n    for i in range(N):\n        A[i] = 1.0\n"
    assert loop_of(src).directive == directive


def test_range_forms_normalise() -> None:
    one = loop_of("def k(A, N):\n    for i in range(N):\n        A[i] = 0\n")
    three = loop_of("def k(A, N):\n    for i in range(0, N, 1):\n        A[i] = 0\n")
    assert one == three
    assert one.start == A.Const(0) and one.step == A.Const(1)


def test_tensor_pragma_properties() -> None:
    src = ("def k(A, y, M, N):\n    #pragma :M=>parallel :N=>reduce(sum),le(256)\n"
           "    y[:M] = sum(A[:M, :N], axis=1)\n")
    st = parse_program(src).body[0]
    assert isinstance(st, A.Assign) and st.pragma is not None
    m, n = st.pragma.dims
    assert m.parallel and not m.reduce
    assert n.reduce == "sum" and n.le == 256 and not n.parallel
    assert st.value == A.Call("sum", (A.Subscript("A", (A.Slice(None, A.Name("M")),
                                                        A.Slice(None, A.Name("N")))),), 1)


def test_atomic_and_arrays_are_syntactic() -> None:
    fn = parse_program("def k(A, s, N):\n    #pragma parallel for\n    for i in range(N):"
                       "\n        #pragma atomic\n        s[0] += A[i]\n")
    assert [p.is_array for p in fn.params] == [True, True, False]
    upd = fn.body[0].body[0]
    assert upd.atomic and upd.op == "+"


def test_spans_point_at_the_source() -> None:
    fn = parse_program("def k(A, N):\n    #pragma simd\n    for i in range(N):\n"
                       "        A[i] = 2.0\n", "f.py")
    loop = fn.body[0]
    assert (loop.span.file, loop.span.line) == ("f.py", 3)
    assert loop.body[0].span.line == 4


@pytest.mark.parametrize(("src", "prefix"), [
    ("def k(A, N):\n    #pragma parallel\n    for i in range(N):\n        A[i] = 0\n",
     "unknown directive"),
    ("def k(A, N):\n    #pragma simd(x)\n    for i in range(N):\n        A[i] = 0\n",
     "unknown directive"),
    ("def k(A, N):\n    #pragma atomic\n    for i in range(N):\n        A[i] = 0\n",
     "unknown directive"),
    ("def k(A, N):\n    #pragma parallel for\n    A[0] = 1\n", "unknown directive"),
    ("def k(A, N):\n    #pragma parallel for\n    if N > 0:\n        A[0] = 1\n",
     "misplaced pragma"),
    ("def k(A, N):\n    #pragma :N=>parallel\n    A[:N] = A[::2]\n", "unsupported syntax"),
    ("def k(A, N):\n    for i in A:\n        A[i] = 0\n", "unsupported syntax"),
    ("def k(A, N):\n    A[0] = foo(1)\n", "unknown function"),
    ("def k(A, N)\n    pass\n", "syntax error"),
    ("x = 1\n", "no function"),
    ("def k(A):\n    A[0] = 1\n#pragma simd\n", "dangling pragma"),
])
def test_malformed_is_bad_input(src: str, prefix: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_program(src)
    assert err.value.prefix == prefix
    assert err.value.exit_code == 2


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_print_parse_identity(prog) -> None:
    assert parse_program(print_program(prog.fn)) == prog.fn
