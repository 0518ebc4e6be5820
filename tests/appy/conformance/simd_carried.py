# A loop-carried dependence inside one simd chunk (lanes j-1 and j).
# inputs: A=float32[16] N=16
# expect: illegal Legal-SimdLanes
def k(A, N):
    #pragma simd
    for j in range(1, N):
        A[j] = A[j - 1] + 1.0
