# APPy, seed 003 Listing 4 (vector_add): parallel for simd.
# inputs: A=float32[1000] B=float32[1000] C=float32[1000] N=1000
# expect: legal
import appy


@appy.jit
def vector_add(A, B, C, N):
    #pragma parallel for simd
    for i in range(N):
        C[i] = A[i] + B[i]
