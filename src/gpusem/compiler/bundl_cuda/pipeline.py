"""The Bundl -> CUDA pipeline: named passes, each KIR -> KIR and testable alone.

    from_bundl                  erase perspectives on data; KIR with perspective nodes
    place_global_allocations    galloc.py: `alloc in Global` -> one scratch slot per unit
    lower_data_perspectives     partition / claim / lower -> pointer offsets + barriers
    lower_async_copies          async_partition / async_memcpy -> cp.async or copies
    lower_code_perspectives     destruct / group / split -> perspective ids + guards
    zero_shared_allocations     shared arrays start zeroed, as S-Alloc-Shared's do
    place_sync                  wait motion (flag) and dropping barriers at kernel end;
                                or place_sync_prism (sync "prism": Sec. 5's rules 1, 2)
    lower_barriers              barriers -> __syncthreads / __syncwarp / bar.sync / mbarrier
    merge_adjacent_syncthreads  speed.py: a barrier right after a barrier is dropped
    restrict_kernel_pointers    speed.py: globals never alias -> __restrict__
    hint_unroll_counted_loops   speed.py: #pragma unroll on short counted loops
    contract_fma                speed.py: only with fast_fma (benchmarks, not the oracle)
    assign_smem_offsets         shared allocations -> offsets in dynamic shared memory
    emit_cuda                   text
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusem.calculus.bundl import ast as B
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.barriers import lower_barriers
from gpusem.compiler.bundl_cuda.emit import emit_cuda
from gpusem.compiler.bundl_cuda.errors import CompileError
from gpusem.compiler.bundl_cuda.faults import active, read_once
from gpusem.compiler.bundl_cuda.from_bundl import from_bundl
from gpusem.compiler.bundl_cuda.galloc import once_per_launch, place_global_allocations
from gpusem.compiler.bundl_cuda.lower_async import lower_async_copies
from gpusem.compiler.bundl_cuda.lower_code import lower_code_perspectives
from gpusem.compiler.bundl_cuda.lower_data import lower_data_perspectives
from gpusem.compiler.bundl_cuda.paths import note
from gpusem.compiler.bundl_cuda.smem import assign_smem_offsets
from gpusem.compiler.bundl_cuda.speed import (
    MAX_UNROLL_TRIPS,
    contract_fma,
    hint_unroll_counted_loops,
    merge_adjacent_syncthreads,
    restrict_kernel_pointers,
)
from gpusem.compiler.bundl_cuda.sync import place_sync
from gpusem.compiler.bundl_cuda.sync_prism import place_sync_prism
from gpusem.compiler.bundl_cuda.traverse import map_bodies, rewrite_program, walk

KERNEL_NAME = "bundl_main"


@dataclass(frozen=True, slots=True)
class CompileOptions:
    sync_motion: bool = True
    # The barrier placement: "naive" | "motion" | "prism" (sync_prism.py); "" reads
    # sync_motion (True: "motion", False: "naive").
    sync: str = ""
    cp_async: bool = True
    # Benchmarks only (changes float results; the oracle never sets it): contract
    # float a * b + c into fma (speed.contract_fma).
    fast_fma: bool = False
    # `#pragma unroll` on short counted loops (speed.hint_unroll_counted_loops).
    unroll_hints: bool = True
    # The longest loop (in trips) that gets the hint: 16 lets a BK = 16 SGEMM's dot
    # loop unroll (its shared-memory reads then fold into LDS.128 with immediates).
    unroll_max_trips: int = MAX_UNROLL_TRIPS
    # > 0: `__launch_bounds__(threads, n)` on the kernel (ptxas keeps registers low
    # enough for n blocks per SM; emit.emit_cuda). 0: none (the default).
    min_blocks_per_sm: int = 0
    # Kernel pointer parameters are 16-byte aligned (they are: emit._assume_aligned);
    # lets nvcc vectorise accesses it can prove aligned. CUDA only.
    aligned_globals: bool = False


@dataclass(frozen=True, slots=True)
class CompiledKernel:
    """The CUDA text and how to launch it: grid (B), block (T), dynamic shared memory,
    and the kernel parameters: one pointer per Bundl global, in declaration order,
    then the zero-filled scratch arrays of `alloc ... in Global` (galloc.py)."""

    source: str
    name: str
    blocks: int
    threads: int
    smem_bytes: int
    globals: tuple[tuple[str, B.BaseType, int], ...]
    scratch: tuple[tuple[str, B.BaseType, int], ...] = ()


def zero_shared_allocations(prog: K.KProgram) -> K.KProgram:
    """A shared array is zeroed by its block before use, then the block synchronises:
    S-Alloc-Shared allocates a fresh (zeroed) array; GPU shared memory holds garbage.
    Every thread of the block executes the allocation (it is typed at (Block, 1)).

    Where the array's bytes may still be in use when a fast thread starts zeroing
    them, the block synchronises first: a site met again (a loop, a function called
    twice: the previous instance's readers), or one after an allocation whose scope has
    ended (siblings share offsets, `assign_smem_offsets`). The interpreter gives every
    instance fresh cells, so without that barrier a slow thread could read zeros, or the
    next instance's values, where it should read its own instance's."""
    once = once_per_launch(prog)

    def per_function(f: K.KFunction) -> K.KFunction:
        ended = [False]  # some allocation's scope ended earlier in program order

        def stmts(body: tuple, again: bool) -> tuple:
            out = []
            for s in body:
                inner = again or isinstance(s, K.KWhile)
                reused = again or ended[0]  # decided before the body's allocations
                s = map_bodies(s, lambda b: stmts(b, inner))
                if isinstance(s, K.KSharedAlloc) and not active("shared-not-zeroed"):
                    note("compile:pipeline:shared array zeroed")
                    first = (K.KPrim("__syncthreads();", s.span),) if reused else ()
                    zero = (*first,
                            K.KPrim(f"for (int gs_i = threadIdx.x; gs_i < {s.size}; "
                                    f"gs_i += blockDim.x) {s.name}[gs_i] = 0;", s.span),
                            K.KPrim("__syncthreads();", s.span))
                    s = replace(s, body=(*zero, *s.body))
                if isinstance(s, K.KSharedAlloc):
                    ended[0] = True
                out.append(s)
            return tuple(out)

        return replace(f, body=stmts(f.body, f.name not in once))

    return rewrite_program(prog, per_function)


SYNC_MODES = ("naive", "motion", "prism")


def sync_mode(options: CompileOptions) -> str:
    """The barrier placement `options` asks for: naive (a barrier at every
    construct's end), motion (sync.py) or prism (Prism Sec. 5, sync_prism.py)."""
    if options.sync and options.sync not in SYNC_MODES:
        raise CompileError(f"unknown sync mode {options.sync!r} (known: "
                           f"{', '.join(SYNC_MODES)})")
    return options.sync or ("motion" if options.sync_motion else "naive")


def kir_after_sync(prog: B.Program, options: CompileOptions = CompileOptions(),
                   source: str = "") -> K.KProgram:
    """The KIR once the barriers are placed (before they are lowered): what the sync
    modes are compared on (`count_barriers`)."""
    kp = from_bundl(prog)
    kp = replace(kp, source_lines=tuple(source.split("\n")))  # as the parser counts
    kp = place_global_allocations(kp)
    kp = lower_data_perspectives(kp)
    kp = lower_async_copies(kp, options.cp_async)
    kp = zero_shared_allocations(kp)
    kp = lower_code_perspectives(kp)
    mode = sync_mode(options)
    return place_sync_prism(kp) if mode == "prism" else place_sync(kp, mode == "motion")


def count_barriers(kp: K.KProgram) -> int:
    """Placed barriers, statically: a split barrier (arrive + wait) counts once."""
    n = [0]

    def visit(s: K.KStmt) -> None:
        n[0] += isinstance(s, (K.KBarrier, K.KWait))

    for f in kp.functions:
        walk(f.body, visit)
    return n[0]


def compile_to_kir(prog: B.Program, options: CompileOptions = CompileOptions(),
                   source: str = "") -> K.KProgram:
    with read_once():  # the fault switch, read once for all the passes
        return _compile_to_kir(prog, options, source)


def _compile_to_kir(prog: B.Program, options: CompileOptions, source: str
                    ) -> K.KProgram:
    kp = kir_after_sync(prog, options, source)
    kp = lower_barriers(kp)
    kp = merge_adjacent_syncthreads(kp)
    kp = restrict_kernel_pointers(kp)
    if options.unroll_hints:
        kp = hint_unroll_counted_loops(kp, options.unroll_max_trips)
    if options.fast_fma:
        kp = contract_fma(kp)
    return assign_smem_offsets(kp, reserved=kp.smem_bytes)


def _sync_words(options: CompileOptions) -> str:
    if not options.sync:  # the words of the two original modes (goldens keep them)
        return f"sync motion {'on' if options.sync_motion else 'off'}"
    return f"sync {sync_mode(options)}"


def compile_program(prog: B.Program, options: CompileOptions = CompileOptions(),
                    source: str = "", file: str = "<input>") -> CompiledKernel:
    with read_once():  # the fault switch, read once for all the passes and emit
        return _compile_program(prog, options, source, file)


def _compile_program(prog: B.Program, options: CompileOptions, source: str,
                     file: str) -> CompiledKernel:
    kp = compile_to_kir(prog, options, source)
    header = (f"Generated by gpusem from {file} (Bundl -> CUDA, Prism Section 5).\n"
              f"Launch: grid {kp.blocks}, block {kp.threads}, dynamic shared memory "
              f"{kp.smem_bytes} bytes; {_sync_words(options)}"
              f"{'; FAST FMA (not the reference semantics)' if options.fast_fma else ''}.")
    text = emit_cuda(kp, header, options.min_blocks_per_sm, options.aligned_globals)
    return CompiledKernel(text, KERNEL_NAME, kp.blocks, kp.threads, kp.smem_bytes,
                          kp.globals, kp.scratch)
