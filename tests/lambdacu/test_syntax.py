"""lambda-cu syntax (seed 002, Sec 5): parse, print, errors as one line."""

import pytest
from gpusem.calculus.errors import BadInput
from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.calculus.lambdacu.printer import print_program
from gpusem.calculus.lambdacu.values import F32, I32, Arr, ArrayT, Char

DOT = """
// a comment
kernel dotp(xs: [float], ys: [float]) -> float {
  let ps = MAP { i => let a = xs[i] in let b = ys[i] in mul a b using xs, ys } #xs
  let s = REDUCE { i => ps[i] using ps } (fadd) #ps
  ret s
}
kernel pack(fs: [bool], xs: [int], n: int) -> ([bool], [int]) {
  let a, b = FILTER { i => let f = fs[i] in let x = xs[i] in ret f, x using fs, xs }
                    { f, x => f } n
  ret a, b
}
function main() -> (float, char) {
  let (xs) = [1.0, 2.5e1, -3.0] in
  let (e) = [: int] in
  let (d) = run dotp(xs, xs) in
  if true then (d, 'a') else (d, '\\x41')
}
"""


def test_parse_builds_the_productions_of_section_5():
    p = parse_program(DOT, "dot.lcu")
    k = p.kernels[0]
    assert k.params[0].type == ArrayT("float")
    assert isinstance(k.body, ast.KLet) and k.body.app.soac == "MAP"
    assert k.body.app.size == ast.Len("xs")
    assert isinstance(k.body.body, ast.KLet)
    assert k.body.body.app.args[1] == ast.Rops(("fadd",))
    thunk = p.kernels[1].body.app.args[1]
    assert isinstance(thunk, ast.Thunk) and thunk.params == ("f", "x")
    main = p.functions[0].body
    assert isinstance(main, ast.CLet)
    assert main.rhs == ast.CTuple((ast.Lit(Arr("float", (F32(1.0), F32(25.0),
                                                         F32(-3.0)))),))
    assert k.span.line == 3 and k.body.app.span.line == 4


def test_print_then_parse_is_the_identity_on_an_example():
    p = parse_program(DOT, "dot.lcu")
    text = print_program(p)
    assert parse_program(text, "again.lcu") == p
    assert print_program(parse_program(text)) == text


def test_char_and_int_literals():
    p = parse_program("function main() -> char { let (c) = '\\x7e' in c }")
    rhs = p.functions[0].body
    assert isinstance(rhs, ast.CLet)
    assert rhs.rhs == ast.CTuple((ast.Lit(Char(126)),))
    q = parse_program("function main() -> int { -2147483648 }")
    assert q.functions[0].body == ast.CTuple((ast.Lit(I32(-2**31)),))


@pytest.mark.parametrize("text, message", [
    ("kernel k() -> int { ret }",
     "1:25: syntax error: expected one of a name, got '}'"),
    ("function main() -> int { 2147483648 }",
     "1:26: int literal out of range: 2147483648 does not fit int32"),
    ("function main() -> int { [1, 2.0] }",
     "1:30: mixed array literal: a float in an array of int"),
    ("function main() -> float { 1e39 }",
     "1:28: float literal out of range: 1e39 is not a finite float32"),
    ("function f() -> int { 1 }\nfunction f() -> int { 2 }",
     "2:1: duplicate definition: f"),
    ("function f(x: int, x: int) -> int { 1 }", "1:20: duplicate parameter: x"),
    ("function main() -> char { '\\x80' }", "1:27: char literal not ASCII"),
])
def test_malformed_input_is_one_line_with_its_position(text, message):
    with pytest.raises(BadInput) as err:
        parse_program(text, "bad.lcu")
    line = err.value.one_line()
    assert line.startswith("bad.lcu:" + message)
    assert "\n" not in line
