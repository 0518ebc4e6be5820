# appyc's data clauses and `return` (issue 17): `to(..)` arrays move to the device
# before the loop, `from(..)` ones back after it; the sequential reading ignores them.
# inputs: A=float32[8] C=float32[8] N=8
# expect: legal
def k(A, C, N):
    #pragma parallel for to(A,C) from(C)
    for i in range(N):
        C[i] = A[i] * 2.0 if A[i] > 0.0 else -A[i]
    return C
