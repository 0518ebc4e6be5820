"""Pass `assign_smem_offsets`: shared allocations -> offsets into dynamic shared memory.

Allocations are scoped (T-Alloc-Shared / S-Alloc-Shared ... free), so offsets follow a
stack discipline: siblings reuse space, nested allocations stack. A device function
allocates above the offset its caller passes (`gs_smem_off`, Prism Section 5), and the
kernel's dynamic shared-memory size is the deepest stack over all call paths. The
region [0, reserved) holds the barrier objects `lower_barriers` creates.
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.calculus.bundl.ast import BaseType
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.errors import CompileError
from gpusem.compiler.bundl_cuda.traverse import bodies, map_bodies, map_stmt_exprs

ELEM_BYTES = {BaseType.INT: 4, BaseType.FLOAT: 4, BaseType.BOOL: 1}
ALIGN = 16


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class _Assigner:
    def __init__(self, base: str | None, usage: dict[str, int]) -> None:
        self.base = base  # None for the kernel (absolute offsets)
        self.usage = usage
        self.peak = 0

    def offset(self, top: int) -> K.KExpr:
        return K.KConst(top, BaseType.INT) if self.base is None else K.KRaw(
            f"({self.base} + {top})")

    def stmts(self, stmts: tuple, top: int) -> tuple:
        return tuple(self.stmt(s, top) for s in stmts)

    def stmt(self, s: K.KStmt, top: int) -> K.KStmt:
        s = map_stmt_exprs(s, lambda e: self.offset(top) if isinstance(e, K.KSmemTop)
                           else None)
        match s:
            case K.KSharedAlloc(name, elem, size, body, span):
                nbytes = _align(size * ELEM_BYTES[elem])
                self.peak = max(self.peak, top + nbytes)
                pointer = K.KRaw(f"reinterpret_cast<{K.CTYPE[elem]}*>(gs_smem + "
                                 f"{_text(self.offset(top))})")
                return K.KBlock((
                    K.KComment(f"alloc Shared {K.CTYPE[elem]}[{size}] at smem offset "
                               f"{top} (S-Alloc-Shared)", span),
                    K.KDecl(name + "_len", "const int", K.KConst(size, BaseType.INT), span),
                    K.KDecl(name, K.CTYPE[elem] + "*", pointer, span),
                    *self.stmts(body, top + nbytes)), span)
            case K.KCall(fn):
                self.peak = max(self.peak, top + self.usage.get(fn, 0))
        return map_bodies(s, lambda b: self.stmts(b, top))


def _text(e: K.KExpr) -> str:
    match e:
        case K.KConst(v):
            return str(v)
        case K.KRaw(t):
            return t
    raise AssertionError(e)


def _callees(f: K.KFunction) -> set[str]:
    found: set[str] = set()

    def visit(stmts):
        for s in stmts:
            if isinstance(s, K.KCall):
                found.add(s.fn)
            for b in bodies(s):
                visit(b)

    visit(f.body)
    return found


def assign_smem_offsets(prog: K.KProgram, reserved: int = 0) -> K.KProgram:
    by_name = {f.name: f for f in prog.functions}
    usage: dict[str, int] = {}
    done: dict[str, K.KFunction] = {}

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in stack:
            raise CompileError(f"unsupported: recursive function {name} (its shared "
                               "memory stack depth is unbounded)")
        f = by_name[name]
        for callee in _callees(f):
            visit(callee, (*stack, name))
        a = _Assigner(None if f.is_kernel else "gs_smem_off", usage)
        done[name] = replace(f, body=a.stmts(f.body, reserved if f.is_kernel else 0))
        usage[name] = a.peak

    for f in prog.functions:
        visit(f.name, ())
    kernel = next(f for f in prog.functions if f.is_kernel)
    return replace(prog, functions=tuple(done[f.name] for f in prog.functions),
                   smem_bytes=max(usage[kernel.name], reserved))
