# An atomic update raced by a plain read of the same cell in another worker.
# inputs: A=float32[8] s=float32[1] C=float32[8] N=8
# expect: illegal Legal-Disjoint
def k(A, s, C, N):
    #pragma parallel for
    for i in range(N):
        #pragma atomic
        s[0] += A[i]
        C[i] = s[0]
