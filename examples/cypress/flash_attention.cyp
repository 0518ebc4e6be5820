"""RECONSTRUCTION of seed 001's FlashAttention 2 (Sec. 5.3, l.727-735; prose only):
O = softmax(Q K^T) V, one head, the KV sequence in tiles of T with the online softmax
(running row maximum m, running row sum l, the accumulator rescaled by exp(m - m_new)).

Where the leaf library stops: every step has an exact library meaning except `exp`
(float64's, rounded once: the result is compared with NumPy within rounding, not bit
for bit); the 1/sqrt(d) scale and causal masking have no library operation (no
scalar multiply, no index-dependent mask), so they are left out; the leaves are
block-level (the Tensor Core decomposition of the two GEMMs is gemm.cyp's, and
`mma_nt`, S += Q K^T, needs a transposed-B layout that partition_by_mma does not
define); the first KV tile is peeled because the library has no -inf to start m from.
FlashAttention 3's intra-warpgroup overlap (l.733) is a schedule, not a meaning: its
sequential reading is this one.
"""
# inputs: O=float32[128,64] Q=float32[128,64] K=float32[256,64] V=float32[256,64]


@task("attn", Inner, reads=["Q", "K", "V"], writes=["O"])
def attn_host(O: tensor[2, f32], Q: tensor[2, f32], K: tensor[2, f32],
              V: tensor[2, f32]):
    U = tunable(int)
    M, D = Q.shape[0], Q.shape[1]
    Op = partition_by_blocks(O, (U, D))
    Qp = partition_by_blocks(Q, (U, D))
    for i in prange(cdiv(M, U)):
        launch("attn", Op[i, 0], Qp[i, 0], K, V)


@task("attn", Inner, reads=["Q", "K", "V"], writes=["O"])
def attn_block(O: tensor[2, f32], Q: tensor[2, f32], K: tensor[2, f32],
               V: tensor[2, f32]):
    T = tunable(int)
    M, D, N = Q.shape[0], Q.shape[1], K.shape[0]
    Kp = partition_by_blocks(K, (T, D))
    Vp = partition_by_blocks(V, (T, D))
    S: tensor[2, f32] = make_tensor(M, T)
    P: tensor[2, f32] = make_tensor(M, T)
    Oacc: tensor[2, f32] = make_tensor(M, D)
    m: tensor[1, f32] = make_tensor(M)
    mk: tensor[1, f32] = make_tensor(M)
    l: tensor[1, f32] = make_tensor(M)
    lk: tensor[1, f32] = make_tensor(M)
    alpha: tensor[1, f32] = make_tensor(M)
    # the first KV tile
    launch("clear", S)
    launch("gemm_nt", S, Q, Kp[0, 0])
    launch("row_max", m, S)
    launch("exp_sub", P, S, m)
    launch("row_sum", l, P)
    launch("clear", Oacc)
    launch("gemm", Oacc, P, Vp[0, 0])
    # the others, online
    for k in srange(cdiv(N, T) - 1):
        launch("clear", S)
        launch("gemm_nt", S, Q, Kp[k + 1, 0])
        launch("row_max", mk, S)
        launch("online_max", mk, m)
        launch("correction", alpha, m, mk)
        launch("exp_sub", P, S, mk)
        launch("row_sum", lk, P)
        launch("update_sum", l, alpha, lk)
        launch("rescale", Oacc, alpha)
        launch("gemm", Oacc, P, Vp[k + 1, 0])
        launch("copy1", mk, m)
    launch("normalize", O, Oacc, l)


@task("clear", Leaf, writes=["C"])
def clear_block(C: tensor[2, f32]):
    clear(C)


@task("gemm", Leaf, reads=["C", "A", "B"], writes=["C"])
def gemm_block(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32]):
    mma(C, A, B)


@task("gemm_nt", Leaf, reads=["C", "A", "B"], writes=["C"])
def gemm_nt_block(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32]):
    mma_nt(C, A, B)


@task("row_max", Leaf, reads=["X"], writes=["r"])
def row_max_block(r: tensor[1, f32], X: tensor[2, f32]):
    rowmax(r, X)


@task("row_sum", Leaf, reads=["X"], writes=["r"])
def row_sum_block(r: tensor[1, f32], X: tensor[2, f32]):
    rowsum(r, X)


@task("exp_sub", Leaf, reads=["P", "S", "m"], writes=["P"])
def exp_sub_block(P: tensor[2, f32], S: tensor[2, f32], m: tensor[1, f32]):
    sub(P, S, m)
    exp(P, P)


@task("online_max", Leaf, reads=["mk", "m"], writes=["mk"])
def online_max_block(mk: tensor[1, f32], m: tensor[1, f32]):
    maximum(mk, mk, m)


@task("correction", Leaf, reads=["alpha", "m", "mk"], writes=["alpha"])
def correction_block(alpha: tensor[1, f32], m: tensor[1, f32], mk: tensor[1, f32]):
    sub(alpha, m, mk)
    exp(alpha, alpha)


@task("update_sum", Leaf, reads=["l", "alpha", "lk"], writes=["l"])
def update_sum_block(l: tensor[1, f32], alpha: tensor[1, f32], lk: tensor[1, f32]):
    mul(l, l, alpha)
    add(l, l, lk)


@task("rescale", Leaf, reads=["O", "alpha"], writes=["O"])
def rescale_block(O: tensor[2, f32], alpha: tensor[1, f32]):
    mul(O, O, alpha)


@task("copy1", Leaf, reads=["S"], writes=["D"])
def copy1_block(S: tensor[1, f32], D: tensor[1, f32]):
    copy(S, D)


@task("normalize", Leaf, reads=["Oacc", "l"], writes=["O"])
def normalize_block(O: tensor[2, f32], Oacc: tensor[2, f32], l: tensor[1, f32]):
    div(O, Oacc, l)


MAPPING = [
    TaskMapping(instance="attn_host", variant="attn_host", proc=HOST,
                mems=[GLOBAL, GLOBAL, GLOBAL, GLOBAL], tunables={"U": 64},
                entrypoint=True, calls=["attn_block"]),
    TaskMapping(instance="attn_block", variant="attn_block", proc=BLOCK,
                mems=[GLOBAL, GLOBAL, GLOBAL, GLOBAL], tunables={"T": 64},
                calls=["clear", "gemm", "gemm_nt", "row_max", "row_sum", "exp_sub",
                       "online_max", "correction", "update_sum", "rescale", "copy1",
                       "normalize"],
                warpspecialize=True),
    TaskMapping(instance="clear", variant="clear_block", proc=BLOCK, mems=[SHARED]),
    TaskMapping(instance="gemm", variant="gemm_block", proc=BLOCK,
                mems=[SHARED, SHARED, SHARED]),
    TaskMapping(instance="gemm_nt", variant="gemm_nt_block", proc=BLOCK,
                mems=[SHARED, SHARED, SHARED]),
    TaskMapping(instance="row_max", variant="row_max_block", proc=BLOCK,
                mems=[SHARED, SHARED]),
    TaskMapping(instance="row_sum", variant="row_sum_block", proc=BLOCK,
                mems=[SHARED, SHARED]),
    TaskMapping(instance="exp_sub", variant="exp_sub_block", proc=BLOCK,
                mems=[SHARED, SHARED, SHARED]),
    TaskMapping(instance="online_max", variant="online_max_block", proc=BLOCK,
                mems=[SHARED, SHARED]),
    TaskMapping(instance="correction", variant="correction_block", proc=BLOCK,
                mems=[SHARED, SHARED, SHARED]),
    TaskMapping(instance="update_sum", variant="update_sum_block", proc=BLOCK,
                mems=[SHARED, SHARED, SHARED]),
    TaskMapping(instance="rescale", variant="rescale_block", proc=BLOCK,
                mems=[SHARED, SHARED]),
    TaskMapping(instance="copy1", variant="copy1_block", proc=BLOCK,
                mems=[SHARED, SHARED]),
    TaskMapping(instance="normalize", variant="normalize_block", proc=BLOCK,
                mems=[GLOBAL, SHARED, SHARED]),
]
