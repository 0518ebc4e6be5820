# le(C) must be a positive power of two.
# expect: bad-input malformed directive
def k(A, N):
    #pragma :N=>le(12)
    A[:N] = 1.0
