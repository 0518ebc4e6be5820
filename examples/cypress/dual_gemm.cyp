"""RECONSTRUCTION of seed 001's Dual-GEMM (Sec. 5.2, l.717: "computes A.B1 + A.B2 in
a single kernel"; prose only). One accumulator per block tile; each step of the
K loop launches two GEMMs of Fig. 5's tree into it, sharing the tile of A (the overlap
of the copies of B1 and B2 is the compiler's business, not the meaning's). Its
pipeline is 2 deep, not Fig. 5's 3: each GEMM launch brings its own A and B tiles
into shared memory (copy-in, l.551), 2 x 48 KiB per stage, and 3 stages exceed the
227 KiB of a block (rule Shared-Bound).
"""
# inputs: C=float32[128,512] A=float32[128,128] B1=float32[128,512] B2=float32[128,512]


@task("dual", Inner, reads=["A", "B1", "B2"], writes=["C"])
def dual_host(C: tensor[2, f16], A: tensor[2, f16], B1: tensor[2, f16],
              B2: tensor[2, f16]):
    U, V = tunable(int), tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Cp = partition_by_blocks(C, (U, V))
    Ap = partition_by_blocks(A, (U, K))
    B1p = partition_by_blocks(B1, (K, V))
    B2p = partition_by_blocks(B2, (K, V))
    for i, j in prange(cdiv(M, U), cdiv(N, V)):
        launch("dual", Cp[i, j], Ap[i, 0], B1p[0, j], B2p[0, j])


@task("dual", Inner, reads=["A", "B1", "B2"], writes=["C"])
def dual_block(C: tensor[2, f16], A: tensor[2, f16], B1: tensor[2, f16],
               B2: tensor[2, f16]):
    W = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Ap = partition_by_blocks(A, (M, W))
    B1p = partition_by_blocks(B1, (W, N))
    B2p = partition_by_blocks(B2, (W, N))
    Cacc: tensor[2, f16] = make_tensor(M, N)
    launch("clear", Cacc)
    for k in srange(cdiv(K, W)):
        launch("gemm", Cacc, Ap[0, k], B1p[k, 0])
        launch("gemm", Cacc, Ap[0, k], B2p[k, 0])
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
    TaskMapping(instance="dual_host", variant="dual_host", proc=HOST,
                mems=[GLOBAL, GLOBAL, GLOBAL, GLOBAL], tunables={"U": 128, "V": 256},
                entrypoint=True, calls=["dual_block"]),
    TaskMapping(instance="dual_block", variant="dual_block", proc=BLOCK,
                mems=[GLOBAL, GLOBAL, GLOBAL, GLOBAL], tunables={"W": 64},
                calls=["clear_tile", "gemm_tile", "copy_tile"],
                warpspecialize=True, pipeline=2),
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
