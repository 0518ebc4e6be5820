# A parallel loop whose trip count is read from memory: no dynamic parallelism (3.1).
# inputs: A=int32[4] B=float32[8]
# expect: illegal Legal-Range
def k(A, B):
    #pragma parallel for
    for i in range(A[0]):
        B[i] = 1.0
