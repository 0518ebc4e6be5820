"""Pass `emit_cuda`: fully lowered KIR -> CUDA C++ text (one kernel per program).

All arithmetic on `int` goes through the wrapping helpers of `gpusem_rt.cuh` (C++
signed overflow is undefined behaviour; Bundl's ints wrap), `float` arithmetic through
the round-to-nearest helpers (never contracted into FMA), so the text means the same
under nvcc/NVRTC and under g++ with the SIMT harness. Statements are preceded by the
Bundl source line they come from.
"""

from __future__ import annotations

import math
import struct

from gpusem.calculus.bundl.ast import BaseType
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.errors import CompileError
from gpusem.compiler.bundl_cuda.faults import active
from gpusem.compiler.cxx_text import comment, comment_block

INT_OPS = {"+": "gs_add_i32", "-": "gs_sub_i32", "*": "gs_mul_i32",
           "/": "gs_div_i32", "%": "gs_rem_i32"}
FLOAT_OPS = {"+": "gs_fadd", "-": "gs_fsub", "*": "gs_fmul", "/": "gs_fdiv"}
PLAIN_OPS = {"==", "!=", "<", "<=", ">", ">=", "&&", "||"}

PRELUDE = """\
#include "gpusem_rt.cuh"

// Helpers of the Bundl compiler (plain C++: identical on both backends).
GS_DEV int gs_imin(int a, int b) { return a < b ? a : b; }
// Floor division: only the seeded fault `floor-division` emits these.
GS_DEV int gs_floor_div(int a, int b) {
  int q = gs_div_i32(a, b);
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
GS_DEV int gs_floor_mod(int a, int b) { return gs_sub_i32(a, gs_mul_i32(gs_floor_div(a, b), b)); }
#if GS_CUDA
GS_DEV float gs_f32_bits(unsigned bits) { return __uint_as_float(bits); }
#else
GS_DEV float gs_f32_bits(unsigned bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
#endif
"""


def const(value, ty: BaseType) -> str:
    if ty == BaseType.BOOL:
        return "true" if value else "false"
    if ty == BaseType.INT:
        if value == -(2**31):
            return "(-2147483647 - 1)"
        return f"({int(value)})" if value < 0 else str(int(value))
    if math.isnan(value) or math.isinf(value):
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return f"gs_f32_bits(0x{bits:08x}u)"
    text = f"{value:.9g}"
    if "e" not in text and "." not in text and "n" not in text:
        text += ".0"
    return f"({text}f)" if text.startswith("-") else f"{text}f"


def expr(e: K.KExpr) -> str:
    match e:
        case K.KConst(value, ty):
            return const(value, ty)
        case K.KVar(name):
            return name
        case K.KBuiltin(name):
            return f"(int){name}"
        case K.KRaw(text):
            return text
        case K.KLoad(pointer, index):
            return f"{_atom(pointer)}[{expr(index)}]"
        case K.KPtrAdd(pointer, offset):
            return f"({expr(pointer)} + {expr(offset)})"
        case K.KUn("-", operand, BaseType.INT):
            return f"gs_neg_i32({expr(operand)})"
        case K.KUn(op, operand, _):
            return f"({op}{_atom(operand)})"
        case K.KBin(op, left, right, ty):
            return _binary(op, left, right, ty)
        case K.KFma(a, b, c) if active("fma-unfused"):
            return f"{FLOAT_OPS['+']}({FLOAT_OPS['*']}({expr(a)}, {expr(b)}), {expr(c)})"
        case K.KFma(a, b, c):
            return f"gs_ffma({expr(a)}, {expr(b)}, {expr(c)})"
    raise CompileError(f"internal: cannot emit {type(e).__name__} (not lowered)")


def _atom(e: K.KExpr) -> str:
    text = expr(e)
    simple = isinstance(e, (K.KVar, K.KConst, K.KLoad)) or text.startswith("(")
    return text if simple else f"({text})"


def _binary(op: str, left: K.KExpr, right: K.KExpr, ty: BaseType) -> str:
    a, b = expr(left), expr(right)
    if op in PLAIN_OPS:
        return f"({a} {op} {b})"
    if ty == BaseType.INT and op in "+-*" and active("signed-overflow-ub"):
        return f"({a} {op} {b})"
    if ty == BaseType.INT and op in "/%" and active("floor-division"):
        return f"gs_floor_{'div' if op == '/' else 'mod'}({a}, {b})"
    if (ty == BaseType.FLOAT and op == "+" and isinstance(left, K.KBin)
            and left.op == "*" and active("fma-contraction")):
        return f"gs_ffma({expr(left.left)}, {expr(left.right)}, {b})"
    table = INT_OPS if ty == BaseType.INT else FLOAT_OPS if ty == BaseType.FLOAT else {}
    if op not in table:
        raise CompileError(f"unsupported: operator {op} on {ty.value}")
    return f"{table[op]}({a}, {b})"


class Printer:
    def __init__(self, source_lines: tuple[str, ...]) -> None:
        self.lines: list[str] = []
        self.source_lines = source_lines
        self.last_line = 0

    def out(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def origin(self, s, depth: int) -> None:
        line = getattr(s, "span", None) and s.span.line
        if not line or line == self.last_line or line > len(self.source_lines):
            return
        self.last_line = line
        self.out(depth, comment(f"line {line}: {self.source_lines[line - 1].strip()}"))

    def stmts(self, body: tuple, depth: int) -> None:
        for s in body:
            self.stmt(s, depth)

    def stmt(self, s: K.KStmt, depth: int) -> None:
        if not isinstance(s, K.KComment):
            self.origin(s, depth)
        match s:
            case K.KDecl(name, ctype, init):
                self.out(depth, f"{ctype} {name}" + (f" = {expr(init)};" if init else ";"))
            case K.KLocalArray(name, ctype, size):
                self.out(depth, f"{ctype} {name}[{size}] = {{}};  // zeroed (S-Alloc-Local)")
                self.out(depth, f"const int {name}_len = {size};")
            case K.KAssign(name, value):
                self.out(depth, f"{name} = {expr(value)};")
            case K.KStore(pointer, index, value):
                self.out(depth, f"{_atom(pointer)}[{expr(index)}] = {expr(value)};")
            case K.KIf(cond, then, orelse):
                self._if(cond, then, orelse, depth)
            case K.KWhile(cond, body):
                self.out(depth, f"while ({_strip(expr(cond))}) {{")
                self.stmts(body, depth + 1)
                self.out(depth, "}")
            case K.KBlock(body):
                self.out(depth, "{")
                self.stmts(body, depth + 1)
                self.out(depth, "}")
            case K.KCall(fn, args):
                self.out(depth, f"{fn}({', '.join(expr(a) for a in args)});")
            case K.KComment(text):
                self.out(depth, comment(text))
            case K.KCopy(dst, src, count, _):
                self.out(depth, f"for (int gs_i = 0; gs_i < {expr(count)}; ++gs_i) "
                         f"{_atom(dst)}[gs_i] = {_atom(src)}[gs_i];")
            case K.KPrim(text):
                self.out(depth, text)
            case _:
                raise CompileError(f"internal: {type(s).__name__} reached emission")

    def _if(self, cond, then, orelse, depth: int) -> None:
        self.out(depth, f"if ({_strip(expr(cond))}) {{")
        self.stmts(then, depth + 1)
        if len(orelse) == 1 and isinstance(orelse[0], K.KIf):
            inner = orelse[0]
            self.lines[-1:] = self.lines[-1:]
            self.out(depth, f"}} else if ({_strip(expr(inner.cond))}) {{")
            self.stmts(inner.then, depth + 1)
            if inner.orelse:
                self.out(depth, "} else {")
                self.stmts(inner.orelse, depth + 1)
        elif orelse:
            self.out(depth, "} else {")
            self.stmts(orelse, depth + 1)
        self.out(depth, "}")


def _strip(text: str) -> str:
    if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        return text[1:-1]
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _signature(f: K.KFunction, bounds: str = "") -> str:
    params = ", ".join(f"{p.ctype} {p.name}" for p in f.params)
    if f.is_kernel:
        return f'extern "C" __global__ void {bounds}{f.name}({params})'
    return f"__device__ void {f.name}({params})"


def _assume_aligned(f: K.KFunction) -> list[str]:
    """Note: every kernel pointer parameter is the start of its own allocation (one
    per Bundl global: launch.kernel_spec; CUDA and CuPy allocations are >= 256-byte
    aligned), so telling nvcc it is 16-byte aligned is true and lets it use 128-bit
    accesses where the index is a provable multiple of 4 (SGEMM's C epilogue). CUDA
    only: the cpu harness's buffers make no such promise."""
    lines = ["#if GS_CUDA"]
    for p in f.params:
        base = p.ctype.replace("__restrict__", "").strip()
        if base.endswith("*"):
            lines.append(f"  {p.name} = static_cast<{base}>(__builtin_assume_aligned("
                         f"{p.name}, 16));")
    return [*lines, "#endif"]


def emit_cuda(prog: K.KProgram, header: str = "", min_blocks_per_sm: int = 0,
              aligned_globals: bool = False) -> str:
    """`min_blocks_per_sm` > 0: the kernel carries `__launch_bounds__(threads, n)`,
    which only caps ptxas's register allocation so that n blocks fit on an SM (the
    launch always uses exactly `prog.threads`); no effect on what the kernel computes
    (the cpu harness defines `__launch_bounds__` away). `aligned_globals`: see
    `_assume_aligned`."""
    bounds = (f"__launch_bounds__({prog.threads}, {min_blocks_per_sm}) "
              if min_blocks_per_sm > 0 else "")
    p = Printer(prog.source_lines)
    if header:
        p.lines.extend(comment_block(header))
    p.lines.append(PRELUDE)
    for f in prog.functions:
        if not f.is_kernel:
            p.out(0, _signature(f) + ";")
    for f in prog.functions:
        p.out(0, "")
        p.out(0, comment(f"{f.name}: runs at {f.persp}"))
        p.out(0, _signature(f, bounds) + " {")
        p.out(1, "extern __shared__ __align__(16) unsigned char gs_smem[];")
        if aligned_globals and f.is_kernel:
            p.lines.extend(_assume_aligned(f))
        p.stmts(f.body, 1)
        p.out(0, "}")
    return "\n".join(p.lines) + "\n"
