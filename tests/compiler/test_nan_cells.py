"""The compiled-vs-reference comparators of Bundl and GPU IR: every NaN equals every
NaN, signed zeros differ (errata L13). A NaN the GPU makes (0x7fffffff) is not the one
x86 makes (0xffc00000) for the same operation, and neither is the program's meaning."""

import numpy as np
from gpusem.calculus.bundl.parser import parse_program
from gpusem.compiler.bundl_cuda.launch import first_difference as bundl_difference
from gpusem.compiler.gpuir_cuda.run import first_difference as gpuir_difference

X86_NAN, GPU_NAN = 0xFFC00000, 0x7FFFFFFF


def floats(*words: int) -> np.ndarray:
    return np.array(words, dtype=np.uint32).view(np.float32)


def test_numpy_makes_the_other_nan_than_the_gpu():
    with np.errstate(all="ignore"):
        made = np.float32(0.0) / np.float32(0.0)
    assert int(np.float32(made).view(np.uint32)) == X86_NAN


def test_bundl_cells_nan_of_either_sign_agree_and_signed_zeros_differ():
    prog = parse_program("machine blocks = 1, threads = 1;\nglobal outf : float[3];\nmain { }\n",
                         "nan.bundl")
    want = {"outf": [float(v) for v in floats(X86_NAN, 0x80000000, 0x3FC00000)]}
    same = {"outf": [float(v) for v in floats(GPU_NAN, 0x80000000, 0x3FC00000)]}
    assert bundl_difference(prog, want, same) is None
    zero = {"outf": [float(v) for v in floats(GPU_NAN, 0x00000000, 0x3FC00000)]}
    assert bundl_difference(prog, want, zero)[:2] == ("outf", 1)
    number = {"outf": [float(v) for v in floats(0x3F800000, 0x80000000, 0x3FC00000)]}
    assert bundl_difference(prog, want, number)[:2] == ("outf", 0)


def test_gpuir_cells_nan_of_either_sign_agree_and_signed_zeros_differ():
    want = {"C": floats(X86_NAN, 0x80000000, 0x3FC00000).reshape(3, 1)}
    assert gpuir_difference(want, {"C": floats(GPU_NAN, 0x80000000, 0x3FC00000)}) \
        is None
    assert gpuir_difference(want, {"C": floats(GPU_NAN, 0, 0x3FC00000)})[:2] == \
        ("C", (1, 0))
    ints = {"n": np.array([1, 2], dtype=np.int32)}
    assert gpuir_difference(ints, {"n": np.array([1, 3], dtype=np.int32)})[:2] == \
        ("n", (1,))
