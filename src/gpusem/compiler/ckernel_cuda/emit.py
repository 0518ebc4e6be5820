"""CKernel -> CUDA C++, exactly: one `extern "C" __global__` kernel per program and the
`KernelSpec` the backends launch it with.

The emitted text is plain CUDA that NVVM and ptxas are free to optimise (the point of
the generator, issue 23 item 5): `const T* __restrict__` parameters, `__ldg`, pointer
selects, `#pragma unroll`, division by constants, 16/64-bit conversions, vector
accesses through `reinterpret_cast<const int4*>`, static `__shared__` arrays,
`__syncthreads`, warp shuffles, atomics and the bit intrinsics. It has no undefined
behaviour: signed `+ - * <<` go through the unsigned type (wrapping is then defined),
shift amounts are masked to the width, and the well-formedness rules exclude the rest
(typing_rules/ckernel). The cpu backend builds the same text with g++ against the
SIMT harness; `#if !GS_CUDA` supplies the CUDA vector types g++ lacks.

Seeded faults (faults.py) plant a miscompilation here, to measure the fuzzer.
"""

from __future__ import annotations

from typing import assert_never

from gpusem.calculus.ckernel import ast as A
from gpusem.compiler.backends.kernel import KernelSpec, ptr
from gpusem.compiler.ckernel_cuda.faults import fault_on

C_TYPES = {"i16": "short", "u16": "unsigned short", "i32": "int", "u32": "unsigned",
           "i64": "long long", "u64": "unsigned long long", "f32": "float"}
UNSIGNED_OF = {"i32": "unsigned", "i64": "unsigned long long"}
DTYPE_NAMES = {"i16": "int16", "u16": "uint16", "i32": "int32", "u32": "uint32",
               "i64": "int64", "u64": "uint64", "f32": "float32"}
VECTOR = {("i32", 2): "int2", ("i32", 4): "int4", ("f32", 2): "float2",
          ("f32", 4): "float4"}
COMPONENTS = "xyzw"
ATOMIC_FN = {"add": "atomicAdd", "min": "atomicMin", "max": "atomicMax",
             "and": "atomicAnd", "or": "atomicOr", "xor": "atomicXor"}

CPU_VECTORS = """#if !GS_CUDA
// The CUDA vector types, for the cpu harness (g++ has none); same size and alignment.
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
#endif
"""


def literal(ty: str, value: float) -> str:
    if ty == "f32":
        return f"{float(value)!r}f"
    v = int(value)
    if ty in ("i16", "u16"):
        return f"(({C_TYPES[ty]}){v})"
    suffix = {"i32": "", "u32": "u", "i64": "ll", "u64": "ull"}[ty]
    bits = A.BITS[ty]
    if ty in A.SIGNED and v == -(1 << (bits - 1)):  # INT_MIN has no literal in C
        return f"(-{(1 << (bits - 1)) - 1}{suffix} - 1)"
    return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"


class _Emitter:
    def __init__(self, k: A.Kernel) -> None:
        self.k = k
        self.lines: list[str] = []
        self.temps = 0

    def index(self, buf: str, idx: A.Index) -> str:
        match idx:
            case A.Own(slot):
                who = "tid" if self.k.shared_array(buf) else "gid"
                return f"{who} * {A.CELLS} + {slot}"
            case A.Masked(e):
                return self.masked(e, self.k.size_of(buf))
            case A.Neighbour(shift, slot):
                return f"((tid + {shift}) & {self.k.block - 1}) * {A.CELLS} + {slot}"
            case _:
                assert_never(idx)

    def masked(self, e: A.Expr, size: int) -> str:
        wide = e.ty in ("i64", "u64")
        cast, suffix = ("unsigned long long", "ull") if wide else ("unsigned", "u")
        return f"(({cast})({self.expr(e)}) & {size - 1}{suffix})"

    def expr(self, e: A.Expr) -> str:
        match e:
            case A.Lit(ty, value):
                return literal(ty, value)
            case A.Var(name) | A.Builtin(name):
                return name
            case A.Unary(op, arg, _):
                a = self.expr(arg)
                if op == "neg":
                    u = UNSIGNED_OF.get(arg.ty)
                    return f"(({C_TYPES[arg.ty]})(0u - ({u})({a})))" if u else f"(-{a})"
                fn = {"not": "~", "popc": "__popc", "clz": "__clz", "brev": "__brev",
                      "abs": "llabs" if arg.ty == "i64" else "abs"}[op]
                return f"({fn}({a}))" if op == "not" else f"{fn}({a})"
            case A.Binary(op, a, b, _):
                return self.binary(op, a, b)
            case A.DivC(op, a, d, ty):
                if (fault_on("divc-pow2-mask") and op == "%" and ty in A.SIGNED
                        and d > 1 and d & (d - 1) == 0):
                    return f"(({self.expr(a)}) & {literal(ty, d - 1)})"
                return f"(({self.expr(a)}) {op} {literal(ty, d)})"
            case A.Cast(ty, arg):
                return f"(({C_TYPES[ty]})({self.expr(arg)}))"
            case A.Select(c, a, b, _):
                return f"(({self.expr(c)}) ? ({self.expr(a)}) : ({self.expr(b)}))"
            case A.Load(buf, idx, ldg):
                cell = f"{buf}[{self.index(buf, idx)}]"
                return f"__ldg(&{cell})" if ldg else cell
            case A.PtrSelect(c, ba, bb, idx):
                return (f"(({self.expr(c)}) ? {ba} : {bb})[{self.index(ba, idx)}]")
            case A.Shfl(xor, value, k):
                v = self.expr(value)
                if xor:
                    return f"__shfl_xor_sync(0xffffffffu, {v}, {k})"
                return f"__shfl_sync(0xffffffffu, {v}, (lane + {k}) & 31)"
            case _:
                assert_never(e)

    def binary(self, op: str, a: A.Expr, b: A.Expr) -> str:
        x, y, ty = self.expr(a), self.expr(b), a.ty
        if op in A.BIN_COMPARE:
            return f"((int)(({x}) {op} ({y})))"
        if op in ("min", "max"):
            return f"{op}({x}, {y})"
        u = UNSIGNED_OF.get(ty)
        if op in ("<<", ">>"):
            amount = f"(({y}) & {A.BITS[ty] - 1})"
            if op == "<<" and u:
                return f"(({C_TYPES[ty]})(({u})({x}) << {amount}))"
            return f"(({x}) {op} {amount})"
        if op in ("+", "-", "*") and u:
            return f"(({C_TYPES[ty]})(({u})({x}) {op} ({u})({y})))"
        return f"(({x}) {op} ({y}))"

    # ------------------------------------------------------------------ statements
    def block(self, b: A.Block, pad: str) -> None:
        for s in b.stmts:
            self.stmt(s, pad)

    def stmt(self, s: A.Stmt, pad: str) -> None:
        out = self.lines
        match s:
            case A.Let(name, ty, e):
                out.append(f"{pad}{C_TYPES[ty]} {name} = {self.expr(e)};")
            case A.Assign(name, e):
                out.append(f"{pad}{name} = {self.expr(e)};")
            case A.Store(buf, idx, e):
                out.append(f"{pad}{buf}[{self.index(buf, idx)}] = {self.expr(e)};")
            case A.VecLoad(names, ty, buf, idx):
                vt = VECTOR[(ty, len(names))]
                at = (f"gid * {A.CELLS // len(names)} + {idx.slot}"
                      if isinstance(idx, A.Own)
                      else self.masked(idx.expr, self.k.size_of(buf) // len(names)))
                t = f"vec{self.temps}"
                self.temps += 1
                out.append(f"{pad}const {vt} {t} = "
                           f"reinterpret_cast<const {vt}*>({buf})[{at}];")
                for name, c in zip(names, COMPONENTS, strict=False):
                    out.append(f"{pad}{C_TYPES[ty]} {name} = {t}.{c};")
            case A.VecStore(buf, slot, exprs):
                p = self.k.param(buf)
                vt = VECTOR[(p.ty if p else "i32", len(exprs))]
                args = ", ".join(self.expr(e) for e in exprs)
                out.append(f"{pad}reinterpret_cast<{vt}*>({buf})"
                           f"[gid * {A.CELLS // len(exprs)} + {slot}] = "
                           f"make_{vt}({args});")
            case A.If(cond, then, orelse):
                out.append(f"{pad}if ({self.expr(cond)}) {{")
                self.block(then, pad + "  ")
                if orelse.stmts:
                    out.append(f"{pad}}} else {{")
                    self.block(orelse, pad + "  ")
                out.append(f"{pad}}}")
            case A.For(var, trips, unroll, body):
                if unroll:
                    out.append("#pragma unroll")
                out.append(f"{pad}for (int {var} = 0; {var} < {trips}; ++{var}) {{")
                self.block(body, pad + "  ")
                out.append(f"{pad}}}")
            case A.Sync():
                if not fault_on("drop-sync"):
                    out.append(f"{pad}__syncthreads();")
            case A.Atomic(op, buf, cell, e):
                out.append(f"{pad}{ATOMIC_FN[op]}(&{buf}[{cell}], {self.expr(e)});")
            case _:
                assert_never(s)


def param_decl(p: A.Param) -> str:
    ct = C_TYPES[p.ty]
    match p.mode:
        case "ro":
            return f"const {ct}* __restrict__ {p.name}"
        case "rwr":
            return f"{ct}* __restrict__ {p.name}"
    return f"{ct}* {p.name}"


def emit_kernel(k: A.Kernel) -> str:
    """The `.cu` text of kernel `k` (includes gpusem_rt.cuh, as every backend needs)."""
    em = _Emitter(k)
    for s in k.shared:
        em.lines.append(f"  __shared__ {C_TYPES[s.ty]} {s.name}[{k.block * A.CELLS}];")
    em.lines += ["  const int tid = (int)threadIdx.x;",
                 "  const int bid = (int)blockIdx.x;",
                 f"  const int gid = bid * {k.block} + tid;",
                 "  const int lane = tid & 31;"]
    em.block(k.body, "  ")
    params = ",\n    ".join(param_decl(p) for p in k.params)
    return ("#include \"gpusem_rt.cuh\"\n// CKernel program, emitted by gpusem "
            "(compiler/ckernel_cuda).\n" + CPU_VECTORS
            + f'\nextern "C" __global__ void {k.name}(\n    {params}) {{\n'
            + "\n".join(em.lines) + "\n}\n")


def kernel_spec(k: A.Kernel, source: str | None = None) -> KernelSpec:
    """How the backends launch `k`: grid x block threads, one buffer per parameter."""
    return KernelSpec(k.name, emit_kernel(k) if source is None else source, k.grid,
                      k.block, params=tuple(ptr(p.name, DTYPE_NAMES[p.ty],
                                                k.size_of(p.name)) for p in k.params))
