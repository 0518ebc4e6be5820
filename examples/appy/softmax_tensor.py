# APPy, seed 003 Listing 6 (softmax_tensor_oriented): tensor expressions in a worker.
# inputs: a=float32[4,100] b=float32[4,100] M=4 N=100
# expect: legal
import appy
from numpy import exp


@appy.jit(auto_simd=True)
def softmax_tensor_oriented(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = max(a[i, :N])
        s = sum(exp(a[i, :N] - m))
        b[i, :N] = exp(a[i, :N] - m) / s
