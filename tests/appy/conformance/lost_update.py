# A sum into s[0] without '#pragma atomic': lost updates on a GPU.
# inputs: A=float32[64] s=float32[1] N=64
# expect: illegal Legal-Disjoint
def k(A, s, N):
    #pragma parallel for
    for i in range(N):
        s[0] += A[i]
