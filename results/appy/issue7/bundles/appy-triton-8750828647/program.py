def kernel(A0, S1, N):
    #pragma parallel for
    for i in range(N):
        #pragma atomic
        S1[0] += A0[i]
