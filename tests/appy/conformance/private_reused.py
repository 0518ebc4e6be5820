# Flow-sensitive Legal-Private (Section 3.3; issue 17): `t` defined before the region
# is assigned again by each worker before any read, so only the worker's definition
# reaches its reads; and `s`, private to the first region, is a new variable in the
# second (assigned before read), the shape of gemver and covariance in NPBench.
# inputs: A=float32[8] B=float32[8] N=8
# expect: legal
def k(A, B, N):
    t = 0.0
    #pragma parallel for
    for i in range(N):
        t = A[i] * 2.0
        A[i] = t
    #pragma parallel for
    for i in range(N):
        s = A[i] + 1.0
        B[i] = s
    #pragma parallel for
    for i in range(N):
        s = B[i] * 0.5
        A[i] = s
