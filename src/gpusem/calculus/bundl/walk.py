"""Generic traversals of Bundl syntax (Appendix A.1-A.3 of the Prism paper, seed 004).

The tree walkers over `calculus.bundl.ast`: the statements and expressions directly
inside a node (`child_stmts`, `child_exprs`), the canonical sequencing shape that
`ast.seq` builds and printing then parsing preserves (`is_canonical`; see the
"Sequencing" note of `calculus.bundl.ast`), and the size of a program that reports and
the shrinkers use (`statement_count`).
"""

from __future__ import annotations

from gpusem.calculus.bundl.ast import (
    BINDERS,
    Alloc,
    AsyncPartition,
    BinOp,
    Claim,
    Decl,
    Destruct,
    Expr,
    Fma,
    Group,
    If,
    Index,
    Lower,
    Partition,
    Program,
    Seq,
    Skip,
    Split,
    Stmt,
    UnOp,
    While,
)


def is_canonical(s: Stmt) -> bool:
    """Whether `s` (and every statement inside it) is in the shape `seq` builds."""
    match s:
        case Seq(stmts):
            return (
                len(stmts) >= 2
                and not any(isinstance(x, Seq) for x in stmts)
                and not any(isinstance(x, BINDERS) for x in stmts[:-1])
                and all(is_canonical(x) for x in stmts)
            )
        case _:
            return all(is_canonical(c) for c in child_stmts(s))


def child_stmts(s: Stmt) -> tuple[Stmt, ...]:
    """The statements directly inside `s` (for generic traversals)."""
    match s:
        case Seq(stmts):
            return stmts
        case Decl(body=b) | Alloc(body=b) | While(body=b) | Group(body=b):
            return (b,)
        case Destruct(body=b) | Partition(body=b) | Claim(body=b) | Lower(body=b):
            return (b,)
        case AsyncPartition(body=b):
            return (b,)
        case If(then=a, orelse=b) | Split(left=a, right=b):
            return (a, b)
        case _:
            return ()


def child_exprs(e: Expr) -> tuple[Expr, ...]:
    """The expressions directly inside `e` (for generic traversals)."""
    match e:
        case Index(a, i):
            return (a, i)
        case BinOp(_, a, b):
            return (a, b)
        case UnOp(_, a):
            return (a,)
        case Fma(a, b, c):
            return (a, b, c)
        case _:
            return ()


def statement_count(s: Program | Stmt) -> int:
    """Statements of a program or statement, `skip` and sequencing not counted: the
    size that reports and the shrinkers' `size_key` use."""
    if isinstance(s, Program):
        return statement_count(s.main) + sum(statement_count(f.body) for f in s.fns)
    if isinstance(s, Seq):
        return sum(statement_count(x) for x in s.stmts)
    if isinstance(s, Skip):
        return 0
    return 1 + sum(statement_count(c) for c in child_stmts(s))
