# A prefix sum: a loop-carried dependence made legal by one worker (3.1).
# inputs: P=int64[50] N=50
# expect: legal
def k(P, N):
    #pragma sequential for
    for i in range(1, N):
        P[i] = P[i] + P[i - 1]
