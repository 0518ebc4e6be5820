# APPy, seed 003 Listing 4 (spmv): a simd loop with dynamic bounds inside a worker.
# inputs: A_row=int32[5]:csr A_col=int32[8]:col4 A_val=float32[8] x=float32[4] y=float32[4] N=5
# expect: legal
import appy


@appy.jit
def spmv(A_row, A_col, A_val, x, y, N):
    #pragma parallel for
    for i in range(N - 1):
        y[i] = 0.0
        #pragma simd
        for j in range(A_row[i], A_row[1 + i]):
            col = A_col[j]
            y[i] += A_val[j] * x[col]
