# A worker reads a scalar another iteration assigned (no outside definition): the
# sequential reading carries it, the workers cannot (Legal-Private, flow-sensitive).
# inputs: A=float32[8] C=float32[8] N=8
# expect: illegal Legal-Private
def k(A, C, N):
    #pragma parallel for
    for i in range(N):
        if i > 0:
            C[i] = t
        t = A[i]
