"""Hypothesis strategies for ARBITRARY canonical Bundl syntax trees (not necessarily
well-typed): every AST class, runtime forms (`init/dec/wait`, `free`, pointer offsets)
included, labels, negative and extreme literals, any float32. They exercise the parser
and printer (print-then-parse is the identity) where the well-typed generator
(`fuzz/bundl/strategies/programs`) never goes.

Trees are built with `ast.seq`, so they are canonical (`walk.is_canonical`), the shape in
which the identity is promised. Names are one letter and an optional digit, so they are
never keywords.
"""

from __future__ import annotations

from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.ast import ArrayType, BaseType, MemKind
from gpusem.calculus.bundl.perspective import Level, Perspective
from hypothesis import strategies as st

# The language of the regular expression [a-z][0-9]? as two draws: from_regex builds
# Hypothesis's Unicode table of the utf-8 codec (5-8 s, once per process with no
# .hypothesis/ folder: every CI worker), and only tests draw these trees.
NAMES = st.builds(str.__add__, st.sampled_from("abcdefghijklmnopqrstuvwxyz"),
                  st.sampled_from(("", *"0123456789")))
LABELS = st.one_of(st.none(), NAMES)
INT32 = st.integers(-(2**31), 2**31 - 1)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
SMALL = st.integers(0, 64)
POSITIVE = st.integers(1, 64)
BASES = st.sampled_from(list(BaseType))
MEMS = st.sampled_from(list(MemKind))
PERSPS = st.builds(Perspective, st.sampled_from(list(Level)), POSITIVE)

INT_LITS = st.builds(ast.IntLit, st.one_of(st.integers(-9, 9), INT32))
FLOAT_LITS = st.builds(ast.FloatLit, FLOAT32.map(float))
BOOL_LITS = st.builds(ast.BoolLit, st.booleans())

LEAF_EXPRS = st.one_of(
    INT_LITS, st.builds(ast.Var, NAMES), BOOL_LITS, FLOAT_LITS,
    st.just(ast.PartitionId()),
)


def _extend_expr(inner):
    return st.one_of(
        st.builds(ast.BinOp, st.sampled_from(ast.BINARY_OPS), inner, inner),
        st.builds(ast.UnOp, st.sampled_from(ast.UNARY_OPS), inner),
        st.builds(ast.Index, inner, inner),
        st.builds(ast.Fma, inner, inner, inner),
    )


EXPRS = st.recursive(LEAF_EXPRS, _extend_expr, max_leaves=12)

LEAF_STMTS = st.one_of(
    st.just(ast.Skip()),
    st.builds(ast.Assign, NAMES, EXPRS),
    st.builds(ast.ArrAssign, EXPRS, EXPRS, EXPRS),
    st.builds(ast.Call, NAMES, st.lists(EXPRS, max_size=3).map(tuple)),
    st.builds(ast.Memcpy, NAMES, NAMES),
    st.builds(ast.AsyncMemcpy, NAMES, NAMES),
    st.builds(ast.SyncInit, NAMES),
    st.builds(ast.SyncDec, NAMES),
    st.builds(ast.SyncWait, NAMES),
    st.builds(ast.Free, SMALL),
)


def _extend_stmt(inner):
    return st.one_of(
        st.lists(inner, min_size=2, max_size=4).map(lambda xs: ast.seq(*xs)),
        st.builds(ast.Decl, NAMES, BASES, PERSPS, EXPRS, inner),
        st.builds(ast.Alloc, NAMES, BASES, POSITIVE, MEMS, inner),
        st.builds(ast.If, EXPRS, inner, inner),
        st.builds(ast.While, EXPRS, inner),
        st.builds(ast.Split, SMALL, SMALL, inner, inner),
        st.builds(ast.Group, POSITIVE, inner),
        st.builds(ast.Destruct, inner),
        st.builds(ast.Partition, LABELS, NAMES, NAMES, POSITIVE, inner),
        st.builds(ast.Claim, LABELS, NAMES, NAMES, SMALL, inner),
        st.builds(ast.Lower, LABELS, NAMES, NAMES, inner),
        st.builds(ast.AsyncPartition, LABELS, NAMES, NAMES, inner),
    )


STMTS = st.recursive(LEAF_STMTS, _extend_stmt, max_leaves=10)
"""Any canonical statement (seq-built; binders carry the rest of their block)."""


def _lit_of(elem: BaseType):
    return {BaseType.INT: INT_LITS, BaseType.FLOAT: FLOAT_LITS,
            BaseType.BOOL: BOOL_LITS}[elem]


@st.composite
def global_decls(draw, name: str) -> ast.GlobalDecl:
    elem, n = draw(BASES), draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["none", "iota", "list"]))
    init: ast.GlobalInit = {"none": None, "iota": ast.Iota()}.get(kind)
    if kind == "list":
        init = tuple(draw(_lit_of(elem)) for _ in range(n))
    return ast.GlobalDecl(name, elem, n, init)


PARAM_TYPES = st.one_of(BASES, st.builds(ArrayType, BASES, MEMS))


@st.composite
def fn_defs(draw, name: str) -> ast.FnDef:
    names = draw(st.lists(NAMES, max_size=3, unique=True))
    params = tuple(ast.Param(x, draw(PARAM_TYPES), draw(PERSPS)) for x in names)
    return ast.FnDef(name, params, draw(PERSPS), draw(SMALL), draw(STMTS))


@st.composite
def syntax_programs(draw) -> ast.Program:
    """Any program the parser accepts: unique top-level names, consistent global
    initialisers, positive sizes (the parser's well-formedness checks)."""
    top = draw(st.lists(NAMES, max_size=4, unique=True))
    split = draw(st.integers(0, len(top)))
    globals_ = tuple(draw(global_decls(x)) for x in top[:split])
    fns = tuple(draw(fn_defs(x)) for x in top[split:])
    machine = ast.Machine(draw(POSITIVE), draw(POSITIVE))
    return ast.Program(machine, globals_, fns, draw(STMTS))
