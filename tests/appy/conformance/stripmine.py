# Assembly-level APPy (Section 3.2): strips of MVL lanes through appy.vidx.
# inputs: A=float32[300] C=float32[300] S=float32[1] N=300
# expect: legal
import appy


def k(A, C, S, N):
    #pragma parallel for
    for i in range(0, N, appy.MVL):
        v = appy.vidx(i, appy.MVL, N)
        C[v] = A[v] * 2.0
        #pragma atomic
        S[0] += sum(A[v])
