# Listing 7 (gesummv): `mv` in a tensor statement with a reduction dimension, read as
# NumPy's matrix-vector product; `&`/`|` on comparisons read as Python's.
# inputs: A=float32[4,8] B=float32[4,8] x=float32[8] y=float32[4] tmp=float32[4] M=4 N=8
# expect: legal
def gesummv(A, B, x, y, tmp, M, N):
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = appy.mv(1.5 * A[:M, :N], x[:N])
    #pragma :M=>parallel :N=>reduction(sum:tmp)
    tmp[:M] = appy.mv(0.5 * B[:M, :N], x[:N])
    #pragma :M=>parallel
    y[:M] += tmp[:M]
    #pragma parallel for
    for i in range(M):
        if (y[i] > 0.0) & (tmp[i] < 1.0) | (i == 0):
            y[i] = appy.dot(A[i, :N], x[:N])
