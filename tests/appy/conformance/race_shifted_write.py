# Workers i and i+1 both touch C[i+1]: a race the paper leaves to the programmer.
# inputs: A=float32[64] C=float32[65] N=64
# expect: illegal Legal-Disjoint
def k(A, C, N):
    #pragma parallel for
    for i in range(N):
        C[i + 1] = C[i] + A[i]
