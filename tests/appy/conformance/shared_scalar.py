# A non-array variable written inside and outside a parallel region (Section 3.3).
# inputs: A=float32[8] N=8
# expect: illegal Legal-Private
def k(A, N):
    t = 0.0
    #pragma parallel for
    for i in range(N):
        t = A[i] * 2.0
        A[i] = t
