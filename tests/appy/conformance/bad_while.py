# Only for-range loops, assignments and ifs are APPy statements.
# expect: bad-input unsupported syntax
def k(A, N):
    while N > 0:
        N = N - 1
