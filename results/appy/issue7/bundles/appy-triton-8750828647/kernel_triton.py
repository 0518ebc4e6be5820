import torch
import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language import debug_barrier


def init_to_zero(name):
    return lambda nargs: nargs[name].zero_()


@triton.jit
def _kernel0(N, __hoist_acc_0, A0):
    pass
    i = 0 + tl.program_id(0) * 1
    __hoist_acc_0 = __hoist_acc_0 + tl.load(A0 + (i + tl.arange(0, 1)))


def kernel(A0, S1, N):
    __hoist_acc_0 = S1[0]
    kernel_grid = lambda META: ((N - 0 + 1 - 1) // 1,)
    fn = _kernel0[kernel_grid](N, __hoist_acc_0, A0, num_warps=4)
    S1[0] = __hoist_acc_0
