# A dependence of distance 8 is legal for simd(8): lanes of one chunk never meet it.
# inputs: A=float32[40] N=40
# expect: legal
def k(A, N):
    #pragma simd(8)
    for j in range(8, N):
        A[j] = A[j - 8] + 1.0
