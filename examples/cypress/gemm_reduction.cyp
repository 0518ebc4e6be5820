"""RECONSTRUCTION of seed 001's GEMM+Reduction (Sec. 5.2, l.719: "computes C = A.B
and y(i) = sum_k A(i,k) in a single kernel"; prose only). A block owns whole rows of C
(V = N), so no two blocks reduce into the same y(i); the reduction runs on threads
(one row of each A tile per thread), with its accumulator in registers (l.721), beside
Fig. 5's GEMM tree.
"""
# inputs: C=float32[256,256] y=float32[256] A=float32[256,128] B=float32[128,256]


@task("gemmred", Inner, reads=["A", "B"], writes=["C", "y"])
def gemmred_host(C: tensor[2, f16], y: tensor[1, f32], A: tensor[2, f16],
                 B: tensor[2, f16]):
    U = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Cp = partition_by_blocks(C, (U, N))
    yp = partition_by_blocks(y, (U,))
    Ap = partition_by_blocks(A, (U, K))
    for i in prange(cdiv(M, U)):
        launch("gemmred", Cp[i, 0], yp[i], Ap[i, 0], B)


@task("gemmred", Inner, reads=["A", "B"], writes=["C", "y"])
def gemmred_block(C: tensor[2, f16], y: tensor[1, f32], A: tensor[2, f16],
                  B: tensor[2, f16]):
    W = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Ap = partition_by_blocks(A, (M, W))
    Bp = partition_by_blocks(B, (W, N))
    Cacc: tensor[2, f16] = make_tensor(M, N)
    yacc: tensor[1, f32] = make_tensor(M)
    launch("clear", Cacc)
    launch("clear1", yacc)
    for k in srange(cdiv(K, W)):
        launch("gemm", Cacc, Ap[0, k], Bp[k, 0])
        launch("rowsum", yacc, Ap[0, k])
    launch("copy", Cacc, C)
    launch("copy1", yacc, y)


# The reduction on the SIMT threads (l.719): one row of the A tile per thread.
@task("rowsum", Inner, reads=["y", "A"], writes=["y"])
def rowsum_tile(y: tensor[1, f32], A: tensor[2, f16]):
    M, W = A.shape[0], A.shape[1]
    yp = partition_by_blocks(y, (1,))
    Ap = partition_by_blocks(A, (1, W))
    for t in prange(M):
        launch("rowsum", yp[t], Ap[t, 0])


@task("rowsum", Leaf, reads=["y", "A"], writes=["y"])
def rowsum_thread(y: tensor[1, f32], A: tensor[2, f16]):
    part: tensor[1, f32] = make_tensor(1)
    rowsum(part, A)
    add(y, y, part)


@task("clear1", Leaf, writes=["y"])
def clear1_block(y: tensor[1, f32]):
    clear(y)


@task("copy1", Leaf, reads=["S"], writes=["D"])
def copy1_block(S: tensor[1, f32], D: tensor[1, f32]):
    copy(S, D)


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
    TaskMapping(instance="gemmred_host", variant="gemmred_host", proc=HOST,
                mems=[GLOBAL, GLOBAL, GLOBAL, GLOBAL], tunables={"U": 128},
                entrypoint=True, calls=["gemmred_block"]),
    TaskMapping(instance="gemmred_block", variant="gemmred_block", proc=BLOCK,
                mems=[GLOBAL, GLOBAL, GLOBAL, GLOBAL], tunables={"W": 64},
                calls=["clear_tile", "gemm_tile", "copy_tile", "rowsum_tile",
                       "clear1", "copy1"],
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
    TaskMapping(instance="rowsum_tile", variant="rowsum_tile", proc=BLOCK,
                mems=[NONE, SHARED], calls=["rowsum_thread"]),
    TaskMapping(instance="rowsum_thread", variant="rowsum_thread", proc=THREAD,
                mems=[REGISTER, SHARED]),
    TaskMapping(instance="clear1", variant="clear1_block", proc=BLOCK,
                mems=[SHARED]),
    TaskMapping(instance="copy1", variant="copy1_block", proc=BLOCK,
                mems=[SHARED, GLOBAL]),
]
