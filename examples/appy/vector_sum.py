# APPy, seed 003 Listing 5 (vector_sum): the parallel reduction idiom, an atomic update
# of an array of size 1. appyc 0.2.0 miscompiles it (results/appy/issue7/findings.md; cause atomic-linked-to-loop).
# inputs: A=float32[1000] s=float32[1] N=1000
# expect: legal
import appy


@appy.jit
def vector_sum(A, s, N):
    #pragma parallel for simd
    for i in range(N):
        #pragma atomic
        s[0] += A[i]
