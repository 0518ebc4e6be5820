# APPy, seed 003 Listing 6 (softmax_loop_oriented): simd reductions carried in scalars.
# inputs: a=float32[4,100] b=float32[4,100] M=4 N=100
# expect: legal
import appy
from numpy import exp, maximum


@appy.jit
def softmax_loop_oriented(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = maximum(m, a[i, j])

        s = 0.0
        #pragma simd
        for j in range(N):
            s += exp(a[i, j] - m)

        #pragma simd
        for j in range(N):
            b[i, j] = exp(a[i, j] - m) / s
