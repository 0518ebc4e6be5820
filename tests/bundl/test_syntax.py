"""Parser and printer of Bundl's concrete syntax (shared/spec/bundl-syntax.md)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.parser import parse_expr, parse_program, parse_stmt
from gpusem.calculus.bundl.perspective import BLOCK1, GRID1, THREAD1, Level, Perspective
from gpusem.calculus.bundl.printer import (
    format_float,
    print_expr,
    print_program,
    print_stmt,
)
from gpusem.calculus.bundl.walk import child_stmts, is_canonical
from gpusem.calculus.errors import BadInput

I, V = ast.IntLit, ast.Var


def B(op, left, right):
    return ast.BinOp(op, left, right)


# ------------------------------------------------------------------ expressions


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a || b && c", B("||", V("a"), B("&&", V("b"), V("c")))),
        ("a && b || c", B("||", B("&&", V("a"), V("b")), V("c"))),
        ("a < b + 1", B("<", V("a"), B("+", V("b"), I(1)))),
        ("a + b * c", B("+", V("a"), B("*", V("b"), V("c")))),
        ("a - b - c", B("-", B("-", V("a"), V("b")), V("c"))),  # left-assoc
        ("a - (b - c)", B("-", V("a"), B("-", V("b"), V("c")))),
        ("a / b % c", B("%", B("/", V("a"), V("b")), V("c"))),
        ("-a[i]", ast.UnOp("-", ast.Index(V("a"), V("i")))),  # indexing binds tighter
        ("!a == b", B("==", ast.UnOp("!", V("a")), V("b"))),
        ("a[i][j]", ast.Index(ast.Index(V("a"), V("i")), V("j"))),
        ("x + 4", B("+", V("x"), I(4))),  # pointer offset: an ordinary BinOp
        ("partition_id * 2", B("*", ast.PartitionId(), I(2))),
        ("true != false", B("!=", ast.BoolLit(True), ast.BoolLit(False))),
    ],
)
def test_expression_precedence(text, tree):
    assert parse_expr(text) == tree


def test_negative_literal_folds_but_parenthesised_does_not():
    assert parse_expr("-1") == I(-1)
    assert parse_expr("- 1") == I(-1)
    assert parse_expr("-(1)") == ast.UnOp("-", I(1))
    assert parse_expr("--1") == ast.UnOp("-", I(-1))
    assert parse_expr("-1.5") == ast.FloatLit(-1.5)
    assert parse_expr("x - -1") == B("-", V("x"), I(-1))
    assert parse_expr("-1 * x") == B("*", I(-1), V("x"))


def test_int32_bounds():
    assert parse_expr("-2147483648") == I(-(2**31))
    assert parse_expr("2147483647") == I(2**31 - 1)
    for text in ("2147483648", "-(2147483648)", "99999999999"):
        with pytest.raises(BadInput, match="int literal out of range"):
            parse_expr(text)


def test_float_literals_are_binary32():
    lit = parse_expr("0.1")
    assert lit.value == float(np.float32(0.1)) and lit.value != 0.1
    assert parse_expr("1e3") == ast.FloatLit(1000.0)
    assert parse_expr(".5") == ast.FloatLit(0.5)
    assert parse_expr("3.") == ast.FloatLit(3.0)
    assert isinstance(parse_expr("3"), ast.IntLit)
    with pytest.raises(BadInput, match="float literal out of range"):
        parse_expr("1e39")


def test_float_double_rounding_tie_is_resolved_by_the_exact_decimal():
    # 1 + 2^-24 is exactly halfway between the binary32 values 1 and 1 + 2^-23; a
    # decimal a hair above it rounds to float64 1 + 2^-24 (a tie, so float32() picks
    # the even neighbour 1.0), but correctly rounded it must go up.
    above = "1.00000005960464477539062500000000001"
    assert float(above) == 1 + 2**-24
    assert parse_expr(above).value == 1 + 2**-23
    assert parse_expr("1.000000059604644775390625").value == 1.0  # exact tie: even


@pytest.mark.parametrize(
    "value", [0.0, -0.0, 1.0, 0.1, -2.5, 1e-45, 3.4028234663852886e38, 1e20, 16777216.0]
)
def test_format_float_round_trips(value):
    value = float(np.float32(value))
    text = format_float(value)
    assert any(c in text for c in ".e")
    got = parse_expr(text).value
    assert got == value and np.signbit(got) == np.signbit(value)


def test_format_float_rejects_non_finite():
    with pytest.raises(ValueError, match="non-finite"):
        format_float(float("inf"))


@pytest.mark.parametrize(
    "tree",
    [
        ast.UnOp("-", I(1)),
        ast.UnOp("-", I(-1)),
        ast.UnOp("-", ast.UnOp("-", I(1))),
        ast.UnOp("!", ast.UnOp("!", ast.BoolLit(True))),
        ast.Index(I(-1), V("x")),
        ast.Index(B("+", V("a"), I(4)), V("i")),
        B("*", B("+", V("a"), V("b")), B("-", V("c"), V("d"))),
        B("-", V("a"), B("+", V("b"), V("c"))),
        B("<", B("<", V("a"), V("b")), V("c")),
        B("==", V("a"), B("==", V("b"), V("c"))),
        ast.UnOp("-", ast.FloatLit(-0.0)),
    ],
)
def test_expression_print_parse_identity(tree):
    assert parse_expr(print_expr(tree)) == tree


def test_minimal_parentheses():
    assert print_expr(B("+", V("a"), B("*", V("b"), V("c")))) == "a + b * c"
    assert print_expr(B("*", B("+", V("a"), V("b")), V("c"))) == "(a + b) * c"
    assert print_expr(B("-", B("-", V("a"), V("b")), V("c"))) == "a - b - c"
    assert print_expr(B("-", V("a"), B("-", V("b"), V("c")))) == "a - (b - c)"
    assert print_expr(ast.UnOp("-", I(1))) == "-(1)"
    assert print_expr(I(-1)) == "-1"


# ------------------------------------------------------------------- statements

LET_X = "let x : int @ thread[1] = 3;"


def test_let_scopes_to_end_of_block():
    s = parse_stmt(f"a = 1; {LET_X} b = x; c = x;")
    assert isinstance(s, ast.Seq) and len(s.stmts) == 2
    decl = s.stmts[1]
    assert isinstance(decl, ast.Decl) and decl.persp == THREAD1
    assert decl.body == ast.Seq((ast.Assign("b", V("x")), ast.Assign("c", V("x"))))
    assert is_canonical(s)


def test_seq_binder_with_skip_body_absorbs_rest():
    d = ast.Decl("x", ast.BaseType.INT, THREAD1, I(0), ast.Skip())
    a = ast.Assign("y", I(1))
    assert ast.seq(d, a) == ast.Decl("x", ast.BaseType.INT, THREAD1, I(0), a)
    # an explicit `skip` statement after the binder is kept
    assert ast.seq(d, ast.Skip(), a).body == ast.Seq((ast.Skip(), a))


def test_seq_explicit_skip_survives_round_trip():
    s = parse_stmt(f"{LET_X} skip; y = 1;")
    assert parse_stmt(print_stmt(s)) == s
    assert s.body == ast.Seq((ast.Skip(), ast.Assign("y", I(1))))


def test_every_statement_form_parses_to_its_node():
    src = """
      let x : int @ block[2] = 1;
      alloc s : float[8] in Shared;
      x = 2; s[0] = 1.0;
      if x < 1 { skip; } else { x = 0; }
      while false {}
      split(1, 1) { skip; } {}
      group 2 { destruct {} }
      partition [p] g into h by 2 {}
      claim g into h at 1 {}
      lower [q] g into h {}
      async_partition g into h { async_memcpy(h, s); }
      memcpy(a, b);
      init p; dec p; wait p; free 4;
      f(1, x);
      f();
    """
    kinds = []

    def walk(s):
        kinds.append(type(s).__name__)
        for c in child_stmts(s):
            walk(c)

    walk(parse_stmt(src))
    expected = {c.__name__ for c in ast.STMT_CLASSES}
    assert expected <= set(kinds)


def test_labels_are_optional():
    s = parse_stmt("partition [psi] x into y by 4 {} lower x into y {}")
    assert s.stmts[0].label == "psi" and s.stmts[1].label is None
    assert s.stmts[0].by == 4


def test_else_defaults_to_skip():
    s = parse_stmt("if true { x = 1; }")
    assert s.orelse == ast.Skip()


def test_spans_point_into_the_source():
    src = "main {\n  x = 1;\n  y[2] = z;\n}\n"
    p = parse_program(src, file="f.bundl")
    first, second = p.main.stmts
    assert (first.span.file, first.span.line, first.span.column) == ("f.bundl", 2, 3)
    assert (second.span.line, second.span.column) == (3, 3)
    assert (second.index.span.line, second.index.span.column) == (3, 5)
    assert second.value.span.column == 10


# --------------------------------------------------------------------- programs

SPEC_EXAMPLE = """
machine blocks = 2, threads = 64;
global A   : int[128] = iota;
global out : int[128];
global W   : float[4] = [1.0, 2.5, -3.0, 0.0];
fn add_one(a : Global int[] @ thread[1], i : int @ thread[1]) at thread[1] uses 0 {
  a[i] = a[i] + 1;
}
main {
  destruct { group 2 { destruct {
    let i : int @ thread[1] = partition_id;
    out[i] = A[i] * 2;
  } } }
}
"""


def test_spec_example():
    p = parse_program(SPEC_EXAMPLE)
    assert p.machine == ast.Machine(2, 64)
    assert [g.name for g in p.globals] == ["A", "out", "W"]
    assert p.globals[0].init == ast.Iota() and p.globals[1].init is None
    assert [x.value for x in p.globals[2].init] == [1.0, 2.5, -3.0, 0.0]
    f = p.fn("add_one")
    assert f.persp == THREAD1 and f.uses == 0
    assert f.params[0].type == ast.ArrayType(ast.BaseType.INT, ast.MemKind.GLOBAL)
    assert f.type.params == f.params
    d = p.main.body.body.body
    assert isinstance(d, ast.Decl) and d.init == ast.PartitionId()
    assert parse_program(print_program(p)) == p


def test_default_machine_and_uses():
    p = parse_program("fn f() at block[1] {} main {}")
    assert p.machine == ast.DEFAULT_MACHINE and p.fns[0].uses == 0
    assert p.fns[0].persp == Perspective(Level.BLOCK, 1) == BLOCK1
    assert p.main == ast.Skip()
    assert parse_program(print_program(p)) == p


def test_perspective_keywords():
    s = parse_stmt("let x : bool @ grid[1] = true;")
    assert s.persp == GRID1 and s.type == ast.BaseType.BOOL


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("src", "where", "fragment"),
    [
        ("main { x = ; }", "f.bundl:1:12", "got ';'"),
        ("main { x = 1 }", "f.bundl:1:14", "got '}'"),
        ("main {\n  $ }", "f.bundl:2:3", "got '$'"),
        ("main {", "f.bundl:1:", "got end of input"),
    ],
)
def test_syntax_error_is_one_line(src, where, fragment):
    with pytest.raises(BadInput) as info:
        parse_program(src, file="f.bundl")
    err = info.value
    line = err.one_line()
    assert line.startswith(where) and "syntax error: expected one of" in line
    assert fragment in line and "\n" not in line
    assert err.prefix == "syntax error" and err.exit_code == 2


def test_syntax_error_names_exactly_what_may_follow():
    # LALR's merged lookaheads would also offer ')' and ']' here; the message lists
    # only what really continues the statement, operators summarised once.
    with pytest.raises(BadInput) as info:
        parse_program("main { x = 1 }")
    assert info.value.message == (
        "syntax error: expected one of ';', '[', an operator, got '}'")


@pytest.mark.parametrize(
    ("src", "prefix"),
    [
        ("global a : int[0]; main {}", "bad global size"),
        ("main { alloc a : int[0] in Local; }", "bad alloc size"),
        ("machine blocks = 0, threads = 4; main {}", "bad machine blocks"),
        ("machine blocks = 1, threads = 0; main {}", "bad machine threads"),
        ("main { let x : int @ thread[0] = 1; }", "bad perspective size"),
        ("main { group 0 {} }", "bad group size"),
        ("main { partition x into y by 0 {} }", "bad partition factor"),
        ("main { alloc a : int[4294967296] in Local; }", "bad alloc size"),
        ("global a : int[2] = [1]; main {}", "bad global initializer"),
        ("global a : int[1] = [1.0]; main {}", "bad global initializer"),
        ("global a : bool[1] = [1]; main {}", "bad global initializer"),
        ("global a : int[1]; global a : int[1]; main {}", "duplicate definition"),
        ("global f : int[1]; fn f() at thread[1] {} main {}", "duplicate definition"),
        ("fn f(a : int @ thread[1], a : int @ thread[1]) at thread[1] {} main {}",
         "duplicate parameter"),
    ],
)
def test_ill_formed_programs_are_bad_input(src, prefix):
    with pytest.raises(BadInput) as info:
        parse_program(src)
    assert info.value.prefix == prefix


def test_contextual_keywords_may_name_variables():
    # `blocks`/`threads`/`block` are keywords only where the grammar expects them.
    s = parse_stmt("blocks = threads + block;")
    assert s == ast.Assign("blocks", B("+", V("threads"), V("block")))


# ------------------------------------------------------------ meta (STYLE 9)

_PSI = "psi"
_E = V("e")
SAMPLE_STMTS = {
    ast.Skip: ast.Skip(),
    ast.Seq: ast.Seq((ast.Skip(), ast.Assign("x", I(1)))),
    ast.Decl: ast.Decl("x", ast.BaseType.FLOAT, THREAD1, ast.FloatLit(0.5), ast.Skip()),
    ast.Alloc: ast.Alloc("a", ast.BaseType.BOOL, 3, ast.MemKind.GLOBAL, ast.Skip()),
    ast.Assign: ast.Assign("x", _E),
    ast.ArrAssign: ast.ArrAssign(B("+", V("y"), I(4)), I(0), _E),
    ast.If: ast.If(_E, ast.Skip(), ast.Assign("x", _E)),
    ast.While: ast.While(_E, ast.Assign("x", _E)),
    ast.Split: ast.Split(2, 1, ast.Skip(), ast.Assign("x", _E)),
    ast.Group: ast.Group(4, ast.Skip()),
    ast.Destruct: ast.Destruct(ast.Assign("x", _E)),
    ast.Partition: ast.Partition(_PSI, "x", "y", 2, ast.Skip()),
    ast.Claim: ast.Claim(None, "x", "y", 1, ast.Skip()),
    ast.Lower: ast.Lower(_PSI, "x", "y", ast.Skip()),
    ast.AsyncPartition: ast.AsyncPartition("phi", "x", "y", ast.AsyncMemcpy("y", "z")),
    ast.AsyncMemcpy: ast.AsyncMemcpy("y", "z"),
    ast.Memcpy: ast.Memcpy("y", "z"),
    ast.SyncInit: ast.SyncInit(_PSI),
    ast.SyncDec: ast.SyncDec(_PSI),
    ast.SyncWait: ast.SyncWait(_PSI),
    ast.Free: ast.Free(16),
    ast.Call: ast.Call("f", (I(1), _E)),
}
SAMPLE_EXPRS = {
    ast.IntLit: I(-7), ast.FloatLit: ast.FloatLit(2.5), ast.BoolLit: ast.BoolLit(False),
    ast.Var: _E, ast.Index: ast.Index(_E, I(0)), ast.PartitionId: ast.PartitionId(),
    ast.BinOp: B("%", _E, I(3)), ast.UnOp: ast.UnOp("!", _E),
    ast.Fma: ast.Fma(_E, ast.FloatLit(-0.5), B("*", _E, _E)),
}


def test_every_ast_class_has_a_printer_and_parser_case():
    # Adding an AST class without a sample here fails: give it a printer case, a
    # grammar rule and a generator (STYLE 9).
    assert set(SAMPLE_STMTS) == set(ast.STMT_CLASSES)
    assert set(SAMPLE_EXPRS) == set(ast.EXPR_CLASSES)
    for cls, s in SAMPLE_STMTS.items():
        assert parse_stmt(print_stmt(s)) == s, cls.__name__
    for cls, e in SAMPLE_EXPRS.items():
        assert parse_expr(print_expr(e)) == e, cls.__name__


def test_printed_program_layout():
    p = ast.Program(ast.Machine(1, 2), (ast.GlobalDecl("o", ast.BaseType.INT, 2, None),),
                    (), ast.Destruct(ast.If(_E, ast.Skip(), ast.Assign("x", I(1)))))
    assert print_program(p) == (
        "machine blocks = 1, threads = 2;\n\n"
        "global o : int[2];\n\n"
        "main {\n"
        "  destruct {\n"
        "    if e {} else {\n"
        "      x = 1;\n"
        "    }\n"
        "  }\n"
        "}\n"
    )


def test_grammar_aliases_name_ast_classes():
    # STYLE 2: rule aliases are the AST classes' names (snake_case; `if_`, `while_`,
    # `not_` avoid Python keywords); the rest build parts of nodes.
    grammar = (Path(ast.__file__).parent / "grammar.lark").read_text()
    aliases = set(re.findall(r"->\s*(\w+)", grammar))
    snake = {re.sub(r"(?<!^)(?=[A-Z])", "_", c.__name__).lower()
             for c in (*ast.STMT_CLASSES, *ast.EXPR_CLASSES, ast.Iota)}
    helpers = {"if_", "while_", "not_", "neg", "paren", "true", "false", "lit_list",
               "neg_int_lit", "neg_float_lit", "array_type"}
    assert aliases - helpers <= snake, sorted(aliases - helpers - snake)
    assert {"if", "while"} <= snake


def test_absurd_nesting_is_bad_input_not_a_traceback():
    for text in ("(" * 3000 + "1" + ")" * 3000,
                 "main {" + "destruct {" * 3000 + "}" * 3000 + "}"):
        with pytest.raises(BadInput) as info:
            parse_program(text) if text.startswith("main") else parse_expr(text)
        assert info.value.prefix == "nesting too deep"
    assert parse_expr("(" * 100 + "1" + ")" * 100) == I(1)
