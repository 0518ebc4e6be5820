"""GPU IR expressions -> C text, exact by construction.

Control expressions (Figure 1, quasi-affine over 32-bit control values) and data
expressions are printed through the wrapping / rounding helpers of `gpusem_rt.cuh`, so
the C++ means what `interpreter/gpuir/sequential.py` computes: int32 arithmetic wraps and
divides truncating toward zero (ctrl.cdiv), float32 arithmetic rounds after every
operation and is never contracted into an FMA.

Conventions: a data expression is evaluated in the precision of its destination, as
the sequential reading does (`_Evaluator.dexpr(e, dtype)`): literals are rounded to it
and reads of another precision converted (numpy `astype`: f32 -> i32 truncates).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from gpusem.calculus.gpuir import ast as A
from gpusem.compiler.gpuir_cuda.errors import unsupported

CTYPES = {A.DataType.F32: "float", A.DataType.I32: "int"}
NP_DTYPES = {A.DataType.F32: "float32", A.DataType.I32: "int32"}
INT_OPS = {"+": "gs_add_i32", "-": "gs_sub_i32", "*": "gs_mul_i32", "/": "gs_div_i32",
           "%": "gs_rem_i32"}
FLOAT_OPS = {"+": "gs_fadd", "-": "gs_fsub", "*": "gs_fmul", "/": "gs_fdiv"}


def ctype(t: A.DataType, span=None) -> str:
    if t not in CTYPES:
        raise unsupported(f"data type {t.value} (the compiler lowers f32 and i32)",
                          span) if span is not None else unsupported(
            f"data type {t.value} (the compiler lowers f32 and i32)")
    return CTYPES[t]


def c_int(c: A.CExpr, names: Callable[[str], str] = lambda n: n) -> str:
    """A control expression as exact int32 C (`names` renames control variables)."""
    match c:
        case A.CInt(value=v):
            return str(v) if v >= 0 else f"({v})"
        case A.CVar(name=n):
            return names(n)
        case A.CBin(op=op, lhs=l, rhs=r):
            return f"{INT_OPS[op]}({c_int(l, names)}, {c_int(r, names)})"
    raise AssertionError(c)


def c_bool(b: A.BExpr, names: Callable[[str], str] = lambda n: n) -> str:
    match b:
        case A.BConst(value=v):
            return "true" if v else "false"
        case A.BRel(op=op, lhs=l, rhs=r):
            return f"({c_int(l, names)} {op} {c_int(r, names)})"
        case A.BLog(op=op, lhs=l, rhs=r):
            sym = "&&" if op == "and" else "||"
            return f"({c_bool(l, names)} {sym} {c_bool(r, names)})"
        case A.BNot(arg=a):
            return f"(!{c_bool(a, names)})"
    raise AssertionError(b)


def literal(value: float, t: A.DataType) -> str:
    """`value` rounded to precision `t` exactly as numpy's astype does, as C."""
    if t is A.DataType.F32:
        f = np.asarray(value).astype(np.float32)[()]
        if np.isnan(f):
            return "__int_as_float(0x7fc00000)"
        if np.isinf(f):
            return "__int_as_float(0x7f800000)" if f > 0 else "__int_as_float(0xff800000)"
        text = str(f)  # numpy's shortest float32 round-trip form
        if np.float32(text) == f and ("." in text or "e" in text):
            return f"{text}f"
        return f"{float(f).hex()}f"  # hexadecimal: exact, no decimal rounding
    v = int(np.asarray(value).astype(np.int32)[()])
    return str(v) if v != -(2**31) else "GS_INT_MIN"


def convert(text: str, src: A.DataType, dst: A.DataType) -> str:
    """numpy astype(src -> dst) for the lowered pair f32 / i32."""
    if src is dst:
        return text
    if src is A.DataType.I32 and dst is A.DataType.F32:
        return f"gs_i2f({text})"
    if src is A.DataType.F32 and dst is A.DataType.I32:
        return f"gs_f2i({text})"
    raise unsupported(f"conversion {src.value} -> {dst.value}")


def _fault(name: str) -> bool:
    from gpusem.compiler.gpuir_cuda.faults import active

    return active(name)


def c_data(e: A.DExpr, t: A.DataType, read: Callable[[A.DRead], tuple[str, A.DataType]]
           ) -> str:
    """A data expression in precision `t`; `read(r)` gives an element's C lvalue and
    its variable's precision."""
    match e:
        case A.DConst(value=v):
            return literal(v, t)
        case A.DRead():
            text, src = read(e)
            return convert(text, src, t)
        case A.DBin(op="+", lhs=A.DBin(op="*", lhs=a, rhs=b), rhs=r) \
                if t is A.DataType.F32 and _fault("gpuir-fma-contraction"):
            return (f"gs_ffma({c_data(a, t, read)}, {c_data(b, t, read)}, "
                    f"{c_data(r, t, read)})")
        case A.DBin(op=op, lhs=l, rhs=r):
            ops = FLOAT_OPS if t is A.DataType.F32 else INT_OPS
            return f"{ops[op]}({c_data(l, t, read)}, {c_data(r, t, read)})"
        case A.DNeg(arg=a):
            inner = c_data(a, t, read)
            return f"(-{inner})" if t is A.DataType.F32 else f"gs_neg_i32({inner})"
    raise AssertionError(e)
