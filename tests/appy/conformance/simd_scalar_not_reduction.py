# A scalar carried across simd lanes that is not a reduction.
# inputs: A=float32[8] B=float32[1] N=8
# expect: illegal Legal-SimdScalar
def k(A, B, N):
    x = 1.0
    #pragma simd
    for j in range(N):
        x = A[j] * x
    B[0] = x
