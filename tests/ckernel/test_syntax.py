"""CKernel's concrete syntax: parse . print = id (hand-written and generated), and
malformed text is one BadInput line with file:line:col."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from gpusem.calculus.ckernel.parser import parse_kernel
from gpusem.calculus.ckernel.printer import print_kernel
from gpusem.calculus.errors import BadInput
from gpusem.fuzz.ckernel.templates import kernels
from tests.ckernel.kernels import EXCHANGE, T1


@pytest.mark.parametrize("text", [T1, EXCHANGE])
def test_print_parse_hand_written(text: str) -> None:
    k = parse_kernel(text, "t.ck")
    assert parse_kernel(print_kernel(k)) == k
    assert print_kernel(parse_kernel(print_kernel(k))) == print_kernel(k)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernels())
def test_print_parse_generated(k) -> None:
    assert parse_kernel(print_kernel(k), "g.ck") == k


@pytest.mark.parametrize("text, where, prefix", [
    (T1.replace("(ldg x0", "(ldg nope"), "t.ck:9:", "unknown buffer"),
    (T1.replace("let v : i32", "let v : i33"), "t.ck:8:", "unknown type"),
    (T1.replace("store st (own 1) =", "store st (mask tid) ="), "t.ck:7:", "bad store"),
    (T1 + "}", "t.ck:14:", "syntax error"),
    (T1.replace("(* tid", "(frob tid"), "t.ck:7:", "unknown operator"),
])
def test_malformed_is_one_line_with_its_position(text: str, where: str,
                                                 prefix: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_kernel(text, "t.ck")
    line = err.value.one_line()
    assert line.startswith(where) and "\n" not in line
    assert err.value.prefix == prefix
