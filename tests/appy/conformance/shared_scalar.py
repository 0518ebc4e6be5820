# A non-array variable written inside a parallel region and read there before the
# worker's own write: the outside definition and another worker's both reach the read
# (Section 3.3, "multiple reaching definitions from both inside and outside").
# inputs: A=float32[8] N=8
# expect: illegal Legal-Private
def k(A, N):
    t = 0.0
    #pragma parallel for
    for i in range(N):
        A[i] = A[i] + t
        t = A[i] * 2.0
