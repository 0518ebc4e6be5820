"""Pass `host_as_kernel`: host code after the last kernel -> a kernel of one thread.

Exo-GPU's host code (Section 3.4; Figure 16's cpu_in_order and cuda_stream_sync rows)
runs on the CPU, and this compiler emits kernels only. Host code that comes after the
last CudaDeviceFunction (the fuzz generator's epilogue `H[0] = B[0]`, a host loop over
DRAM reading a kernel's output) is lowered as one more kernel: one block, its one
thread running the host statements in order, launched in stream order after the
others, its DRAM arrays passed as global memory (every array is copied back to the
host after the last launch, as a cudaMemcpy would). So the kernels before it are
compared with the sequential reading (issue 31.6: such programs were all "unsupported",
13% of the GPU IR target's programs).

Note: stream order gives that kernel everything the kernels before it wrote, which is
what Fence(cuda_stream_sync, cpu_in_order) gives the host; the Fence is dropped. A
program that omits it (the sync check rejects it: CheckRead or CheckMutates on
cpu_in_order) is compiled with the synchronisation it lacks, which a compiler may add:
no run shows the missing Fence (`fuzz/gpuir/seqpar` counts such programs apart).

Host code before or between kernels, host allocations, stream copies and instruction
calls on the host stay unsupported (`from_gpuir`).
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.calculus.gpuir import ast as A

# The timelines of host synchronisation (Figure 16): a Fence between these alone is the
# host's wait for the stream, which stream order provides to the host kernel.
HOST_TIMELINES = frozenset({"cuda_stream_sync", "cpu_in_order"})
BLOCK = 32  # one warp, of which thread 0 runs the host code


def host_as_kernel(proc: A.Proc) -> A.Proc:
    """`proc` with its trailing host code as a last CudaDeviceFunction of one
    thread and its DRAM parameters in global memory; `proc` itself when it has no
    host code, or host code this pass does not lower (then `from_gpuir` says
    "unsupported")."""
    kernels = [i for i, s in enumerate(proc.body)
               if isinstance(s, A.CudaDeviceFunction)]
    if not kernels:
        return proc
    head, tail = proc.body[:kernels[-1] + 1], proc.body[kernels[-1] + 1:]
    if not tail or any(not isinstance(s, A.CudaDeviceFunction)
                       and not _is_tensor_map(s) for s in head):
        return proc
    stmts = tuple(s for s in tail if not _host_fence(s))
    if not all(_lowerable(s) for s in stmts):
        return proc
    if not stmts:  # a host wait and nothing after it
        return replace(proc, body=head)
    span = stmts[0].span
    taken = {p.name for p in proc.params} | _loop_vars(stmts)
    task, thread = _fresh("host_task", taken), _fresh("host_thread", taken)
    threads = A.For(thread, A.CInt(0, span), A.CInt(1, span), A.LoopMode.CUDA_THREADS,
                    A.UnitExpr("cuda_thread", span=span), stmts, span)
    tasks = A.For(task, A.CInt(0, span), A.CInt(1, span), A.LoopMode.CUDA_TASKS, None,
                  (threads,), span)
    kernel = A.CudaDeviceFunction(BLOCK, 1, (), (tasks,), span)
    params = tuple(replace(p, mem=replace(p.mem, name="CudaGmemLinear"))
                   if isinstance(p, A.DataParam) and p.mem.name == "DRAM" else p
                   for p in proc.params)
    return replace(proc, params=params, body=(*head, kernel))


def _is_tensor_map(s: A.Stmt) -> bool:
    return isinstance(s, A.WindowStmt) and s.mem.name == "Sm90_tensorMap"


def _host_fence(s: A.Stmt) -> bool:
    return isinstance(s, A.Fence) and {s.pre, s.post} <= HOST_TIMELINES


def _lowerable(s: A.Stmt) -> bool:
    """Reads and writes of arrays, in seq loops and guards: what one thread runs as
    the host would."""
    match s:
        case A.Assign() | A.Reduce():
            return True
        case A.For(mode=A.LoopMode.SEQ, body=body) | A.If(body=body):
            return all(_lowerable(b) for b in body)
    return False


def _loop_vars(stmts: tuple[A.Stmt, ...]) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, A.For):
            out |= {s.var} | _loop_vars(s.body)
        elif isinstance(s, A.If):
            out |= _loop_vars(s.body)
    return out


def _fresh(name: str, taken: set[str]) -> str:
    k = 0
    while f"{name}{k or ''}" in taken:
        k += 1
    return f"{name}{k or ''}"
