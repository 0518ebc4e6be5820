# Strips that overlap (step 64, width 128): neighbouring workers write the same cells.
# inputs: A=float32[300] C=float32[300] N=300
# expect: illegal Legal-Disjoint
import appy


def k(A, C, N):
    #pragma parallel for
    for i in range(0, N, 64):
        v = appy.vidx(i, 128, N)
        C[v] = A[v]
