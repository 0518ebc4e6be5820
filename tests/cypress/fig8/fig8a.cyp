"""Seed 001, Fig. 8a: gemm_block and clear_inner, lowered by the dependence analysis
in Fig. 8b. As Sec. 4.2.1 says (l.563), this version "does not target the warpgroup
level": blocks launch warps directly. RECONSTRUCTION: the gemm and copy trees Fig. 8b
elides (l.24, l.28 there) are written like the clear tree; gemm_block is the
entrypoint so that the IR starts where Fig. 8b does.
"""
# inputs: C=float32[64,256] A=float32[64,128] B=float32[128,256]


@task("gemm", Inner, reads=["A", "B"], writes=["C"])
def gemm_block(C: tensor[2, f16], A: tensor[2, f16], B: tensor[2, f16]):
    W = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    # Break A and B into tiles of width W.
    Ap = partition_by_blocks(A, (M, W))
    Bp = partition_by_blocks(B, (W, N))
    Cacc: tensor[2, f16] = make_tensor(M, N)
    launch("clear", Cacc)
    for k in srange(cdiv(K, W)):
        launch("gemm", Cacc, Ap[0, k], Bp[k, 0])
    launch("copy", Cacc, C)


@task("clear", Inner, writes=["C"])
def clear_inner(C: tensor[2, f16]):
    PIECES = tunable(int)
    PROC = tunable(processor)
    Cp = partition_by_mma(C, WGMMA_SM90_64x256x16(), PROC, "C")
    for i in prange(PIECES):
        launch("clear", Cp[i])


@task("clear", Leaf, writes=["C"])
def clear_thread(C: tensor[2, f16]):
    clear(C)


@task("gemm", Inner, reads=["A", "B", "C"], writes=["C"])
def gemm_inner(C: tensor[2, f16], A: tensor[2, f16], B: tensor[2, f16]):
    PIECES, PROC = tunable(int), tunable(processor)
    Cp = partition_by_mma(C, WGMMA_SM90_64x256x16(), PROC, "C")
    Ap = partition_by_mma(A, WGMMA_SM90_64x256x16(), PROC, "A")
    Bp = partition_by_mma(B, WGMMA_SM90_64x256x16(), PROC, "B")
    for i in prange(PIECES):
        launch("gemm", Cp[i], Ap[i], Bp[i])


@task("gemm", Leaf, reads=["A", "B", "C"], writes=["C"])
def gemm_thread(C: tensor[2, f16], A: tensor[2, f16], B: tensor[2, f16]):
    mma(C, A, B)


@task("copy", Inner, reads=["S"], writes=["D"])
def copy_inner(S: tensor[2, f16], D: tensor[2, f16]):
    PIECES, PROC = tunable(int), tunable(processor)
    Sp = partition_by_mma(S, WGMMA_SM90_64x256x16(), PROC, "C")
    Dp = partition_by_mma(D, WGMMA_SM90_64x256x16(), PROC, "C")
    for i in prange(PIECES):
        launch("copy", Sp[i], Dp[i])


@task("copy", Leaf, reads=["S"], writes=["D"])
def copy_thread(S: tensor[2, f16], D: tensor[2, f16]):
    copy(S, D)


MAPPING = [
    TaskMapping(instance="gemm_block", variant="gemm_block", proc=BLOCK,
                mems=[GLOBAL, GLOBAL, GLOBAL], tunables={"W": 64}, entrypoint=True,
                calls=["clear_block", "gemm_tile", "copy_block"]),
    TaskMapping(instance="clear_block", variant="clear_inner", proc=BLOCK, mems=[NONE],
                tunables={"PIECES": 4, "PROC": WARP}, calls=["clear_warp"]),
    TaskMapping(instance="clear_warp", variant="clear_inner", proc=WARP, mems=[NONE],
                tunables={"PIECES": 32, "PROC": THREAD}, calls=["clear_thread"]),
    TaskMapping(instance="clear_thread", variant="clear_thread", proc=THREAD,
                mems=[REGISTER]),
    TaskMapping(instance="gemm_tile", variant="gemm_inner", proc=BLOCK,
                mems=[NONE, SHARED, SHARED], tunables={"PIECES": 4, "PROC": WARP},
                calls=["gemm_warp"]),
    TaskMapping(instance="gemm_warp", variant="gemm_inner", proc=WARP,
                mems=[NONE, SHARED, SHARED], tunables={"PIECES": 32, "PROC": THREAD},
                calls=["gemm_thread"]),
    TaskMapping(instance="gemm_thread", variant="gemm_thread", proc=THREAD,
                mems=[REGISTER, SHARED, SHARED]),
    TaskMapping(instance="copy_block", variant="copy_inner", proc=BLOCK,
                mems=[NONE, GLOBAL], tunables={"PIECES": 4, "PROC": WARP},
                calls=["copy_warp"]),
    TaskMapping(instance="copy_warp", variant="copy_inner", proc=WARP,
                mems=[NONE, GLOBAL], tunables={"PIECES": 32, "PROC": THREAD},
                calls=["copy_thread"]),
    TaskMapping(instance="copy_thread", variant="copy_thread", proc=THREAD,
                mems=[REGISTER, GLOBAL]),
]
