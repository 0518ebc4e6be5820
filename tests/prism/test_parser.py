"""The Prism front end (calculus/prism): surface constructs read, errors at spans."""

from __future__ import annotations

import pytest

from gpusem.calculus.errors import BadInput
from gpusem.calculus.prism import ast as S
from gpusem.calculus.prism.parser import parse_prism

HEADER = '@prism("device")\n@requires(block[1], warp[2], smem=64)\n'


def fn(body: str, params: str = "x: ptr(int) @ block[1]") -> S.Function:
    text = HEADER + f"def f({params}):\n" + body
    return parse_prism(text, "t.prism").functions[0]


def test_signature_bound_and_levels():
    f = fn("    pass\n", "a: ptr(const(float)) @ block[1], n: int @ warp[1]")
    assert f.requires.bound[1] == S.Persp("warp", 2)
    assert f.requires.bound[1].base_n == 64 and f.requires.smem == 64
    a, n = f.params
    assert a.type.pointer and a.type.const and a.type.base == "float"
    assert n.persp.base_level == "thread" and n.persp.base_n == 32


def test_every_statement_form():
    body = """\
    with group(block[1]):
        t : int @ thread[1] = id()
        r : float[4][2] @ thread[1] = { 0 }
        with partition(x, dimension=thread[1], offset=t * 2) as y:
            with group(thread[1]):
                for i in range(0, 4, 2):
                    y[i] += 1 if t > 0 else 2
                    if i == 2:
                        break
                while t < 0:
                    t = t - 1
        with partition(x, p=thread[1], f=lambda i: i * 4) as z:
            pass
        with claim(x, scope=warp[1], offset=0) as w:
            match split(thread):
                case 32:
                    pass
                case 16:
                    pass
    return
"""
    f = fn(body)
    group, ret = f.body
    assert isinstance(group, S.Group) and isinstance(ret, S.Return)
    decl, arr, part, ipart, claim = group.body
    assert isinstance(decl.init, S.Id) and arr.type.dims == (4, 2)
    assert isinstance(arr.init, S.ListInit)
    assert part.dim == S.Persp("thread", 1) and isinstance(part.offset, S.Bin)
    assert isinstance(ipart.index, S.Lambda) and ipart.index.params == ("i",)
    split = claim.body[0]
    assert isinstance(split, S.Split) and [c.n for c in split.cases] == [32, 16]
    loop = part.body[0].body[0]
    assert isinstance(loop, S.For) and loop.step == S.Num(2)
    aug = loop.body[0]
    assert aug.op == "+" and isinstance(aug.value, S.Ternary)
    assert isinstance(loop.body[1].then[0], S.Break)


def test_template_instantiated_before_typing():
    text = ("# launch: f blocks=1 threads=4\n# template: BM=8 BK=2\n"
            '@prism("global")\n@template({("BM", c_int), ("BK", c_int)})\n'
            "@requires(grid[1], block[1], thread[1])\n"
            "def f(a: ptr(float) @ grid[1]):\n"
            "    s : shared(float[BM * BK]) @ block[1]\n"
            "    x : int @ grid[1] = BM + 1\n")
    f = parse_prism(text, "t.prism").functions[0]
    assert f.body[0].type.dims == (16,)
    assert f.body[1].init == S.Bin("+", S.Num(8), S.Num(1))


def test_uninstantiated_template_is_rejected():
    text = ('@prism("global")\n@template({("BM", c_int)})\n'
            "@requires(grid[1])\ndef f(a: ptr(float) @ grid[1]):\n    pass\n")
    with pytest.raises(BadInput) as e:
        parse_prism(text, "t.prism")
    assert e.value.rule == "Template-Instantiate"
    assert str(e.value.span) == "t.prism:4:1"


@pytest.mark.parametrize(("line", "rule", "col"), [
    ("    x : int @ thread[] = 1\n", "Printed-Empty-Level", 15),
    ("    x : int @ thread[1] = 1 ↪ + 2\n", "Printed-Continuation-Mark", 29),
    ("    x : int @ thread[1] = (1\n", "Surface-Syntax", 27),
    ("    x : int @ lane[1] = 1\n", "Surface-Perspective", 15),
    ("    import os\n", "Surface-Statement", 5),
    ("    with foo(x) as y:\n        pass\n", "Surface-With", 10),
])
def test_errors_name_rule_and_surface_span(line, rule, col):
    with pytest.raises(BadInput) as e:
        parse_prism(HEADER + "def f(x: ptr(int) @ block[1]):\n" + line, "t.prism")
    assert e.value.rule == rule
    assert e.value.span.line == 4 and e.value.span.column == col, e.value.one_line()


def test_listing_line_numbers_are_stripped_and_spans_keep_file_columns():
    text = ('1 @prism("device")\n2 @requires(thread[1])\n'
            "3 def f(x: ptr(int) @ thread[1]):\n4     y : int @ thread[1] = $\n")
    with pytest.raises(BadInput) as e:
        parse_prism(text, "t.prism")
    assert (e.value.span.line, e.value.span.column) == (4, 29)


def test_launch_header():
    text = ("# launch: f blocks=2 threads=8\n# arg A = float[3] [1.5, 2, 3]\n"
            "# arg B = int[4] iota\n# arg n = 7\n" + HEADER +
            "def f(x: ptr(int) @ block[1]):\n    pass\n")
    launch = parse_prism(text, "t.prism").launch
    assert launch is not None and (launch.blocks, launch.threads) == (2, 8)
    a, b, n = launch.args
    assert a.values == (1.5, 2, 3) and a.elem == "float"
    assert b.iota and b.size == 4 and n.values == (7,) and n.elem is None
