# inputs: C=float32[4,4] A=float32[4,4] B=float32[4,4] X=float32[4,4]

@task("main", Inner, reads=["A", "B"], writes=["C", "X"])
def gemm_top(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32],
             X: tensor[2, f32]):
    W = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Ap = partition_by_blocks(A, (M, W))
    Bp = partition_by_blocks(B, (W, N))
    Cacc: tensor[2, f32] = make_tensor(M, N)
    launch("clear", Cacc)
    for k in srange(cdiv(K, W)):
        launch("gemm", Cacc, Ap[0, k], Bp[k, 0])
    launch("copy", Cacc, C)
    launch("copy", A, X)


@task("clear", Inner, writes=["C"])
def clear_rows(C: tensor[2, f32]):
    T = tunable(int)
    Cp = partition_by_blocks(C, (C.shape[0] // T, C.shape[1]))
    for i in prange(T):
        launch("clear", Cp[i, 0])


@task("clear", Leaf, writes=["C"])
def clear_leaf(C: tensor[2, f32]):
    clear(C)


@task("gemm", Inner, reads=["A", "B", "C"], writes=["C"])
def gemm_rows(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32]):
    T = tunable(int)
    Cp = partition_by_blocks(C, (C.shape[0] // T, C.shape[1]))
    Ap = partition_by_blocks(A, (A.shape[0] // T, A.shape[1]))
    for i in prange(T):
        launch("gemm", Cp[i, 0], Ap[i, 0], B)


@task("gemm", Leaf, reads=["A", "B", "C"], writes=["C"])
def gemm_leaf(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32]):
    mma(C, A, B)


@task("copy", Inner, reads=["S"], writes=["D"])
def copy_rows(S: tensor[2, f32], D: tensor[2, f32]):
    T = tunable(int)
    Sp = partition_by_blocks(S, (S.shape[0] // T, S.shape[1]))
    Dp = partition_by_blocks(D, (D.shape[0] // T, D.shape[1]))
    for i in prange(T):
        launch("copy", Sp[i, 0], Dp[i, 0])


@task("copy", Leaf, reads=["S"], writes=["D"])
def copy_leaf(S: tensor[2, f32], D: tensor[2, f32]):
    copy(S, D)


MAPPING = [
    TaskMapping(instance="gemm_top", variant="gemm_top", proc=BLOCK, mems=[GLOBAL, GLOBAL, GLOBAL, GLOBAL], tunables={"W": 1}, entrypoint=True, calls=["clear_leaf", "gemm_leaf", "copy_leaf"], pipeline=2),
    TaskMapping(instance="clear_leaf", variant="clear_leaf", proc=BLOCK, mems=[SHARED]),
    TaskMapping(instance="gemm_leaf", variant="gemm_leaf", proc=BLOCK, mems=[SHARED, SHARED, SHARED]),
    TaskMapping(instance="copy_leaf", variant="copy_leaf", proc=BLOCK, mems=[SHARED, SHARED]),
]
