# Python's negative indices (issue 17): A[-1] is the last cell, A[i - N] is A[i]; the
# sequential reading follows Python (Seq-Index), so a compiler must too.
# inputs: A=float32[8] C=float32[8] N=8
# expect: legal
def k(A, C, N):
    #pragma parallel for
    for i in range(N):
        C[i] = A[i - N] + A[-1]
