# An unknown directive is an error, never ignored.
# expect: bad-input unknown directive
def k(A, N):
    #pragma parallel four
    for i in range(N):
        A[i] = 0.0
