"""Pass `lower_barriers`: each `KBarrier` -> the cheapest CUDA primitive for its shape.

A barrier synchronises the threads of one perspective instance (Thread, n): the n
consecutive threads starting at base = threadIdx.x - p (perspective ids are positions,
and S-Group / S-Split keep instances contiguous and aligned: `align to` makes every
base a multiple of n). By shape:
  n == 1                      nothing: one thread's accesses are in program order
  n == T                      __syncthreads()
  n | 32 (inside one warp)    __syncwarp(mask of the n lanes)
  32 | n, ids available       named barrier `bar.sync id, n`, one id per (site, instance)
  otherwise                   an mbarrier per (site, instance) in shared memory, with a
                              per-thread phase bit (split barrier: arrive, then wait)
Barriers among blocks ((Block, n), (Grid, 1)) exist only at the end of a kernel, where
`place_sync` drops them; any other is rejected as unsupported.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import count

from gpusem.calculus.bundl.perspective import Level
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.errors import CompileError
from gpusem.compiler.bundl_cuda.faults import active
from gpusem.compiler.bundl_cuda.paths import note as note_path
from gpusem.compiler.bundl_cuda.traverse import map_bodies

NAMED_BARRIER_IDS = 15  # ids 1..15; id 0 is __syncthreads
MBAR_BYTES = 8


def _p_text(p: K.KExpr) -> str:
    match p:
        case K.KVar(name):
            return name
        case K.KConst(v):
            return str(v)
        case K.KBuiltin(name):
            return name
    raise CompileError(f"internal: unresolved perspective id {p}")


@dataclass
class _Plan:
    threads: int
    blocks: int
    next_id: int = 1
    mbar_bytes: int = 0
    mbar_inits: list[str] = field(default_factory=list)
    phase_vars: list[str] = field(default_factory=list)
    sites: count = field(default_factory=lambda: count(1))
    split_sites: dict = field(default_factory=dict)

    def lower(self, b: K.KBarrier, in_kernel: bool) -> tuple:
        persp, base = b.persp, f"(threadIdx.x - {_p_text(b.p)})"
        note = K.KComment(f"sync {b.site}: all {persp} threads (init; dec; wait)", b.span)
        if persp.level != Level.THREAD:
            one_block = (persp.level == Level.BLOCK and persp.n == 1) or (
                persp.level == Level.GRID and self.blocks == 1)
            if one_block:
                note_path("compile:lower_barriers:__syncthreads")
                return (note, K.KPrim("__syncthreads();", b.span))
            raise CompileError(f"unsupported: a barrier among blocks ({persp}) before "
                               "the end of the kernel", span=b.span)
        n = persp.n
        if n == 1:
            note_path("compile:lower_barriers:one thread")
            return (K.KComment(f"sync {b.site}: one thread, program order", b.span),)
        if n == self.threads:
            note_path("compile:lower_barriers:__syncthreads")
            wrong = active("syncwarp-for-block")
            return (note, K.KPrim("__syncwarp();" if wrong else "__syncthreads();", b.span))
        if 32 % n == 0:
            note_path("compile:lower_barriers:__syncwarp" if n == 32
                      else "compile:lower_barriers:__syncwarp(mask)")
            mask = ("0xffffffffu" if n == 32
                    else f"(0x{(1 << n) - 1:x}u << ({base} & 31))")
            return (note, K.KPrim(f"__syncwarp({mask});", b.span))
        instances = -(-self.threads // n)
        if n % 32 == 0 and self.next_id + instances - 1 <= NAMED_BARRIER_IDS:
            note_path("compile:lower_barriers:bar.sync")
            first = self.next_id
            self.next_id += instances
            counted = n // 2 if active("named-barrier-count") else n
            return (note, K.KPrim(f"gs_bar_sync({first} + {base} / {n}, {counted});",
                                  b.span))
        if not in_kernel:
            raise CompileError(f"unsupported: a {persp} barrier inside a device "
                               "function needs an mbarrier", span=b.span)
        note_path("compile:lower_barriers:mbarrier")
        return (note, *self._mbarrier(b, base, n, instances))

    def _mbar_site(self, n: int) -> tuple[int, str]:
        """A fresh mbarrier per instance of (Thread, n), and its phase variable."""
        site = next(self.sites)
        offset = self.mbar_bytes
        instances = -(-self.threads // n)
        self.mbar_bytes += MBAR_BYTES * instances
        self.mbar_inits.append(
            f"for (int gs_i = 0; gs_i < {instances}; ++gs_i) gs_mbar_init("
            f"reinterpret_cast<gs_u64*>(gs_smem + {offset}) + gs_i, {n});")
        phase = f"gs_phase{site}"
        self.phase_vars.append(phase)
        return offset, phase

    def split(self, s: K.KArrive | K.KWait) -> tuple:
        """Arrive motion's split barrier: always an mbarrier (a thread that arrives
        on a named barrier cannot later also wait on it)."""
        n, base = s.persp.n, f"(threadIdx.x - {_p_text(s.p)})"
        note_path("compile:lower_barriers:mbarrier")
        if s.site not in self.split_sites:
            self.split_sites[s.site] = self._mbar_site(n)
        offset, phase = self.split_sites[s.site]
        bar = f"(reinterpret_cast<gs_u64*>(gs_smem + {offset}) + {base} / {n})"
        if isinstance(s, K.KArrive):
            return (K.KComment(f"arrive {s.site}: all {s.persp} threads (split barrier)",
                               s.span), K.KPrim(f"gs_mbar_arrive({bar});", s.span))
        flip = "" if active("mbarrier-phase") else f" {phase} ^= 1u;"
        return (K.KComment(f"wait {s.site}", s.span),
                K.KPrim(f"gs_mbar_wait_parity({bar}, {phase});{flip}", s.span))

    def _mbarrier(self, b: K.KBarrier, base: str, n: int, instances: int) -> tuple:
        offset, phase = self._mbar_site(n)
        bar = f"(reinterpret_cast<gs_u64*>(gs_smem + {offset}) + {base} / {n})"
        return (K.KPrim(f"gs_mbar_arrive({bar});", b.span),
                K.KPrim(f"gs_mbar_wait_parity({bar}, {phase});"
                        + ("" if active("mbarrier-phase") else f" {phase} ^= 1u;"),
                        b.span))


def lower_barriers(prog: K.KProgram) -> K.KProgram:
    plan = _Plan(prog.threads, prog.blocks)

    def stmts(body: tuple, in_kernel: bool) -> tuple:
        out: list = []
        for s in body:
            if isinstance(s, K.KBarrier):
                out.extend(plan.lower(s, in_kernel))
            elif isinstance(s, (K.KArrive, K.KWait)):
                out.extend(plan.split(s))
            else:
                out.append(map_bodies(s, lambda b: stmts(b, in_kernel)))
        return tuple(out)

    functions = [replace(f, body=stmts(f.body, f.is_kernel)) for f in prog.functions]
    kernel_index = next(i for i, f in enumerate(functions) if f.is_kernel)
    kernel = functions[kernel_index]
    if plan.mbar_inits:
        prologue: tuple[K.KStmt, ...] = (
            K.KComment("mbarriers of the split barriers: initialised once per block"),
            *(K.KDecl(v, "unsigned", K.KRaw("0u")) for v in plan.phase_vars),
            K.KIf(K.KRaw("threadIdx.x == 0"),
                  tuple(K.KPrim(t) for t in plan.mbar_inits)),
            K.KPrim("__syncthreads();"),
        )
        functions[kernel_index] = replace(kernel, body=(*prologue, *kernel.body))
    reserved = -(-plan.mbar_bytes // 16) * 16
    return replace(prog, functions=tuple(functions), smem_bytes=reserved)
