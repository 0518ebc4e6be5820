# `return` inside a loop: a worker cannot end the host function (Legal-Return).
# inputs: A=float32[8] N=8
# expect: illegal Legal-Return
def k(A, N):
    for i in range(N):
        A[i] = 1.0
        return
