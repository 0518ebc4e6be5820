"""GPU IR printer: `calculus.gpuir.ast` -> `.gpuir` text that parses back to the same
tree (`parse(print(p)) == p`, pinned by tests/gpuir/test_roundtrip.py).

Parentheses are inserted from operator precedence (or < and < not < comparison <
+ - < * / % < unary), left-associative operators parenthesise a right operand of the
same precedence. `DNeg` prints as `-(e)` so it never folds into a negative literal.
"""

from __future__ import annotations

from typing import assert_never

from gpusem.calculus.gpuir import ast as A

INDENT = "    "

_PREC = {"or": 1, "and": 2, "not": 3, "rel": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}
_ATOM = 8


def print_module(m: A.Module) -> str:
    return "\n".join(print_proc(p) for p in m.procs)


def print_proc(p: A.Proc) -> str:
    params = ", ".join(_param(x) for x in p.params)
    lines = [f"proc {p.name}({params}):"]
    lines += _body(p.body, 1)
    return "\n".join(lines) + "\n"


def print_stmt(s: A.Stmt, depth: int = 0) -> str:
    return "\n".join(_stmt(s, depth))


def _param(p: A.Param) -> str:
    match p:
        case A.CtrlParam(name=n, kind=k):
            return f"{n}: {k.value}"
        case A.DataParam(name=n, dtype=t, shape=sh, mem=m):
            return f"{n}: {t.value}{_shape(sh)} @ {print_mem(m)}"
        case _:
            assert_never(p)


def _shape(sh: tuple[A.CExpr, ...]) -> str:
    return f"[{', '.join(print_cexpr(c) for c in sh)}]" if sh else ""


def _body(body: tuple[A.Stmt, ...], depth: int) -> list[str]:
    out: list[str] = []
    for s in body:
        out += _stmt(s, depth)
    return out


def _stmt(s: A.Stmt, depth: int) -> list[str]:
    pad = INDENT * depth
    match s:
        case A.For(var=v, lo=lo, hi=hi, mode=mode, unit=unit, body=b):
            bounds = f"{print_cexpr(lo)}, {print_cexpr(hi)}"
            if unit is not None:
                bounds += f", unit={print_unit(unit)}"
            return [f"{pad}for {v} in {mode.value}({bounds}):"] + _body(b, depth + 1)
        case A.CudaDeviceFunction(block_dim=bd, cluster_dim=cd, warp_config=wc, body=b):
            args = []
            if bd is not None:
                args.append(f"blockDim={bd}")
            if cd != 1:
                args.append(f"clusterDim={cd}")
            if wc:
                args.append(f"warp_config=[{', '.join(_warp(w) for w in wc)}]")
            head = f"{pad}with CudaDeviceFunction({', '.join(args)}):"
            return [head] + _body(b, depth + 1)
        case A.CudaWarps(lo=lo, hi=hi, name=name, body=b):
            args = [] if lo is None else [str(lo), str(hi)]
            if name is not None:
                args.append(f'name="{name}"')
            return [f"{pad}with CudaWarps({', '.join(args)}):"] + _body(b, depth + 1)
        case A.If(cond=c, body=b):
            return [f"{pad}if {print_bexpr(c)}:"] + _body(b, depth + 1)
        case A.Assign(name=n, idx=idx, rhs=e):
            return [f"{pad}{n}{_points(idx)} = {print_dexpr(e)}"]
        case A.Reduce(name=n, idx=idx, rhs=e):
            return [f"{pad}{n}{_points(idx)} += {print_dexpr(e)}"]
        case A.WindowStmt(name=n, source=src, mem=m):
            return [f"{pad}{n} = {print_dexpr(src)} @ {print_mem(m)}"]
        case A.Alloc(name=n, dtype=t, shape=sh, mem=m):
            return [f"{pad}{n}: {t.value}{_shape(sh)} @ {print_mem(m)}"]
        case A.BarrierAlloc(name=n, shape=sh, mem=m):
            return [f"{pad}{n}: barrier{_shape(sh)} @ {print_mem(m)}"]
        case A.Free(name=n):
            return [f"{pad}free {n}"]
        case A.Fence(pre=pre, post=post):
            return [f"{pad}Fence({pre}, {post})"]
        case A.Arrive(tl=tl, n=n, barriers=zs):
            targets = ", ".join(print_zread(z) for z in zs)
            return [f"{pad}Arrive({tl}, {n}) >> {targets}"]
        case A.Await(barrier=z, tl=tl, n=n):
            return [f"{pad}Await({print_zread(z)}, {tl}, {n})"]
        case A.InstrCall(instr=g, args=args, barrier=z):
            text = f"{pad}{g}({', '.join(print_arg(a) for a in args)})"
            return [text + (f" >> {print_zread(z)}" if z is not None else "")]
        case _:
            assert_never(s)


def _warp(w: A.WarpConfig) -> str:
    return (f'CudaWarpConfig("{w.name}", {w.nwarps}, {w.setmaxnreg_dec}, '
            f"{w.setmaxnreg_inc})")


def _points(idx: tuple[A.CExpr, ...]) -> str:
    return f"[{', '.join(print_cexpr(c) for c in idx)}]" if idx else ""


def print_unit(u: A.UnitExpr) -> str:
    base = u.name + (f"({', '.join(map(str, u.args))})" if u.args else "")
    return base if u.count == 1 else f"{u.count} * {base}"


def print_mem(m: A.MemExpr) -> str:
    return m.name + (f"({', '.join(map(str, m.args))})" if m.args else "")


def print_arg(a: A.InstrArg) -> str:
    match a:
        case A.DRead() | A.DConst():
            return print_dexpr(a)
        case _:
            return print_cexpr(a)


# ------------------------------------------------------------------ expressions


def _wrap(text: str, prec: int, need: int) -> str:
    return f"({text})" if prec < need else text


def _cexpr(c: A.CExpr) -> tuple[str, int]:
    match c:
        case A.CInt(value=v):
            return str(v), (_ATOM if v >= 0 else 7)
        case A.CVar(name=n):
            return n, _ATOM
        case A.CBin(op=op, lhs=l, rhs=r):
            p = _PREC[op]
            lt, lp = _cexpr(l)
            rt, rp = _cexpr(r)
            return f"{_wrap(lt, lp, p)} {op} {_wrap(rt, rp, p + 1)}", p
        case _:
            assert_never(c)


def print_cexpr(c: A.CExpr) -> str:
    return _cexpr(c)[0]


def _bexpr(b: A.BExpr) -> tuple[str, int]:
    match b:
        case A.BConst(value=v):
            return ("True" if v else "False"), _ATOM
        case A.BRel(op=op, lhs=l, rhs=r):
            return f"{print_cexpr(l)} {op} {print_cexpr(r)}", _PREC["rel"]
        case A.BLog(op=op, lhs=l, rhs=r):
            p = _PREC[op]
            lt, lp = _bexpr(l)
            rt, rp = _bexpr(r)
            return f"{_wrap(lt, lp, p)} {op} {_wrap(rt, rp, p + 1)}", p
        case A.BNot(arg=a):
            at, ap = _bexpr(a)
            return f"not {_wrap(at, ap, _PREC['not'])}", _PREC["not"]
        case _:
            assert_never(b)


def print_bexpr(b: A.BExpr) -> str:
    return _bexpr(b)[0]


def _literal(v: int | float) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def _dexpr(e: A.DExpr) -> tuple[str, int]:
    match e:
        case A.DConst(value=v):
            return _literal(v), (_ATOM if v >= 0 and not str(v).startswith("-") else 7)
        case A.DRead(name=n, coords=cs):
            return n + (f"[{print_wcoords(cs)}]" if cs else ""), _ATOM
        case A.DBin(op=op, lhs=l, rhs=r):
            p = _PREC[op]
            lt, lp = _dexpr(l)
            rt, rp = _dexpr(r)
            return f"{_wrap(lt, lp, p)} {op} {_wrap(rt, rp, p + 1)}", p
        case A.DNeg(arg=a):
            return f"-({print_dexpr(a)})", 7
        case _:
            assert_never(e)


def print_dexpr(e: A.DExpr) -> str:
    return _dexpr(e)[0]


def print_wcoords(cs: tuple[A.WCoord, ...]) -> str:
    return ", ".join(print_wcoord(c) for c in cs)


def print_wcoord(w: A.WCoord) -> str:
    match w:
        case A.WPoint(index=c):
            return print_cexpr(c)
        case A.WInterval(lo=lo, hi=hi):
            lo_t = "" if lo is None else print_cexpr(lo)
            hi_t = "" if hi is None else print_cexpr(hi)
            return f"{lo_t}:{hi_t}"
        case _:
            assert_never(w)


def print_zread(z: A.ZRead) -> str:
    return z.name + (f"[{print_wcoords(z.coords)}]" if z.coords else "")
