"""Print `calculus.appy.ast` back to APPy source (what appyc reads).

The output is ordinary Python: directives as `#pragma` comment lines above their loop or
statement, math as `np.<f>`, reductions as the built-ins `sum`/`max`/`min` (Section 4.1).
`parse_program(print_program(f)) == f` (the print/parse property, tests/appy).
"""

from __future__ import annotations

import math
from typing import assert_never

from gpusem.calculus.appy import ast as A

# Python's binding strengths: comparisons < `|` < `&` < `+ -` < `* / // %` < unary -.
_PREC = {"|": 1, "&": 2, "+": 3, "-": 3, "*": 4, "/": 4, "//": 4, "%": 4}


def print_program(fn: A.Function, decorator: str | None = None) -> str:
    head = [decorator] if decorator else []
    params = ", ".join(p.name for p in fn.params)
    lines = head + [f"def {fn.name}({params}):"]
    lines += _block(fn.body, 1) or ["    pass"]
    return "\n".join(lines) + "\n"


def _block(body: tuple[A.Stmt, ...], depth: int) -> list[str]:
    out: list[str] = []
    for s in body:
        out += _stmt(s, depth)
    return out


def _stmt(s: A.Stmt, depth: int) -> list[str]:
    pad = "    " * depth
    match s:
        case A.For(var=v, start=a, stop=b, step=c, body=body, directive=d):
            head = [] if d is None else [pad + "#pragma " + directive_text(d)]
            rng = f"range({expr(a)}, {expr(b)}, {expr(c)})"
            if a == A.Const(0) and c == A.Const(1):
                rng = f"range({expr(b)})"
            return head + [f"{pad}for {v} in {rng}:"] + (
                _block(body, depth + 1) or [pad + "    pass"])
        case A.Assign(target=t, value=v, op=op, atomic=atomic, pragma=tp):
            words = (["atomic"] if atomic else []) + (
                [] if tp is None else [_dim(d) for d in tp.dims])
            head = [pad + "#pragma " + " ".join(words)] if words else []
            eq = "=" if op is None else f"{op}="
            return head + [f"{pad}{expr(t)} {eq} {expr(v)}"]
        case A.If(cond=c, body=body, orelse=orelse):
            out = [f"{pad}if {expr(c)}:"] + (_block(body, depth + 1) or [pad + "    pass"])
            if orelse:
                out += [f"{pad}else:"] + _block(orelse, depth + 1)
            return out
        case A.Return(value=v):
            return [f"{pad}return" + ("" if v is None else f" {expr(v)}")]
        case _:
            assert_never(s)


def directive_text(d: A.LoopDirective) -> str:
    match d:
        case A.ParallelFor(simd=simd, width=w, reduction=red, to=to, from_=frm):
            text = "parallel for"
            if simd:
                text += " simd" + (f"({w})" if w else "")
            if red:
                text += f" reduction(+:{','.join(red)})"
            if to:
                text += f" to({','.join(to)})"
            if frm:
                text += f" from({','.join(frm)})"
            return text
        case A.Simd(width=w):
            return "simd" + (f"({w})" if w else "")
        case A.SequentialFor():
            return "sequential for"
        case _:
            assert_never(d)


def _dim(d: A.DimProps) -> str:
    props = (["parallel"] if d.parallel else []) + (["simd"] if d.simd else []) + (
        ["reduce(sum)"] if d.reduce else []) + ([f"le({d.le})"] if d.le else [])
    # One word per dimension, as the paper writes them (`1:M-1=>parallel`): a pragma's
    # dimensions are separated by spaces
    return f"{_slice(d.slice).replace(' ', '')}=>{','.join(props)}"


def _slice(s: A.Slice) -> str:
    lo = "" if s.lower is None else expr(s.lower)
    return f"{lo}:{expr(s.upper)}"


def expr(e: A.Expr, prec: int = 0) -> str:
    """`e` as Python text, parenthesised where an operator of binding strength `prec`
    holds it."""
    match e:
        case A.Const(value=v):
            return _const(v, prec)
        case A.Name(id=n):
            return n
        case A.Mvl():
            return "appy.MVL"
        case A.Slice():
            return _slice(e)
        case A.NewAxis():
            return "None"
        case A.Subscript(array=a, indices=ix):
            return f"{a}[{', '.join(expr(i) for i in ix)}]"
        case A.BinOp(op=op, left=a, right=b):
            p = _PREC[op]
            text = f"{expr(a, p)} {op} {expr(b, p + 1)}"
            return f"({text})" if p < prec else text
        case A.Neg(operand=a):
            return f"-{expr(a, 5)}"
        case A.Compare(op=op, left=a, right=b):
            text = f"{expr(a, 1)} {op} {expr(b, 1)}"
            return f"({text})" if prec > 0 else text
        case A.Call(func=f, args=args, axis=axis):
            inner = ", ".join(expr(a) for a in args)
            if f in A.REDUCE_FUNS:
                return f"{f}({inner}" + (f", axis={axis})" if axis is not None else ")")
            if f in A.PRODUCT_FUNS:
                return f"appy.{f}({inner})"
            return f"np.{f}({inner})"
        case A.Where(cond=c, then=t, orelse=o, ternary=True):
            text = f"{expr(t, 1)} if {expr(c, 1)} else {expr(o, 1)}"
            return f"({text})" if prec > 0 else text
        case A.Where(cond=c, then=t, orelse=o):
            return f"appy.where({expr(c)}, {expr(t)}, {expr(o)})"
        case A.Vidx(start=s, step=st, bound=b):
            tail = "" if b is None else f", {expr(b)}"
            return f"appy.vidx({expr(s)}, {expr(st)}{tail})"
        case _:
            assert_never(e)


def _const(v: float, prec: int) -> str:
    if isinstance(v, float) and math.isinf(v):
        return "float('inf')" if v > 0 else "float('-inf')"
    text = repr(v)
    return f"({text})" if v < 0 and prec > 0 else text
