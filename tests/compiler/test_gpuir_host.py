"""Host code after the last kernel, lowered as a kernel of one thread launched in
stream order (`compiler/gpuir_cuda/host.py`, issue 31.6): the kernels before it are
compared with the sequential reading, where such programs were all "unsupported"
(the GPU IR target's host epilogues: 13% of its programs). Before the pass every test
here but the last read "unsupported: CPU code outside a CudaDeviceFunction"."""

from __future__ import annotations

from pathlib import Path

from gpusem.calculus.gpuir.defines import header_defines
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from gpusem.compiler.gpuir_cuda.run import check_proc
from gpusem.fuzz.gpuir import seqpar
from gpusem.fuzz.gpuir.strategies import Kernel, Phase

CONFORMANCE = Path(__file__).parents[1] / "gpuir" / "conformance"

HOST_LOOP = """\
proc host_loop(A: f32[64] @ CudaGmemLinear, B: f32[64] @ CudaGmemLinear,
               H: f32[4] @ DRAM):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 2):
            for tid in cuda_threads(0, 32, unit=cuda_thread):
                B[task * 32 + tid] = A[task * 32 + tid] * 1.5
    Fence(cuda_stream_sync, cpu_in_order)
    for i in seq(0, 4):
        H[i] = B[i * 16] - A[i]
        if i < 2:
            H[i] += B[63]
"""


def proc_of(text: str, name: str = "p.gpuir"):
    return parse_module(text, name).procs[-1]


def test_host_read_after_stream_sync_is_a_last_kernel_of_one_thread() -> None:
    text = (CONFORMANCE / "host_read_after_stream_sync.gpuir").read_text()
    compiled = compile_proc(proc_of(text), {}, source=text)
    kernel, host = compiled.kernels
    assert (kernel.block, host.grid, host.block) == (32, 1, 32)
    assert "if (gs_rel_host_thread < 1)" in compiled.source
    assert [p.name for p in host.params] == ["A", "Out"]
    v = check_proc(proc_of(text), {}, "cpu", source=text)
    assert v.kind == "agree", v.describe()


def test_a_host_loop_over_dram_agrees() -> None:
    v = check_proc(proc_of(HOST_LOOP), {}, "cpu", seeds=(0, 1), source=HOST_LOOP)
    assert v.kind == "agree", v.describe()
    assert v.message == "2 schedule(s), 132 cells"  # A, B and H compared


def _own(sync: str) -> Phase:
    """A phase whose threads read their own cells: no data race."""
    return Phase(1, 0, True, False, "+", sync)


def test_the_generators_host_epilogue_is_compared() -> None:
    synced = Kernel(64, 2, (_own("cta"), Phase(3, 5, False, True, "*", "cta")),
                    host=True, host_sync=True)
    unsynced = Kernel(32, 1, (_own("cta"),), host=True, host_sync=False)
    racy = Kernel(64, 1, (_own("none"), Phase(3, 5, False, False, "+", "cta")),
                  host=True, host_sync=True)  # reads another thread's cell unsynced
    items = [(f"{n}.gpuir", k.source(), {}) for n, k in
             (("synced", synced), ("unsynced", unsynced), ("racy", racy))]
    o_synced, o_unsynced, o_racy = seqpar.check_sources(items, "cpu")
    assert o_synced.classification == "holds", o_synced.verdict.describe()
    # the missing stream sync: no run can show it (stream order provides it)
    assert o_unsynced.classification == "false-positive"
    assert seqpar.not_compared_reason(o_unsynced, "cpu") == seqpar.HOST_UNSYNCED
    assert o_racy.classification == "witness", o_racy.verdict.describe()


def test_host_code_the_pass_does_not_lower_stays_unsupported() -> None:
    # stream copies (instruction calls on the host) and host code before a kernel
    text = (CONFORMANCE / "stream_copies.gpuir").read_text()
    v = check_proc(proc_of(text), header_defines(text), "cpu", source=text)
    assert v.kind == "unsupported" and "CPU code outside" in v.message
    before = HOST_LOOP.replace("    Fence(cuda_stream_sync, cpu_in_order)\n", "")
    lines = before.splitlines()
    head, kernel, host = lines[:2], lines[2:6], lines[6:]
    moved = "\n".join(head + host + kernel) + "\n"
    v = check_proc(proc_of(moved), {}, "cpu", source=moved)
    assert v.kind == "unsupported" and "CPU code outside" in v.message
