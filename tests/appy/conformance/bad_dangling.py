# A directive followed by no loop or assignment.
# expect: bad-input dangling pragma
def k(A, N):
    for i in range(N):
        A[i] = 0.0
    #pragma parallel for
