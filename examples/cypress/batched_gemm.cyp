"""RECONSTRUCTION of seed 001's Batched-GEMM (Sec. 5.2, l.715: "L independent GEMMs
are performed in a single pass"; prose only). The host variant tiles each of the L
matrices and launches the block-level GEMM tree of Fig. 5 (gemm.cyp) on each tile.
`None` in partition_by_blocks is our extension: one batch index per piece, dropped
from the piece's coordinates, so the 2-D GEMM tasks take the pieces unchanged.
"""
# inputs: C=float32[3,128,256] A=float32[3,128,64] B=float32[3,64,256]


@task("bgemm", Inner, reads=["A", "B"], writes=["C"])
def bgemm_host(C: tensor[3, f16], A: tensor[3, f16], B: tensor[3, f16]):
    U, V = tunable(int), tunable(int)
    L, M, N, K = C.shape[0], C.shape[1], C.shape[2], A.shape[2]
    Cp = partition_by_blocks(C, (None, U, V))
    Ap = partition_by_blocks(A, (None, U, K))
    Bp = partition_by_blocks(B, (None, K, V))
    for b, i, j in prange(L, cdiv(M, U), cdiv(N, V)):
        launch("gemm", Cp[b, i, j], Ap[b, i, 0], Bp[b, 0, j])


@task("gemm", Inner, reads=["A", "B"], writes=["C"])
def gemm_block(C: tensor[2, f16], A: tensor[2, f16], B: tensor[2, f16]):
    W = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Ap = partition_by_blocks(A, (M, W))
    Bp = partition_by_blocks(B, (W, N))
    Cacc: tensor[2, f16] = make_tensor(M, N)
    launch("clear", Cacc)
    for k in srange(cdiv(K, W)):
        launch("gemm", Cacc, Ap[0, k], Bp[k, 0])
    launch("copy", Cacc, C)


@task("gemm", Inner, reads=["A", "B", "C"], writes=["C"])
def gemm_tile(C: tensor[2, f16], A: tensor[2, f16], B: tensor[2, f16]):
    WGS = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Cp = partition_by_blocks(C, (M / WGS, N))
    Ap = partition_by_blocks(A, (M / WGS, K))
    for i in prange(WGS):
        launch("gemm", Cp[i, 0], Ap[i, 0], B)


@task("gemm", Inner, reads=["A", "B", "C"], writes=["C"])
def gemm_inner(C: tensor[2, f16], A: tensor[2, f16], B: tensor[2, f16]):
    PIECES, PROC = tunable(int), tunable(processor)
    Cp = partition_by_mma(C, WGMMA_64x256x16(), PROC, "C")
    Ap = partition_by_mma(A, WGMMA_64x256x16(), PROC, "A")
    Bp = partition_by_mma(B, WGMMA_64x256x16(), PROC, "B")
    for i in prange(PIECES):
        launch("gemm", Cp[i], Ap[i], Bp[i])


@task("gemm", Leaf, reads=["A", "B", "C"], writes=["C"])
def gemm_thread(C: tensor[2, f16], A: tensor[2, f16], B: tensor[2, f16]):
    mma(C, A, B)


# RECONSTRUCTION: the clear tree (Fig. 8a l.16-23, with a warpgroup level as gemm_tile).
@task("clear", Inner, writes=["C"])
def clear_tile(C: tensor[2, f16]):
    WGS = tunable(int)
    M, N = C.shape[0], C.shape[1]
    Cp = partition_by_blocks(C, (M / WGS, N))
    for i in prange(WGS):
        launch("clear", Cp[i, 0])


@task("clear", Inner, writes=["C"])
def clear_inner(C: tensor[2, f16]):
    PIECES = tunable(int)
    PROC = tunable(processor)
    Cp = partition_by_mma(C, WGMMA_64x256x16(), PROC, "C")
    for i in prange(PIECES):
        launch("clear", Cp[i])


@task("clear", Leaf, writes=["C"])
def clear_thread(C: tensor[2, f16]):
    clear(C)


# RECONSTRUCTION: the copy tree (registers -> global through the same partitions).
@task("copy", Inner, reads=["S"], writes=["D"])
def copy_tile(S: tensor[2, f16], D: tensor[2, f16]):
    WGS = tunable(int)
    M, N = S.shape[0], S.shape[1]
    Sp = partition_by_blocks(S, (M / WGS, N))
    Dp = partition_by_blocks(D, (M / WGS, N))
    for i in prange(WGS):
        launch("copy", Sp[i, 0], Dp[i, 0])


@task("copy", Inner, reads=["S"], writes=["D"])
def copy_inner(S: tensor[2, f16], D: tensor[2, f16]):
    PIECES, PROC = tunable(int), tunable(processor)
    Sp = partition_by_mma(S, WGMMA_64x256x16(), PROC, "C")
    Dp = partition_by_mma(D, WGMMA_64x256x16(), PROC, "C")
    for i in prange(PIECES):
        launch("copy", Sp[i], Dp[i])


@task("copy", Leaf, reads=["S"], writes=["D"])
def copy_thread(S: tensor[2, f16], D: tensor[2, f16]):
    copy(S, D)


MAPPING = [
    TaskMapping(instance="bgemm_host", variant="bgemm_host", proc=HOST,
                mems=[GLOBAL, GLOBAL, GLOBAL], tunables={"U": 128, "V": 256},
                entrypoint=True, calls=["gemm_block"]),
    TaskMapping(instance="gemm_block", variant="gemm_block", proc=BLOCK,
                mems=[GLOBAL, GLOBAL, GLOBAL], tunables={"W": 64},
                calls=["clear_tile", "gemm_tile", "copy_tile"],
                warpspecialize=True, pipeline=3),
    TaskMapping(instance="gemm_tile", variant="gemm_tile", proc=BLOCK,
                mems=[NONE, SHARED, SHARED], tunables={"WGS": 2},
                calls=["gemm_warpgroup"]),
    TaskMapping(instance="gemm_warpgroup", variant="gemm_inner", proc=WARPGROUP,
                mems=[NONE, SHARED, SHARED], tunables={"PIECES": 4, "PROC": WARP},
                calls=["gemm_warp"]),
    TaskMapping(instance="gemm_warp", variant="gemm_inner", proc=WARP,
                mems=[NONE, SHARED, SHARED], tunables={"PIECES": 32, "PROC": THREAD},
                calls=["gemm_thread"]),
    TaskMapping(instance="gemm_thread", variant="gemm_thread", proc=THREAD,
                mems=[REGISTER, SHARED, SHARED]),
    # RECONSTRUCTION: the elided mappings of the clear and copy trees (5b l.55-57).
    TaskMapping(instance="clear_tile", variant="clear_tile", proc=BLOCK,
                mems=[NONE], tunables={"WGS": 2}, calls=["clear_warpgroup"]),
    TaskMapping(instance="clear_warpgroup", variant="clear_inner", proc=WARPGROUP,
                mems=[NONE], tunables={"PIECES": 4, "PROC": WARP},
                calls=["clear_warp"]),
    TaskMapping(instance="clear_warp", variant="clear_inner", proc=WARP,
                mems=[NONE], tunables={"PIECES": 32, "PROC": THREAD},
                calls=["clear_thread"]),
    TaskMapping(instance="clear_thread", variant="clear_thread", proc=THREAD,
                mems=[REGISTER]),
    TaskMapping(instance="copy_tile", variant="copy_tile", proc=BLOCK,
                mems=[NONE, GLOBAL], tunables={"WGS": 2}, calls=["copy_warpgroup"]),
    TaskMapping(instance="copy_warpgroup", variant="copy_inner", proc=WARPGROUP,
                mems=[NONE, GLOBAL], tunables={"PIECES": 4, "PROC": WARP},
                calls=["copy_warp"]),
    TaskMapping(instance="copy_warp", variant="copy_inner", proc=WARP,
                mems=[NONE, GLOBAL], tunables={"PIECES": 32, "PROC": THREAD},
                calls=["copy_thread"]),
    TaskMapping(instance="copy_thread", variant="copy_thread", proc=THREAD,
                mems=[REGISTER, GLOBAL]),
]
