"""Pass `emit_cuda`: fully lowered GKIR -> CUDA C++ text.

One `extern "C" __global__` kernel per GKernel; the text includes `gpusem_rt.cuh` and
means the same under nvcc / NVRTC and under g++ with the SIMT harness. A kernel with
thread-block clusters carries `__cluster_dims__` under nvcc and starts with
`gs_cluster_dims`, the cpu harness's check that it is launched in those clusters (the
harness runs a cluster's CTAs together). Each lowered statement
is preceded, where its source line changes, by a comment quoting that line.
"""

from __future__ import annotations

from gpusem.compiler.cxx_text import comment, comment_block
from gpusem.compiler.gpuir_cuda import kir as K

PRELUDE = """\
#include "gpusem_rt.cuh"
"""


class _Printer:
    def __init__(self, source_lines: tuple[str, ...]):
        self.lines: list[str] = []
        self.source = source_lines
        self.last_line = 0

    def out(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def origin(self, depth: int, span) -> None:
        line = getattr(span, "line", 0)
        if line and line != self.last_line and line <= len(self.source):
            self.last_line = line
            self.out(depth, comment(f"{line}: {self.source[line - 1].strip()}"))

    def body(self, depth: int, stmts) -> None:
        for s in stmts:
            self.stmt(depth, s)

    def stmt(self, depth: int, s: K.GStmt) -> None:
        self.origin(depth, s.span)
        match s:
            case K.GPrim(text=t):
                for ln in t.splitlines():
                    self.out(depth, ln)
            case K.GComment(text=t):
                self.out(depth, comment(t))
            case K.GLet(name=n, expr=e):
                self.out(depth, f"const int {n} = {e};")
            case K.GLocal(name=n, ctype=t, count=c):
                self.out(depth, f"{t} {n}[{c}] = {{}};")
            case K.GFor(var=v, lo=lo, hi=hi, body=b):
                self.out(depth, f"for (int {v} = {lo}, gs_hi_{v} = {hi}; {v} < "
                         f"gs_hi_{v}; {v}++) {{")
                self.body(depth + 1, b)
                self.out(depth, "}")
            case K.GIf(cond=c, body=b, note=note):
                note_text = f"  {comment(note)}" if note else ""
                self.out(depth, ("{" if c == "true" else f"if ({c}) {{") + note_text)
                self.body(depth + 1, b)
                self.out(depth, "}")
            case _:
                raise AssertionError(f"not lowered before emit: {s!r}")


def emit_kernel(k: K.GKernel, source_lines: tuple[str, ...]) -> str:
    p = _Printer(source_lines)
    params = ", ".join(f"{q.ctype}{' *' if q.count else ''} {q.name}" for q in k.params)
    p.out(0, f"// grid {k.grid}, block {k.block}, cluster {k.cluster}, dynamic shared "
          f"memory {k.smem_bytes} bytes")
    bounds = f"{k.block}, {k.min_blocks}" if k.min_blocks else f"{k.block}"
    head = f"__launch_bounds__({bounds}) {k.name}({params}) {{"
    if k.cluster > 1:  # g++ has no __cluster_dims__: the harness takes KernelSpec's
        p.out(0, "#if GS_CUDA")
        p.out(0, f'extern "C" __global__ void __cluster_dims__({k.cluster}, 1, 1) '
              f"{head}")
        p.out(0, "#else")
        p.out(0, f'extern "C" __global__ void {head}')
        p.out(0, "#endif")
    else:
        p.out(0, f'extern "C" __global__ void {head}')
    if k.cluster > 1:
        p.out(1, f"gs_cluster_dims({k.cluster}, 1, 1);")
    if k.smem_bytes:
        p.out(1, "extern __shared__ __align__(16) unsigned char gs_smem[];")
    p.body(1, k.body)
    p.out(0, "}")
    return "\n".join(p.lines) + "\n"


def emit_cuda(kernels: list[K.GKernel], header: str,
              source_lines: tuple[str, ...] = ()) -> str:
    head = "".join(f"{ln}\n" for ln in comment_block(header))
    return head + PRELUDE + "".join("\n" + emit_kernel(k, source_lines)
                                    for k in kernels)
