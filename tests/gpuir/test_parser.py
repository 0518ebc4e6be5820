"""Parser: name resolution into the forms of Figure 1 and one-line BadInput errors."""

from __future__ import annotations

import pytest
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.parser import parse_module, parse_proc


def test_names_resolve_by_kind() -> None:
    p = parse_proc("""
proc p(N: size, X: f32[N] @ CudaGmemLinear):
    z: barrier[2] @ CudaMbarrier
    for i in seq(0, N):
        X[i] = X[i] * 2.0 + -1
        Arrive(cuda_in_order) >> z[i % 2]
        g(X[0:N], i + 1, 2.5) >> z[0]
""")
    loop = p.body[1]
    assert isinstance(loop, A.For) and loop.mode is A.LoopMode.SEQ and loop.unit is None
    assign, arrive, call = loop.body
    assert assign == A.Assign("X", (A.CVar("i"),), A.DBin(
        "+", A.DBin("*", A.DRead("X", (A.WPoint(A.CVar("i")),)), A.DConst(2.0)),
        A.DConst(-1)))
    assert arrive == A.Arrive("cuda_in_order", 1, (A.ZRead("z", (A.WPoint(
        A.CBin("%", A.CVar("i"), A.CInt(2))),)),))
    assert call.args == (A.DRead("X", (A.WInterval(A.CInt(0), A.CVar("N")),)),
                         A.CBin("+", A.CVar("i"), A.CInt(1)), A.DConst(2.5))
    assert call.barrier == A.ZRead("z", (A.WPoint(A.CInt(0)),))


def test_units_memories_and_launch() -> None:
    p = parse_proc("""
proc p(X: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(clusterDim=2, warp_config=[CudaWarpConfig("a", 1, 40, 0), CudaWarpConfig("b", 2)]):
        for t in cuda_tasks(0, 1):
            D: f32[2, 64, 256] @ Sm90_RmemMatrixD(64, 256)
            for w in cuda_threads(0, 2, unit=4 * cuda_threads_strided(2, 8)):
                with CudaWarps(0, 1, name="b"):
                    Fence(cuda_in_order, cuda_in_order)
""")
    dev = p.body[0]
    assert dev.block_dim is None and dev.cluster_dim == 2
    assert dev.warp_config == (A.WarpConfig("a", 1, 40, 0), A.WarpConfig("b", 2, 0, 0))
    alloc, loop = dev.body[0].body
    assert alloc.mem == A.MemExpr("Sm90_RmemMatrixD", (64, 256))
    assert loop.unit == A.UnitExpr("cuda_threads_strided", 4, (2, 8))
    assert loop.body[0] == A.CudaWarps(0, 1, "b", loop.body[0].body)


def test_spans_point_at_the_source() -> None:
    p = parse_proc("proc p(X: f32[4] @ DRAM):\n    X[1] = 2.0\n", "f.gpuir")
    s = p.body[0]
    assert (s.span.file, s.span.line, s.span.column) == ("f.gpuir", 2, 5)


@pytest.mark.parametrize("src,message", [
    ("proc p(X: f32[4] @ DRAM):\n    X[0] = Y[0]\n", "2:12: unknown name: Y"),
    ("proc p(N: size, X: f32[4] @ DRAM):\n    X[0] = N\n", "bad name: N is a control"),
    ("proc p(X: f32[4] @ DRAM):\n    for X in seq(0, 4):\n        Fence(a, b)\n",
     "shadowing: X"),
    ("proc p(X: f32[4] @ DRAM):\n    for seq in seq(0, 4):\n        Fence(a, b)\n",
     "reserved name: seq"),
    ("proc p(X: q32[4] @ DRAM):\n    Fence(a, b)\n", "unknown type: q32"),
    ("proc p(X: f32[4] @ DRAM):\n    for i in cuda_threads(0, 4):\n        Fence(a, b)\n",
     "cuda_threads needs unit"),
    ("proc p(X: f32[4] @ DRAM):\n    X[0:2] = 1.0\n", "bad write"),
    ("proc p(X: f32[4] @ DRAM):\n    Arrive(tl, 1)\n", "bad Arrive"),
    ("proc p(X: f32[4] @ DRAM):\n  X[0] = 1.0\n   X[1] = 1.0\n", "indentation"),
    ("proc p(X: f32[4] @ DRAM):\n    X[0] = 1.0 +\n", "syntax error"),
    ("proc p(X: f32[4] @ DRAM):\n    with CudaDeviceFunction(blockDim=32, warp_config=["
     "CudaWarpConfig(\"a\", 1)]):\n        Fence(a, b)\n", "exactly one of blockDim"),
    ("proc p():\n    Fence(a, b)\nproc p():\n    Fence(a, b)\n", "duplicate procedure"),
])
def test_bad_input_is_one_line_with_position(src: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_module(src, "bad.gpuir")
    text = err.value.one_line()
    assert message in text, text
    assert text.startswith("bad.gpuir:") and "\n" not in text


def test_integer_literal_arguments_are_control() -> None:
    p = parse_proc("proc p(X: f32[4] @ DRAM):\n    g(X, 3, -2.0)\n")
    assert p.body[0].args == (A.DRead("X"), A.CInt(3), A.DConst(-2.0))
