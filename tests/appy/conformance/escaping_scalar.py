# A worker-private scalar read after the parallel loop: whose value would it be?
# inputs: A=float32[8] B=float32[1] N=8
# expect: illegal Legal-Private
def k(A, B, N):
    #pragma parallel for
    for i in range(N):
        t = A[i]
    B[0] = t
