# A tensor property the paper does not define.
# expect: bad-input unknown directive
def k(A, N):
    #pragma :N=>vectorize
    A[:N] = 1.0
