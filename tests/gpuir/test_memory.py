"""Distributed memory analysis (Section 4.1): rejections name the variable and the
source lines of the sites involved; the analysis result exposes what the conversion
to AMIR needs (declarations and thread mappings per statement)."""

from __future__ import annotations

import pytest
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.parser import parse_proc
from gpusem.calculus.gpuir.walk import walk
from gpusem.typing_rules.gpuir.frontend import analyse, check_proc

TEMPLATE = """
proc p(A: f32[64] @ CudaGmemLinear, Out: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            acc: f32[64] @ CudaRmem
            for t in cuda_threads(0, 64, unit=cuda_thread):
                acc[t] = A[t]
            for t in cuda_threads(0, 64, unit=cuda_thread):
                Out[t] = {READ}
"""


@pytest.mark.parametrize("read,ok", [
    ("acc[t]", True),
    ("acc[t] + A[63 - t]", True),
    ("acc[63 - t]", False),
    ("acc[t / 2]", False),
])
def test_register_ownership(read: str, ok: bool) -> None:
    proc = parse_proc(TEMPLATE.replace("{READ}", read))
    an = analyse(proc, {})
    assert (not an.errors) is ok
    if not ok:
        msg = an.errors[0].message
        assert an.errors[0].rule == "DistributedMemory"
        assert "acc" in msg and "line 7" in msg and "line 9" in msg


def test_instruction_distributes_interval_dimension() -> None:
    """A shuffle's window part[w, :] gives lane l of warp w element (w, l): the same
    owner the thread-level sites use, so it is consistent; reversing the lanes is not."""
    src = """
proc p(Out: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            part: f32[2, 32] @ CudaRmem
            tmp: f32[2, 32] @ CudaRmem
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    part[w, l] = 1.0
                cuda_shfl_xor_f32(tmp[w, :], part[w, :], 1)
                for l in cuda_threads(0, 32, unit=cuda_thread):
                    Out[w * 32 + l] = tmp[w, {LANE}]
"""
    check_proc(parse_proc(src.replace("{LANE}", "l")), {})
    with pytest.raises(IllTyped) as err:
        check_proc(parse_proc(src.replace("{LANE}", "31 - l")), {})
    assert "tmp" in err.value.message


def test_analysis_exposes_declarations() -> None:
    proc = parse_proc(TEMPLATE.replace("{READ}", "acc[t]"))
    an = check_proc(proc, {})
    write = next(s for s in walk(proc.body) if isinstance(s, A.Assign))
    d = an.decl(write, "acc")
    assert d.kind == "data" and d.mem.name == "CudaRmem" and d.mapping.size == 64
    assert an.decl(write, "A").kind == "data" and an.decl(write, "t").kind == "control"
    assert an.info(write).thread_vars == ("t",) and an.info(write).task_vars == ("task",)
