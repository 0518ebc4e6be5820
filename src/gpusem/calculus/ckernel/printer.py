"""CKernel's concrete syntax, printed (parser.py reads it back: parse . print = id).

Declarations and statements read like C; expressions are S-expressions, so that every
operator is explicit and types never depend on precedence or promotion rules:

    kernel k grid 2 block 64 inputs 17
    param x0 ro i32
    param st rw i32
    shared s0 i32
    {
      let v : i32 = (+ (ldg x0 (mask (+ gid 3:i32))) (load st (own 1)));
      if (< v 1000:i32) { store st (own 0) = v; } else { }
      for i in 4 unroll { v = (* v 3:i32); }
      sync;
      atomic add acc 2 = v;
    }
"""

from __future__ import annotations

from typing import assert_never

from gpusem.calculus.ckernel import ast as A


def print_kernel(k: A.Kernel) -> str:
    head = [f"kernel {k.name} grid {k.grid} block {k.block} inputs {k.inputs}"]
    head += [f"param {p.name} {p.mode} {p.ty}" for p in k.params]
    head += [f"shared {s.name} {s.ty}" for s in k.shared]
    return "\n".join([*head, "{", *_block_lines(k.body, "  "), "}"]) + "\n"


def _block_lines(block: A.Block, pad: str) -> list[str]:
    out: list[str] = []
    for s in block.stmts:
        out += _stmt_lines(s, pad)
    return out


def _stmt_lines(s: A.Stmt, pad: str) -> list[str]:
    match s:
        case A.Let(name, ty, e):
            return [f"{pad}let {name} : {ty} = {print_expr(e)};"]
        case A.Assign(name, e):
            return [f"{pad}{name} = {print_expr(e)};"]
        case A.Store(buf, idx, e):
            return [f"{pad}store {buf} {print_index(idx)} = {print_expr(e)};"]
        case A.VecLoad(names, ty, buf, idx):
            return [(f"{pad}vload ({', '.join(names)}) : {ty} = {buf} "
                    f"{print_index(idx)};")]
        case A.VecStore(buf, slot, exprs):
            parts = ", ".join(print_expr(e) for e in exprs)
            return [f"{pad}vstore {buf} {slot} = ({parts});"]
        case A.If(cond, then, orelse):
            return ([f"{pad}if {print_expr(cond)} {{", *_block_lines(then, pad + "  "),
                     f"{pad}}} else {{", *_block_lines(orelse, pad + "  "), f"{pad}}}"])
        case A.For(var, trips, unroll, body):
            how = " unroll" if unroll else ""
            return [f"{pad}for {var} in {trips}{how} {{",
                    *_block_lines(body, pad + "  "), f"{pad}}}"]
        case A.Sync():
            return [f"{pad}sync;"]
        case A.Atomic(op, buf, cell, e):
            return [f"{pad}atomic {op} {buf} {cell} = {print_expr(e)};"]
        case _:
            assert_never(s)


def print_index(idx: A.Index) -> str:
    match idx:
        case A.Own(slot):
            return f"(own {slot})"
        case A.Masked(e):
            return f"(mask {print_expr(e)})"
        case A.Neighbour(shift, slot):
            return f"(nbr {shift} {slot})"
        case _:
            assert_never(idx)


def print_literal(ty: str, value: float) -> str:
    return f"{value!r}:{ty}"


def print_expr(e: A.Expr) -> str:
    match e:
        case A.Lit(ty, value):
            return print_literal(ty, value)
        case A.Var(name):
            return name
        case A.Builtin(which):
            return which
        case A.Unary(op, arg):
            return f"({op} {print_expr(arg)})"
        case A.Binary(op, a, b):
            return f"({op} {print_expr(a)} {print_expr(b)})"
        case A.DivC(op, a, divisor):
            return f"({op} {print_expr(a)} {divisor})"
        case A.Cast(ty, arg):
            return f"(cast {ty} {print_expr(arg)})"
        case A.Select(c, a, b):
            return f"(sel {print_expr(c)} {print_expr(a)} {print_expr(b)})"
        case A.Load(buf, idx, ldg):
            return f"({'ldg' if ldg else 'load'} {buf} {print_index(idx)})"
        case A.PtrSelect(c, ba, bb, idx):
            return f"(psel {print_expr(c)} {ba} {bb} {print_index(idx)})"
        case A.Shfl(xor, value, k):
            return f"({'shflx' if xor else 'shfl'} {print_expr(value)} {k})"
        case _:
            assert_never(e)
