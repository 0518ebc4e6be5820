"""A single-block GEMM for the first lowering of warp-specialised Cypress IR to GPU IR
(compiler/cypress_cuda/to_gpuir.py): the fuzz target's GEMM (fuzz/cypress/strategies.py)
without its copy X = A, one thread level (a row each), and Fig. 5b's schedule (warp
specialisation, a 3-deep pipeline) over 4 K tiles."""
# inputs: C=float32[16,8] A=float32[16,16] B=float32[16,8]

@task("main", Inner, reads=["A", "B"], writes=["C"])
def gemm_top(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32]):
    W = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Ap = partition_by_blocks(A, (M, W))
    Bp = partition_by_blocks(B, (W, N))
    Cacc: tensor[2, f32] = make_tensor(M, N)
    launch("clear", Cacc)
    for k in srange(cdiv(K, W)):
        launch("gemm", Cacc, Ap[0, k], Bp[k, 0])
    launch("copy", Cacc, C)


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
    TaskMapping(instance="gemm_top", variant="gemm_top", proc=BLOCK, mems=[GLOBAL, GLOBAL, GLOBAL], tunables={"W": 4}, entrypoint=True, calls=["clear_0", "gemm_0", "copy_0"], warpspecialize=True, pipeline=3),
    TaskMapping(instance="clear_0", variant="clear_rows", proc=BLOCK, mems=[NONE], tunables={"T": 16}, calls=["clear_leaf"]),
    TaskMapping(instance="gemm_0", variant="gemm_rows", proc=BLOCK, mems=[NONE, SHARED, SHARED], tunables={"T": 16}, calls=["gemm_leaf"]),
    TaskMapping(instance="copy_0", variant="copy_rows", proc=BLOCK, mems=[NONE, GLOBAL], tunables={"T": 16}, calls=["copy_leaf"]),
    TaskMapping(instance="clear_leaf", variant="clear_leaf", proc=THREAD, mems=[REGISTER]),
    TaskMapping(instance="gemm_leaf", variant="gemm_leaf", proc=THREAD, mems=[REGISTER, SHARED, SHARED]),
    TaskMapping(instance="copy_leaf", variant="copy_leaf", proc=THREAD, mems=[REGISTER, GLOBAL]),
]
