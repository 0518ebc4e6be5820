# The reduction clause form: a scalar shared through reduction(+:acc).
# inputs: A=int32[100] S=int32[1] N=100
# expect: legal
def k(A, S, N):
    acc = 0
    #pragma parallel for reduction(+:acc)
    for i in range(N):
        acc += A[i]
    S[0] = acc
