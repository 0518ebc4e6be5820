"""The SGEMM variants of the issue-4 speed benchmark (`harness.py` measures them):
each label names the semantics (`strict`: the compiler's default and the oracle's;
`fast_fma`: opt-in contraction; `fma`: Bundl's explicit fma under strict options) and
the changes past the Prism paper's Appendix B.2 variant 3 (double buffering `_db`,
register prefetch `_pf`, bank-conflict-free column runs `_split`, 64 x 128 tiles
`_bm64`, 16-byte aligned globals `_al`, BK = 16 `_bk16`, a k-major A tile `_ka`, zigzag
update order `_zz`, `__launch_bounds__` `_lb2`), with what each measured on an H100.
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.compiler.bundl_cuda.bench import programs as P
from gpusem.compiler.bundl_cuda.bench.sgemm import SgemmSize
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions

# (tile sizes, compile options, double buffering) or (..., register prefetch)
Variant = (tuple[SgemmSize, CompileOptions, bool]
           | tuple[SgemmSize, CompileOptions, bool, bool])

# label -> (tile sizes, compile options, double buffering[, register prefetch]).
# Labels start with the semantics: `strict` (the compiler's default, the oracle's) or
# `fast_fma` (opt-in contraction). Without `_db` / `_pf` the program is the paper's
# variant 3 as written.
LB2 = CompileOptions(min_blocks_per_sm=2)
LB4 = CompileOptions(min_blocks_per_sm=4)
FMA, FMA_LB2, FMA_LB4 = (replace(o, fast_fma=True) for o in (CompileOptions(), LB2, LB4))
AL2_U16 = replace(LB2, aligned_globals=True, unroll_max_trips=16)
SGEMM_VARIANTS: dict[str, Variant] = {
    # The paper's variant 3 as written (BK = 8, one As/Bs pair, two barriers per k-tile).
    "strict": (P.SGEMM_GPU, CompileOptions(), False),
    # Register prefetch (programs._prefetch_loop): the next k-tile's loads are issued
    # before the staging barrier and in flight during the inner product.
    # __launch_bounds__(256, 2) (LB2) keeps two blocks (16 warps) per SM: unbounded,
    # ptxas takes 154-168 registers (one block per SM).
    "strict_pf": (P.SGEMM_GPU, LB2, False, True),
    # split_n: bank-conflict-free Bs reads (programs.SgemmSize.split_n)
    "strict_pf_split": (P.SGEMM_GPU_SPLIT, LB2, False, True),
    "strict_pf_db_split": (P.SGEMM_GPU_SPLIT, LB2, True, True),
    # 64 x 128 tiles, 128 threads: four blocks per SM (LB4)
    "strict_pf_db_bm64": (P.SGEMM_GPU_BM64, LB4, True, True),
    "strict_pf_db_bm64_split": (P.SGEMM_GPU_BM64_SPLIT, LB4, True, True),
    # 16-byte aligned globals (emit._assume_aligned): 128-bit C loads and stores
    "strict_pf_split_al": (P.SGEMM_GPU_SPLIT, replace(LB2, aligned_globals=True),
                           False, True),
    "strict_pf_db_bm64_split_al": (P.SGEMM_GPU_BM64_SPLIT,
                                   replace(LB4, aligned_globals=True), True, True),
    # Unrolled, the double-buffered kernel needs ~168 registers (one block per SM).
    "strict_db": (P.SGEMM_GPU, CompileOptions(unroll_hints=False), True),
    "fast_fma": (P.SGEMM_GPU, FMA, False),
    # unbounded, ptxas gives the contracted kernel 168 registers (one block per SM)
    "fast_fma_lb2": (P.SGEMM_GPU, FMA_LB2, False),
    "fast_fma_pf_split": (P.SGEMM_GPU_SPLIT, FMA_LB2, False, True),
    "fast_fma_pf_db_split": (P.SGEMM_GPU_SPLIT, FMA_LB2, True, True),
    "fast_fma_pf_db_bm64_split": (P.SGEMM_GPU_BM64_SPLIT, FMA_LB4, True, True),
    # The best kernels of each semantics with the 128-bit C epilogue (`_al`); H100
    # (results/bundl/speed_h100.json, interleaved rounds): strict 0.4993x,
    # fast_fma 0.668x.
    "strict_pf_db_split_al": (P.SGEMM_GPU_SPLIT, replace(LB2, aligned_globals=True),
                              True, True),
    "fast_fma_pf_db_split_al": (P.SGEMM_GPU_SPLIT, replace(FMA_LB2, aligned_globals=True),
                                True, True),
    # Candidates against the 0.4985x of strict_pf_split_al; measured on the H100
    # (results/bundl/speed_h100.json): none is faster (bk16 0.437x, db_bk16 0.457x,
    # ka 0.498x, bk16_ka 0.484x, db_bk16_ka 0.426x, bm64 0.483x): barriers are not
    # the limit. SASS of
    # its k-loop (nvcc 13, sm_90a): per 1024 FMUL+FADD, 32 LDS.128, 8 LDG, 2 STS.128,
    # 2 BAR, ~11 integer: 95% of issue slots are math, no spills; the candidates cut
    # barriers per FLOP (BK = 16: one per 1024 math, 0.5 double-buffered; the 16-trip
    # dot loop unrolled by unroll_max_trips=16) at the price of a few spills
    # (16 prefetch registers under the 128-register cap of 2 blocks per SM),
    "strict_pf_bk16_split_al": (P.SGEMM_GPU_BK16_SPLIT, AL2_U16, False, True),
    "strict_pf_db_bk16_split_al": (P.SGEMM_GPU_BK16_SPLIT, AL2_U16, True, True),
    # ... and with As k-major (SgemmSize.kmajor_a), which keeps 8 A values live per
    # k, not 32: spills 104 -> 32 bytes (BK = 16), 76 -> 64 (double-buffered).
    "strict_pf_ka_split_al": (P.SGEMM_GPU_KA_SPLIT, AL2_U16, False, True),
    "strict_pf_bk16_ka_split_al": (P.SGEMM_GPU_BK16_KA_SPLIT, AL2_U16, False, True),
    "strict_pf_db_bk16_ka_split_al": (P.SGEMM_GPU_BK16_KA_SPLIT, AL2_U16, True, True),
    # 64 x 128 tiles, register prefetch without double buffering, 4 blocks per SM.
    "strict_pf_bm64_split_al": (P.SGEMM_GPU_BM64_SPLIT, replace(LB4, aligned_globals=True),
                                False, True),
    # Against strict_pf_db_split_al's 0.4993x (H100, 110 interleaved rounds), which
    # spills in its k-loop (4 STL + 2 LDL per 2048 FMUL/FADD at 128 registers) and has
    # 17% of FMUL/FADDs with two same-parity source registers and no .reuse. k-major As
    # double-buffered spills nothing; the zigzag update order (SgemmSize.zigzag) cuts
    # the same-parity no-reuse share (k-loop SASS, nvcc 13 sm_90a): pf_zz 9.3%,
    # pf_ka_zz 8.2%, pf_db_ka 19.1%, pf_db_ka_zz 15.5% (strict_pf_split_al 18.3%).
    # Measured on the H100 (results/bundl/speed_zigzag_h100.json): pf_ka_zz 0.5121x
    # cuBLAS, pf_db_ka_zz 0.5084x, pf_db_ka 0.5036x, pf_zz 0.4939x (pf_db 0.4994x
    # alongside).
    "strict_pf_zz_split_al": (P.SGEMM_GPU_ZZ_SPLIT, replace(LB2, aligned_globals=True),
                              False, True),
    "strict_pf_ka_zz_split_al": (P.SGEMM_GPU_KA_ZZ_SPLIT, replace(LB2, aligned_globals=True),
                                 False, True),
    "strict_pf_db_ka_split_al": (P.SGEMM_GPU_KA_SPLIT, replace(LB2, aligned_globals=True),
                                 True, True),
    "strict_pf_db_ka_zz_split_al": (P.SGEMM_GPU_KA_ZZ_SPLIT,
                                    replace(LB2, aligned_globals=True), True, True),
    # The explicit fma (SgemmSize.fma): the fast_fma kernels' FFMA dot product under
    # strict CompileOptions() (no contraction; fma only where the program writes it),
    # so the oracle still checks them bit for bit; the epilogue stays mul + add.
    "fma_pf_split": (replace(P.SGEMM_GPU_SPLIT, fma=True), LB2, False, True),
    "fma_pf_db_split": (replace(P.SGEMM_GPU_SPLIT, fma=True), LB2, True, True),
    "fma_pf_db_split_al": (replace(P.SGEMM_GPU_SPLIT, fma=True),
                           replace(LB2, aligned_globals=True), True, True),
    "fma_pf_split_al": (replace(P.SGEMM_GPU_SPLIT, fma=True),
                        replace(LB2, aligned_globals=True), False, True),
}
