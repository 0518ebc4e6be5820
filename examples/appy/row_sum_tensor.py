# APPy, seed 003 Section 4.1-4.2: a row-wise summation with a reduce(sum) dimension.
# inputs: A=float32[5,300] y=float32[5] M=5 N=300
# expect: legal
import appy


@appy.jit
def row_sum(A, y, M, N):
    #pragma :M=>parallel :N=>reduce(sum)
    y[:M] = sum(A[:M, :N], axis=1)
