"""Pass `lower_instructions`: instruction calls (GInstr) -> CUDA, one rule per
instruction of the library (calculus/gpuir/instructions.py).

  cuda_copy_f32              element loop (synchronous ld/st)
  Sm80_cp_async_f32          cp.async.ca.shared.global of 4/8/16 bytes (gs_cp_async)
  Sm90_tma_load_2d_f32       one cp.async.bulk per tile row, completing on the mbarrier
                             (gs_bulk_copy_g2s; the Arrive carries the expect_tx)
  Sm90_tma_multicast_2d_f32  cp.async.bulk ... .multicast::cluster per row
                             (gs_bulk_copy_g2s_multicast)
  Sm90_tma_multicast_warps_2d_f32
                             the same, issued by one warp in each of ncta CTAs, each
                             its share of the rows (the paper's Hopper GEMM), issued
                             by one elected lane
  cuda_shfl_{xor,down}_f32   __shfl_{xor,down}_sync over the full warp
  cuda_atomic_add_{f32,i32}  one atomicAdd per element
  Sm80_mma_* / Sm90_wgmma_*  exact lowerings over the distributed fragments (below)

Note (MMA): the library's wgmma spelling needs shared-memory matrix descriptors and a
CUtensorMap the kernel ABI does not pass, and tensor cores round tf32 inputs and
accumulate wider than float32, so their results are not bit-identical with the
sequential reading (errata "MMA rounding"). To keep compiled kernels comparable
bit for bit, the MMA instructions (Sm80 mma.sync and Sm90 wgmma) are lowered to
float32 multiply-then-add in k order by the threads of the owning warp / warpgroup.
The 64 x N wgmma accumulator is distributed as wgmma's own fragment layout says
(`wgmma_d_element`: each thread holds N / 2 elements, pairs of adjacent columns in
two rows 8 apart), so the registers a thread holds are the ones a real wgmma would
write; the mma.sync tiles are distributed row-major (thread r holds elements
r * share + j), and mma.sync fetches its operands from the lanes holding them with
shuffles. The wgmma lowering is synchronous, so the
commit-group Arrive/Await around it have nothing left to wait for.
The TMA tile load is lowered to bulk (non-tensor) copies for the same ABI reason; it
keeps its asynchronous completion on the mbarrier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gpusem.compiler.gpuir_cuda import kir as K
from gpusem.compiler.gpuir_cuda.errors import unsupported
from gpusem.compiler.gpuir_cuda.from_gpuir import offset_c
from gpusem.compiler.gpuir_cuda.sync import leader, mbar_slot
from gpusem.typing_rules.gpuir.collective import ThreadMapping

# `#pragma unroll` for nvcc only: g++ builds the same text for the cpu harness, where
# unrolling buys nothing and slows the build (speed.py's UNROLL_PRAGMA in bundl_cuda).
UNROLL = ("#if GS_CUDA", "#pragma unroll", "#endif")
# The copies of an elected lane: 16 a loop iteration keeps the registers where they
# were (fully unrolled, 64 rows took u64-v64's GEMM from 80 to 96 registers: 2 CTAs
# an SM instead of 3).
UNROLL_16 = ("#if GS_CUDA", "#pragma unroll 16", "#endif")
# A loop nvcc keeps (`_blocked_nest`'s chunks).
ROLLED = ("#if GS_CUDA", "#pragma unroll 1", "#endif")


def lower_instructions(kernel: K.GKernel, env: dict[str, int],
                       nest: FusedNest | None = None) -> K.GKernel:
    """`nest`: how the fused wgmma's nest is emitted (None: `FUSED_NEST`)."""
    def rewrite(s: K.GStmt) -> tuple[K.GStmt, ...]:
        if not isinstance(s, K.GInstr):
            return (s,)
        rule = RULES.get(s.instr)
        if rule is None:
            raise unsupported(f"instruction {s.instr}", s.span)
        lines = rule(s, env)
        return (K.GComment(f"{s.instr} by {s.mapping.describe()}", s.span),
                *(K.GPrim(t, s.span) for t in lines))

    # The CTA's warps size the fused nest's per-warp scratch (`_at_copy`), none
    # without the copy (pipeline.lower turns it off where it does not fit); `gs_`
    # names are the compiler's own, never a program's size.
    nest = FUSED_NEST if nest is None else nest
    warps = (kernel.block + 31) // 32 if nest.a_copy else 0
    # The blocked layout only where no plain wgmma shares the kernel: the plain
    # (exact) nest keeps wgmma's fragment layout, and one tile must have one layout
    # in every instruction that touches it (`blocked_d_element`).
    blocked = nest.layout == "blocked" and not any(
        isinstance(s, K.GInstr) and s.instr == WGMMA for s in K.walk(kernel.body))
    # gs_regs: the registers a thread of the block can have (65,536 a block,
    # allocated 8 at a time, 255 at most; gs_class_regs, the compute warps' count
    # after their setmaxnreg where pipeline.lower splits the roles), which sizes
    # the blocked nest's chunk
    env = {**env, "gs_warps": warps, "gs_grouped": int(nest.grouped),
           "gs_blocked": int(blocked), "gs_prefetch": int(nest.prefetch),
           "gs_chunk": nest.chunk,
           "gs_regs": env.get("gs_class_regs")
           or min(255, 65536 // max(kernel.block, 1) // 8 * 8)}
    body = K.map_body(K.map_body(kernel.body, lambda s: wgmma_loop(s, env)), rewrite)
    static = sum(4 * int(n) for s in K.walk(body) if isinstance(s, K.GPrim)
                 for n in AT_DECL.findall(s.text))
    return replace(kernel, body=body, static_smem_bytes=static)


def _win(a) -> K.Window:
    assert isinstance(a, K.Window), a
    return a


def _contiguous(w: K.Window, span) -> int:
    if len(w.dims) != 1 or w.dims[0][1] != 1:
        raise unsupported(f"a non-contiguous window of {w.var}", span)
    return w.dims[0][0]


def _bar(s: K.GInstr) -> str:
    if s.barrier is None or s.barrier.index is None:
        raise unsupported(f"{s.instr} needs one mbarrier cell", s.span)
    return mbar_slot(s.barrier, s.span)


def copy(s: K.GInstr, env) -> list[str]:
    dst, src = _win(s.args[0]), _win(s.args[1])
    (n, _), = dst.dims
    return [(f"for (int gs_i = 0; gs_i < {n}; gs_i++) {dst.elem('gs_i')} = "
            f"{src.elem('gs_i')};")]


def atomic_add(s: K.GInstr, env) -> list[str]:
    dst, src = _win(s.args[0]), _win(s.args[1])
    (n, _), = dst.dims
    return [(f"for (int gs_i = 0; gs_i < {n}; gs_i++) atomicAdd(&{dst.elem('gs_i')}, "
             f"{src.elem('gs_i')});")]


def cp_async(s: K.GInstr, env) -> list[str]:
    dst, src = _win(s.args[0]), _win(s.args[1])
    n = _contiguous(dst, s.span)
    _contiguous(src, s.span)
    return [f"gs_cp_async(&{dst.elem('0')}, &{src.elem('0')}, {4 * n});"]


def _rows(s: K.GInstr, first: int = 0) -> tuple[K.Window, K.Window, int, int]:
    dst, src = _win(s.args[first]), _win(s.args[first + 1])
    if len(dst.dims) == 3 and dst.dims[0][0] == 1:
        # a multicast's CTA dimension of extent 1 in a CTA's own tensor
        # (`As[k % 3:k % 3 + 1, :, :]`): its one index is 0, the base
        dst = replace(dst, dims=dst.dims[1:])
    if len(dst.dims) != 2 or dst.dims[1][1] != 1 or src.dims[1][1] != 1:
        raise unsupported(f"{s.instr}: tile rows must be contiguous", s.span)
    m, n = dst.dims[0][0], dst.dims[1][0]
    if (4 * n) % 16:
        raise unsupported(f"{s.instr}: rows of {4 * n} bytes (bulk copies move "
                          "multiples of 16)", s.span)
    return dst, src, m, n


def tma_load(s: K.GInstr, env) -> list[str]:
    dst, src, m, n = _rows(s)
    return [(f"for (int gs_i = 0; gs_i < {m}; gs_i++) gs_bulk_copy_g2s("
            f"&{dst.elem('gs_i', '0')}, &{src.elem('gs_i', '0')}, {4 * n}u, {_bar(s)});")]


def tma_multicast(s: K.GInstr, env) -> list[str]:
    dst, src, m, n = _rows(s)
    c = s.mapping.launch.cluster_dim
    mask = (1 << c) - 1
    return [f"if ({leader(s.mapping, env)}) {{",
            (f"  for (int gs_i = 0; gs_i < {m}; gs_i++) gs_bulk_copy_g2s_multicast("
             f"&{dst.elem('gs_i', '0')}, &{src.elem('gs_i', '0')}, {4 * n}u, "
             f"{_bar(s)}, {mask:#x});"),
            "}"]


def tma_multicast_warps(s: K.GInstr, env) -> list[str]:
    """Sm90_tma_multicast_warps_2d_f32(ncta, cta_stride, dst, src): one warp in each
    of ncta CTAs; the CTA q-th in the collective loads rows [q * m / ncta, (q + 1) *
    m / ncta) of the tile and multicasts them to every CTA of the collective, so
    each CTA's dst receives the whole tile (ncta = 1: a plain load into its own)."""
    dst, src, m, n = _rows(s, 2)
    if not all(isinstance(a, str) and a.isdigit() for a in s.args[:2]):
        raise unsupported(f"{s.instr}: ncta and cta_stride must be literals", s.span)
    ncta, stride = (int(str(a)) for a in s.args[:2])
    if m % ncta:
        raise unsupported(f"{s.instr}: {m} rows over {ncta} CTAs", s.span)
    copy_row = (f"&{dst.elem('gs_i', '0')}, &{src.elem('gs_i', '0')}, {4 * n}u, "
                "gs_bar")
    # One lane of the issuing warp, elected (elect.sync), copies the rows of the
    # share, each completing on the mbarrier the warp's first lane's next arrive
    # signals (its count, shuffled: the lanes' own counts need not be the same).
    # Why elected: ptxas then knows one thread issues, computes the rows' addresses
    # on the uniform datapath and issues the copies back to back (about 6
    # instructions a row). A copy by any lane of a divergent warp (the first lane
    # alone, or row i on lane i % 32) is a loop over the active lanes, ELECT, R2UR,
    # UBLKCP, BRA.U.ANY, one lane after the other (results/cypress/gemm_speed.md).
    # The cpu harness elects the lowest lane, after checking the warp is whole.
    lanes = [f"  gs_u64* const gs_bar = {_lead_slot(s)};"]
    if ncta == 1:
        return ["{", *lanes, "  if (gs_elect_one()) {", *UNROLL_16,
                (f"    for (int gs_i = 0; gs_i < {m}; gs_i++) "
                 f"gs_bulk_copy_g2s({copy_row});"), "  }", "}"]
    b = s.mapping.launch.block_dim
    first = f"({offset_c(s.mapping, env)}) / {b}"  # the collective's first CTA
    bits = sum(1 << (i * stride) for i in range(ncta))
    share = m // ncta
    return ["{", *lanes,
            f"  const int gs_q = (gs_rank - {first}) / {stride};  // share of the tile",
            (f"  const unsigned short gs_mask = (unsigned short)({bits:#x}u << "
             f"{first});"),
            "  if (gs_elect_one()) {", *UNROLL_16,
            (f"    for (int gs_i = gs_q * {share}; gs_i < (gs_q + 1) * {share}; "
             f"gs_i++) gs_bulk_copy_g2s_multicast({copy_row}, gs_mask);"),
            "  }", "}"]


def _lead_slot(s: K.GInstr) -> str:
    """`_bar(s)` as the warp's lane 0 computes it, for every lane of the warp."""
    ref = s.barrier
    if ref is None or ref.index is None:
        raise unsupported(f"{s.instr} needs one mbarrier cell", s.span)
    if ref.ring == 1:
        return mbar_slot(ref, s.span)
    count = f"__shfl_sync(0xffffffffu, gs_na_{ref.name}[{ref.index}], 0)"
    return f"&{ref.name}[({ref.index}) * {ref.ring} + {count} % {ref.ring}u]"


def shfl(op: str):
    def rule(s: K.GInstr, env) -> list[str]:
        dst, src = _win(s.args[0]), _win(s.args[1])
        if dst.dims or src.dims:
            raise unsupported(f"{s.instr} on a register window that is not one "
                              "value per lane", s.span)
        return [(f"{dst.elem()} = __shfl_{op}_sync(0xffffffffu, {src.elem()}, "
                f"{s.args[2]});")]
    return rule


def _rank(m: ThreadMapping, env) -> str:
    off = offset_c(m, env)
    return f"gs_t - ({off})" if off != "0" else "gs_t"


def _tile(d: K.Window, span) -> tuple[int, int, int]:
    """(rows, columns, elements per thread) of a matrix-register window."""
    if not d.tile or len(d.tile) != 2 or d.dims[-2:] != ((d.tile[0], 0),
                                                          (d.tile[1], 0)):
        raise unsupported(f"matrix register {d.var} is not used as a whole tile", span)
    rows, cols = d.tile
    return rows, cols, d.share


def _reg(d: K.Window, j: str = "gs_j") -> str:
    return f"{d.var}[{d.base} + {j}]" if d.base != "0" else f"{d.var}[{j}]"


def wgmma_d_element(r: int, j: int) -> tuple[int, int]:
    """(row, column) of register d_j of thread r of the warpgroup in a wgmma
    .m64nNk8 f32 accumulator (PTX ISA, "Register fragments" of wgmma, matrix D):
    warp r / 32 holds rows 16 (r / 32) .. + 15; in it, lane l holds, of every 8
    columns 8 (j / 4) .., the pair at columns 2 (l % 4) + {0, 1} of row l / 4
    (j % 4 < 2) and of row l / 4 + 8 (j % 4 >= 2). `_tile_loop` prints this in C."""
    lane = r % 32
    return (16 * (r // 32) + lane // 4 + 8 * ((j >> 1) & 1),
            8 * (j >> 2) + 2 * (lane % 4) + (j & 1))


def is_wgmma_tile(d: K.Window) -> bool:
    """A 64 x N tile held by a warpgroup, N / 2 elements a thread (Sm90_RmemMatrixD)."""
    t = d.tile
    return t is not None and len(t) == 2 and t[0] == 64 and 2 * d.share == t[1]


def _tile_n(d: K.Window) -> int:
    """N of a 64 x N wgmma tile (is_wgmma_tile holds of it: its tile is set)."""
    assert d.tile is not None, "not a wgmma tile"
    return d.tile[1]


def _tile_loop(s: K.GInstr, env, d: K.Window, inner: list[str]) -> list[str]:
    """Run `inner` for every element (gs_m, gs_n) of tile `d` this thread holds:
    thread r of the owning collective holds, of a wgmma accumulator, the elements
    its fragment layout gives it (`wgmma_d_element`; in a kernel compiled with the
    blocked fused nest, `blocked_d_element`); of the other (mma.sync) tiles, the
    row-major elements r * share + j."""
    _, cols, share = _tile(d, s.span)
    unroll: list[str] = []
    if is_blocked_tile(d, env):
        at = (f"    const int gs_m = {BLOCKED_ROW} + 4 * (gs_j / {cols // 16}), "
              f"gs_n = {BLOCKED_COL.format(half=cols // 2)} + 8 * (gs_j % {cols // 16});")
        unroll = [*UNROLL]
    elif is_wgmma_tile(d):
        at = ("    const int gs_m = 16 * (gs_r / 32) + gs_r % 32 / 4 + "
              "8 * ((gs_j >> 1) & 1), gs_n = 8 * (gs_j >> 2) + 2 * (gs_r % 4) + "
              "(gs_j & 1);")
        unroll = [*UNROLL]  # constant register indices: the tile stays in registers
    else:
        at = (f"    const int gs_m = (gs_r * {share} + gs_j) / {cols}, "
              f"gs_n = (gs_r * {share} + gs_j) % {cols};")
    return [(f"{{ const int gs_r = {_rank(s.mapping, env)};  // rank in the "
            f"{s.mapping.describe()}"),
            *unroll,
            f"  for (int gs_j = 0; gs_j < {share}; gs_j++) {{",
            at,
            "    (void)gs_m; (void)gs_n;",
            *(f"    {t}" for t in inner), "  }", "}"]


def mma_zero(s: K.GInstr, env) -> list[str]:
    d = _win(s.args[0])
    return _tile_loop(s, env, d, [f"{_reg(d)} = 0.0f;"])


def mma_store(s: K.GInstr, env) -> list[str]:
    dst, d = _win(s.args[0]), _win(s.args[1])
    return _tile_loop(s, env, d, [f"{dst.elem('gs_m', 'gs_n')} = {_reg(d)};"])


def mma_load(transposed: bool):
    """A warp loads a fragment from shared/global memory (B: stored N x K)."""
    def rule(s: K.GInstr, env) -> list[str]:
        d, src = _win(s.args[0]), _win(s.args[1])
        at = src.elem("gs_n", "gs_m") if transposed else src.elem("gs_m", "gs_n")
        return _tile_loop(s, env, d, [f"{_reg(d)} = {at};"])
    return rule


def wgmma(s: K.GInstr, env) -> list[str]:
    """wgmma: operands in shared memory, read directly. Each element of D is
    `d = d + a[m, k] * b[n, k]` for k ascending, multiply then add; the loop nest
    chooses only which loads are shared, and the elements are independent, so any
    nest that keeps each element's k order computes the same bits. Per chunk of 4
    k (one 16-byte row piece): the thread's two rows of A (`wgmma_d_element`: rows
    m and m + 8) are read once into registers (the fused wgmma's from the warp's
    k-major copy of A, `_a_rows`), then each column of B once for the
    two elements of it the thread holds. Fully unrolled on the GPU, so D is indexed
    by constants and can live in registers (a dynamic index puts the whole array
    in local memory), and the chunk keeps the operands to 12 registers beside D's
    N / 2 (results/cypress/gemm_speed.md)."""
    d = _win(s.args[0])
    return _wgmma_nest(s, env, lambda j: _reg(d, j))


def _wgmma_nest(s: K.GInstr, env, reg) -> list[str]:
    """The nest of `wgmma`, register j of D being the C lvalue `reg(j)`. The fused
    wgmma (`WGMMA_FMA`, ours) has the same nest with one `gs_ffma` (__fmaf_rn: an
    FFMA) a step where the plain one has `gs_fadd(d, gs_fmul(a, b))` (FMUL + FADD):
    the order of k is the same, only the roundings differ, each as its meaning."""
    d, a, b = (_win(x) for x in s.args)
    k = a.dims[1][0]
    if not is_wgmma_tile(d):
        raise unsupported(f"{s.instr}: D is not a 64 x N wgmma tile", s.span)
    _, _, share = _tile(d, s.span)
    if is_blocked_tile(d, env):
        if s.instr != WGMMA_FMA:  # lower_instructions keeps plain wgmma kernels out
            raise unsupported(f"{s.instr} on a blocked accumulator", s.span)
        return _blocked_nest(s, env, reg, _tile_n(d))
    c = 4 if k % 4 == 0 else k  # k per chunk
    if s.instr == WGMMA_FMA and env["gs_grouped"] and share >= FUSED_MIN_SHARE \
            and share % (4 * FUSED_PAIRS) == 0:
        return _fused_nest(s, env, reg, share, c)
    ks = f"for (int gs_k = 0; gs_k < {c}; gs_k++)"
    kq = "gs_kc + gs_k"
    step = "gs_ffma({a}[gs_k], gs_b[gs_k], {d})" if s.instr == WGMMA_FMA else \
        "gs_fadd({d}, gs_fmul({a}[gs_k], gs_b[gs_k]))"
    head, done = _nest_head(s, env, a, k, c,
                            f"float gs_a0[{c}], gs_a1[{c}], gs_b[{c}];")
    return [*head,
            f"    for (int gs_j = 0; gs_j < {share}; gs_j += 4) {{",
            *UNROLL,
            "      for (int gs_h = 0; gs_h < 2; gs_h++) {",
            "        const int gs_n = 2 * gs_j + 2 * (gs_r % 4) + gs_h;",
            *UNROLL,
            f"        {ks} gs_b[gs_k] = {b.elem('gs_n', kq)};",
            (f"        float gs_d0 = {reg('gs_j + gs_h')}, "
             f"gs_d1 = {reg('gs_j + 2 + gs_h')};"),
            *UNROLL,
            f"        {ks} {{",
            f"          gs_d0 = {step.format(d='gs_d0', a='gs_a0')};",
            f"          gs_d1 = {step.format(d='gs_d1', a='gs_a1')};",
            "        }",
            f"        {reg('gs_j + gs_h')} = gs_d0;",
            f"        {reg('gs_j + 2 + gs_h')} = gs_d1;",
            "      }", "    }", "  }", *done, "}"]


def _nest_head(s: K.GInstr, env, a: K.Window, k: int, c: int,
               arrays: str) -> tuple[list[str], list[str]]:
    """The opening both wgmma nests share (`_wgmma_nest`, `_fused_nest`): the
    thread's rank and row m, the copy of A where there is one, the loop over chunks
    of `c` k declaring `arrays` (the chunk's registers) and reading the chunk's rows
    m and m + 8 of A (`_a_rows`); and the lines that follow the nest."""
    copy, rows, done = _a_rows(s, a, k, env)
    return [(f"{{ const int gs_r = {_rank(s.mapping, env)};  // rank in the "
             f"{s.mapping.describe()}"),
            "  const int gs_m = 16 * (gs_r / 32) + gs_r % 32 / 4;  // and gs_m + 8",
            *copy,
            *UNROLL,
            f"  for (int gs_kc = 0; gs_kc < {k}; gs_kc += {c}) {{",
            f"    {arrays}",
            *UNROLL,
            *rows,
            *UNROLL], done


def _a_rows(s: K.GInstr, a: K.Window, k: int, env) -> tuple[list[str], ...]:
    """(before the nest, the chunk's reads of rows m and m + 8 of A, after the
    nest): of the fused wgmma with k = 8, through the warp's k-major copy of A
    (`_at_copy`, `FusedNest.a_copy`); of the others, along k from A itself."""
    if s.instr == WGMMA_FMA and k == 8 and env.get("gs_warps", 0) > 0:
        return (_at_copy(a, k, env["gs_warps"]), _at_stage(),
                ["  __syncwarp();  // gs_at is read: the next nest may write it"])
    ks, kq = f"for (int gs_k = 0; gs_k < {4 if k % 4 == 0 else k}; gs_k++)", \
        "gs_kc + gs_k"
    return [], [f"    {ks} {{",
                f"      gs_a0[gs_k] = {a.elem('gs_m', kq)};",
                f"      gs_a1[gs_k] = {a.elem('gs_m + 8', kq)};",
                "    }"], []


@dataclass(frozen=True, slots=True)
class FusedNest:
    """How the fused wgmma's nest (`WGMMA_FMA`, ours) is emitted: three choices, each
    switchable per compilation so that a GPU run can time every combination
    (results/cypress/gemm_speed.md, cyknob, cyfrag). All compute the same bits: each
    element takes c = fma(a_k, b_k, c) for k ascending; only which thread holds it,
    which loads are shared and the order of independent FFMAs differ.

    grouped: cyperf4's nest on tiles of FUSED_MIN_SHARE registers a thread or more
        (`_fused_nest`: per k one FFMA into each of a group's accumulators); off,
        those tiles take the element-pair nest (`_wgmma_nest`) as smaller tiles do.
    a_copy: cyperf5's per-warp k-major copy of A in shared memory (`_at_copy`),
        read with one LDS.64 a k, in both nests; off, A is read along k from the
        wgmma's operand itself (two LDS.128 a chunk of 4 k).

    layout: "wgmma" (the accumulator in wgmma's fragment layout, the nests above)
        or "blocked" (`blocked_d_element`: each thread an 8 x N / 16 block of the
        64 x N tile, `_blocked_nest`; branch cyfrag); blocked takes neither
        choice above (they are nests of the fragment layout).
    prefetch: of the blocked layout only: the operands of chunk c + 1 loaded
        before the FFMAs of chunk c, into a second set of registers
        (`_prefetch_nest`, branch cyfrag2), and the stage's loop over k slices
        unrolled (`wgmma_loop`), where two chunks' operands fit beside D
        (`prefetch_chunk`); elsewhere the blocked nest.
    chunk: of the blocked layout only: k a chunk (1, 2 or 4); 0: the largest that
        fits (BLOCKED_SPARE).
    """

    grouped: bool
    a_copy: bool
    layout: str = "wgmma"
    prefetch: bool = False
    chunk: int = 0

    def __post_init__(self) -> None:
        if self.layout not in ("wgmma", "blocked"):
            raise ValueError(f"FusedNest layout {self.layout!r}: wgmma or blocked")
        if self.layout == "blocked" and (self.grouped or self.a_copy):
            raise ValueError("the blocked layout has its own nest: grouped and "
                             "a_copy are choices of the wgmma layout's")
        if self.chunk not in (0, 1, 2, 4):
            raise ValueError(f"FusedNest chunk {self.chunk}: 1, 2, 4 or 0 (by room)")
        if self.layout != "blocked" and (self.prefetch or self.chunk):
            raise ValueError("prefetch and chunk are choices of the blocked "
                             "layout's nest")


# The default of every compilation (the api, the campaigns): neither. The H200 timed
# all four (results/cypress/gemm_h200_2026-11-29f/, N = 4096, u128-hopper-fused):
# neither 4.911 ms, grouped alone 4.907 (the same within noise; it changes only 64 x 256
# tiles), the copy of A alone 5.910, both 5.197: the copy is slower on every mapping,
# the grouped nest gains nothing, so the simplest nest (the 1.88x code) is the default.
# No golden holds a fused kernel; the tests of each choice set it themselves.
FUSED_NEST = FusedNest(grouped=False, a_copy=False)


# Column pairs of B a fused chunk reads before its FFMAs: 4 x FUSED_PAIRS independent
# accumulators a k; only for tiles of at least FUSED_MIN_SHARE registers a thread
# (N = 256: D fills 128 of 168 registers and ptxas hoists no load by itself). On the
# 64-register tiles ptxas's own order was as good or better, and u256-v128 (96
# registers) spilled with the groups (results/cypress/gemm_speed.md, cyperf4).
FUSED_PAIRS = 2
FUSED_MIN_SHARE = 128


def _fused_nest(s: K.GInstr, env, reg, share: int, c: int) -> list[str]:
    """The fused wgmma's nest. Per chunk of `c` k: the thread's rows m and m + 8 of
    A once, then, per group of `FUSED_PAIRS` column pairs of B (the registers
    gs_j .. gs_j + 4 FUSED_PAIRS - 1: each pair is columns n, n + 1 of rows m and m
    + 8, `wgmma_d_element`), the group's columns once and, for each k of the chunk
    in turn, one FFMA into each of the group's accumulators. Each element still
    takes c = fma(a_k, b_k, c) for k ascending (the fused meaning fixes that order
    per element, not across elements), so the bits are those of `_wgmma_nest`'s
    element-by-element order; why: consecutive FFMAs now write different
    accumulators, where two chains of 4 dependent FFMAs (4 cycles each) made the
    warp wait (results/cypress/sass_cyfma)."""
    a, b = _win(s.args[1]), _win(s.args[2])
    k, g = a.dims[1][0], FUSED_PAIRS
    ks = f"for (int gs_k = 0; gs_k < {c}; gs_k++)"
    kq = "gs_kc + gs_k"
    lo, hi = "gs_j + 4 * (gs_p / 2) + gs_p % 2", "gs_j + 4 * (gs_p / 2) + 2 + gs_p % 2"
    head, done = _nest_head(s, env, a, k, c, f"float gs_a0[{c}], gs_a1[{c}];")
    return [*head,
            f"    for (int gs_j = 0; gs_j < {share}; gs_j += {4 * g}) {{",
            f"      float gs_b[{2 * g}][{c}];  // columns n, n + 1 of {g} pair(s)",
            *UNROLL,
            f"      for (int gs_p = 0; gs_p < {2 * g}; gs_p++) {{",
            ("        const int gs_n = 2 * gs_j + 8 * (gs_p / 2) + 2 * (gs_r % 4) "
             "+ gs_p % 2;"),
            *UNROLL,
            f"        {ks} gs_b[gs_p][gs_k] = {b.elem('gs_n', kq)};",
            "      }",
            *UNROLL,
            f"      {ks} {{",
            *UNROLL,
            f"        for (int gs_p = 0; gs_p < {2 * g}; gs_p++) {{",
            (f"          {reg(lo)} = gs_ffma(gs_a0[gs_k], gs_b[gs_p][gs_k], "
             f"{reg(lo)});"),
            (f"          {reg(hi)} = gs_ffma(gs_a1[gs_k], gs_b[gs_p][gs_k], "
             f"{reg(hi)});"),
            "        }", "      }", "    }", "  }", *done, "}"]


# The blocked accumulator layout (`FusedNest.layout = "blocked"`, branch cyfrag), in
# C over the thread's rank gs_r in the warpgroup: its first row and column
# (`blocked_d_element`); `{half}` is N / 2.
BLOCKED_ROW = "32 * (gs_r / 64) + ((gs_r >> 1) & 1) + 2 * ((gs_r >> 4) & 1)"
BLOCKED_COL = "{half} * (gs_r / 32 % 2) + (gs_r & 1) + 2 * ((gs_r >> 2) & 3)"
# k a chunk: 4 (one LDS.128 a row of A or column of B) where A's 8 rows of 4 k fit
# beside D with BLOCKED_SPARE registers to spare, else 2 (LDS.64). At N = 4096
# (sass_cyfrag): with 4, u128-hopper (128 accumulators in 168 registers) spills (5
# LDL and 2 STL a chunk), u128-v128-wgs2-p4 (64 in 168) does not and issues 1.10
# instructions an FFMA instead of 1.20.
BLOCKED_SPARE = 40


def blocked_d_element(r: int, j: int, n: int) -> tuple[int, int]:
    """(row, column) of register j of thread r of the warpgroup in a 64 x n
    accumulator of the blocked layout (ours, not wgmma's: no program observes
    which thread holds an element, `is_blocked_tile`). Warp w = r / 32 holds the
    32 x n / 2 quarter at rows 32 (w / 2), columns n / 2 (w % 2); in it lane l
    holds the 8 rows i + 4 p (p < 8) and the n / 16 columns c + 8 q (q < n / 16),
    register j = p n / 16 + q, where i = l_1 + 2 l_4 and c = l_0 + 2 (l_2 + 2 l_3)
    (l_b: bit b of l). Why: per k a thread reads 8 + n / 16 operands for n / 2
    FFMAs (24 for 128 at n = 256; the fragment layout, 2 + n / 4: 66); lanes l and
    l ^ 1 read the same row of A and lanes l and l ^ 2 the same column of B, the
    pairs the shared-memory unit returns at twice the rate; and a warp's 4 rows
    (8 columns) of one load, 4 (8) apart on rows of 144 bytes, start in distinct
    bank groups (results/cypress/gemm_speed.md, cyfrag)."""
    w, lane = divmod(r, 32)
    q = n // 16
    i = ((lane >> 1) & 1) + 2 * ((lane >> 4) & 1)
    c = (lane & 1) + 2 * ((lane >> 2) & 3)
    return 32 * (w // 2) + i + 4 * (j // q), n // 2 * (w % 2) + c + 8 * (j % q)


def is_blocked_tile(d: K.Window, env) -> bool:
    """A wgmma tile held in the blocked layout: in a kernel compiled with it
    (`lower_instructions`: no plain wgmma in the kernel) and N a multiple of 16.
    Which thread holds an element is not observable in GPU IR: a Sm90_RmemMatrixD
    tile is owned by the warpgroup (typing_rules.gpuir.memory), the interpreter
    gives it as one 64 x N array, and gpuir_cuda refuses a point or a partial
    window of it (from_gpuir), so only the zero, the (fused) wgmma and the store
    touch its registers, and each follows this layout where one does."""
    return bool(env.get("gs_blocked")) and is_wgmma_tile(d) and _tile_n(d) % 16 == 0


def _blocked_nest(s: K.GInstr, env, reg, n: int) -> list[str]:
    """The fused wgmma's nest on a blocked accumulator (`blocked_d_element`). Per
    chunk of 4 or 2 k (BLOCKED_SPARE): the thread's 8 rows of A (one LDS.128 or
    LDS.64 each), then per column of B (one load), for each k of the chunk one FFMA
    into each of the column's 8 accumulators: the outer product. Each element
    takes c = fma(a_k, b_k, c) for k ascending, the fused meaning's order, so the
    bits are those of the other nests (tests/cypress/test_fused_nest_choices.py).
    Unrolled on the
    GPU but for the loop over chunks (D's registers are indexed by constants, the
    chunk only moves the addresses): unrolled, ptxas merges two chunks' LDS.64
    into an LDS.128, holds 32 registers of A beside D's 128 and spills (u128-
    hopper: 19 LDL and 16 STL a wgmma; results/cypress/gemm_speed.md, cyfrag)."""
    a, b = _win(s.args[1]), _win(s.args[2])
    k, q = a.dims[1][0], n // 16
    regs, forced = env.get("gs_regs", 0), env.get("gs_chunk", 0)
    if (pc := prefetch_chunk(env, s)) is not None:
        return _prefetch_nest(s, env, reg, n, pc)
    wide = n // 2 + 8 * 4 + BLOCKED_SPARE <= regs
    c = forced if forced and k % forced == 0 else \
        next(c for c in ((4, 2, 1) if wide else (2, 1)) if k % c == 0)
    ks = f"for (int gs_k = 0; gs_k < {c}; gs_k++)"
    kq = "gs_kc + gs_k"
    at = f"gs_p * {q} + gs_q"
    return [(f"{{ const int gs_r = {_rank(s.mapping, env)};  // rank in the "
             f"{s.mapping.describe()}"),
            f"  const int gs_m = {BLOCKED_ROW};  // rows gs_m + 4 p",
            f"  const int gs_n = {BLOCKED_COL.format(half=n // 2)};  // columns gs_n + 8 q",
            *ROLLED,
            f"  for (int gs_kc = 0; gs_kc < {k}; gs_kc += {c}) {{",
            f"    float gs_a[8][{c}];",
            *UNROLL,
            "    for (int gs_p = 0; gs_p < 8; gs_p++) {",
            *UNROLL,
            f"      {ks} gs_a[gs_p][gs_k] = {a.elem('gs_m + 4 * gs_p', kq)};",
            "    }",
            *UNROLL,
            f"    for (int gs_q = 0; gs_q < {q}; gs_q++) {{",
            f"      float gs_b[{c}];",
            *UNROLL,
            f"      {ks} gs_b[gs_k] = {b.elem('gs_n + 8 * gs_q', kq)};",
            *UNROLL,
            f"      {ks} {{",
            *UNROLL,
            "        for (int gs_p = 0; gs_p < 8; gs_p++)",
            (f"          {reg(at)} = gs_ffma(gs_a[gs_p][gs_k], gs_b[gs_k], "
             f"{reg(at)});"),
            "      }", "    }", "  }", "}"]


def prefetch_chunk(env, s: K.GInstr) -> int | None:
    """k a chunk of the blocked nest's software pipeline (`FusedNest.prefetch`) on
    the fused wgmma `s` of a blocked tile: the chunk asked for, else the largest
    whose two chunks' operands (A's 8 rows and B's N / 16 columns) fit beside D
    with BLOCKED_SPARE registers to spare; None: no pipeline (not asked, or no
    chunk fits: u128-hopper's 128 accumulators in 168 registers)."""
    if not env.get("gs_prefetch"):
        return None
    k, n = _win(s.args[1]).dims[1][0], _tile_n(_win(s.args[0]))
    forced = env.get("gs_chunk", 0)
    if forced and k % forced == 0:
        return forced
    return next((c for c in (4, 2, 1) if k % c == 0 and n // 2 + 2 * (8 + n // 16)
                 * c + BLOCKED_SPARE <= env.get("gs_regs", 0)), None)


def _prefetch_nest(s: K.GInstr, env, reg, n: int, c: int) -> list[str]:
    """`_blocked_nest` software-pipelined (`FusedNest.prefetch`, branch cyfrag2):
    two sets of registers for a chunk's operands (A's 8 rows and B's N / 16
    columns, c k each), and, fully unrolled, step i loads chunk i into set i % 2
    and then runs chunk i - 1's FFMAs from the other set: chunk 0's loads are the
    prologue, the last chunk's FFMAs the epilogue. Why: the blocked nest's FFMAs
    waited on the LDS just before them (ncu on the H200, u128-hopper-blocked:
    short-scoreboard stalls 19%, the FMA pipe at 44% with 2 compute warps a
    scheduler, results/cypress/gemm_speed.md, cyfrag2), where cuBLAS's FFMA
    kernel loads the next k's fragments while this k's FFMAs run. Each element
    still takes c = fma(a_k, b_k, c) for k ascending (chunks in order, k in order
    inside one), so the bits are the blocked nest's. The pipeline stays inside one
    wgmma (k = 8): the next wgmma's operands are in the same stage, but the nest
    is one instruction's text and the next instruction is not in sight."""
    a, b = _win(s.args[1]), _win(s.args[2])
    k, q = a.dims[1][0], n // 16
    ks = f"for (int gs_k = 0; gs_k < {c}; gs_k++)"
    kq = f"{c} * gs_i + gs_k"
    at = f"gs_p * {q} + gs_q"
    cur, nxt = "gs_s[(gs_i + 1) % 2]", "gs_s[gs_i % 2]"
    return [(f"{{ const int gs_r = {_rank(s.mapping, env)};  // rank in the "
             f"{s.mapping.describe()}"),
            f"  const int gs_m = {BLOCKED_ROW};  // rows gs_m + 4 p",
            f"  const int gs_n = {BLOCKED_COL.format(half=n // 2)};  // columns gs_n + 8 q",
            f"  struct {{ float a[8][{c}], b[{q}][{c}]; }} gs_s[2];  // two chunks",
            *UNROLL,
            f"  for (int gs_i = 0; gs_i <= {k // c}; gs_i++) {{",
            f"    if (gs_i < {k // c}) {{  // chunk gs_i's operands into {nxt}",
            *(f"  {t}" for t in UNROLL),
            "      for (int gs_p = 0; gs_p < 8; gs_p++) {",
            *(f"  {t}" for t in UNROLL),
            f"        {ks} {nxt}.a[gs_p][gs_k] = {a.elem('gs_m + 4 * gs_p', kq)};",
            "      }",
            *(f"  {t}" for t in UNROLL),
            f"      for (int gs_q = 0; gs_q < {q}; gs_q++) {{",
            *(f"  {t}" for t in UNROLL),
            f"        {ks} {nxt}.b[gs_q][gs_k] = {b.elem('gs_n + 8 * gs_q', kq)};",
            "      }",
            "    }",
            "    if (gs_i > 0) {  // chunk gs_i - 1's FFMAs",
            *(f"  {t}" for t in UNROLL),
            f"      for (int gs_q = 0; gs_q < {q}; gs_q++) {{",
            *(f"  {t}" for t in UNROLL),
            f"        {ks} {{",
            *(f"  {t}" for t in UNROLL),
            "          for (int gs_p = 0; gs_p < 8; gs_p++)",
            (f"            {reg(at)} = gs_ffma({cur}.a[gs_p][gs_k], "
             f"{cur}.b[gs_q][gs_k], {reg(at)});"),
            "        }", "      }", "    }", "  }", "}"]


# `gs_at`, the per-warp k-major copy of A (`FusedNest.a_copy`), declared in the nest;
# `lower_instructions` counts its bytes as the kernel's static shared memory.
AT_DECL = re.compile(r"__shared__ __align__\(16\) float gs_at\[(\d+)\]")


def _at_copy(a: K.Window, k: int, warps: int) -> list[str]:
    """The warp copies its 16 rows of A's 16 x 8 slice (k = 8: wgmma's k) into its
    part of `gs_at`, k-major, row q of the warp at column 2 (q % 8) + q / 8, so a
    thread's rows m and m + 8 of one k are two adjacent floats (one LDS.64). Lane
    l moves k 4 (l / 16) .. + 3 of row l % 16 (one 16-byte read of A);
    `__syncwarp` orders the writes before the other lanes' reads. Why: a[k] then
    comes from a pair of registers not tied to k's bank, where a 16-byte read
    along k put a[k] and b[k] in registers 4i + k and 4j + k
    (results/cypress/gemm_speed.md, cyperf5)."""
    per = 16 * k
    return [f"  __shared__ __align__(16) float gs_at[{warps * per}];  // per warp",
            f"  float* const gs_w = gs_at + (threadIdx.x / 32) * {per};",
            ("  { const int gs_q = threadIdx.x % 16, "
             "gs_c = 4 * (threadIdx.x % 32 / 16);"),
            "    const int gs_row = 16 * (gs_r / 32) + gs_q;",
            *(f"  {t}" for t in UNROLL),
            "    for (int gs_k = 0; gs_k < 4; gs_k++)",
            ("      gs_w[16 * (gs_c + gs_k) + 2 * (gs_q % 8) + gs_q / 8] = "
             f"{a.elem('gs_row', 'gs_c + gs_k')};"),
            "  }",
            "  __syncwarp();"]


def _at_stage() -> list[str]:
    """A's two rows of a chunk from `gs_at` (`_at_copy`): per k one pair."""
    return ["    for (int gs_k = 0; gs_k < 4; gs_k++) {",
            "      const int gs_o = 16 * (gs_kc + gs_k) + 2 * (threadIdx.x % 32 / 4);",
            "      gs_a0[gs_k] = gs_w[gs_o];",
            "      gs_a1[gs_k] = gs_w[gs_o + 1];",
            "    }"]


WGMMA = "Sm90_wgmma_m64nNk8_f32"
WGMMA_FMA = "Sm90_wgmma_m64nNk8_f32_fma"  # ours: errata "Extension: fused mma"


def wgmma_loop(s: K.GStmt, env) -> tuple[K.GStmt, ...]:
    """A seq loop whose body is one wgmma into a D that does not move with the
    loop (`for kk in seq(0, 4): wgmma(D[..], As[.., 8 * kk:..], Bs[..])`, the k
    slices of one step): D's registers are copied into `gs_acc` before the loop
    and back after it, and every iteration's nest accumulates in `gs_acc`. The
    same additions in the same order (each iteration is `wgmma`'s nest); nothing
    else in the loop touches D. Why: where D is indexed by a runtime value (Fig.
    5's `D[wg, r]` under `for r in seq(0, 2)`: 256 floats a thread, more than its
    registers), nvcc keeps D in local memory and each wgmma loaded and stored all
    of the thread's tile; now each loop does once (results/cypress/gemm_speed.md).
    Anything else is left to `wgmma` alone."""
    if not isinstance(s, K.GFor):
        return (s,)
    calls = [x for x in s.body if not isinstance(x, K.GComment)]
    if len(calls) != 1 or not isinstance(calls[0], K.GInstr):
        return (s,)
    g = calls[0]
    d = g.args[0] if g.args else None
    if g.instr not in (WGMMA, WGMMA_FMA) or g.barrier is not None or not isinstance(d, K.Window) \
            or not is_wgmma_tile(d) or re.search(rf"\b{s.var}\b", d.base):
        return (s,)
    share = d.share
    nest = _wgmma_nest(g, env, lambda j: f"gs_acc[{j}]")
    load = [(f"{{ float gs_acc[{share}];  // {d.var}'s registers through the loop "
             f"over {s.var}"), *UNROLL,
            (f"  for (int gs_j = 0; gs_j < {share}; gs_j++) gs_acc[gs_j] = "
             f"{_reg(d)};")]
    if is_blocked_tile(d, env) and prefetch_chunk(env, g) is not None:
        # the prefetch nest's pipeline runs on across the loop's k slices: unrolled,
        # ptxas issues the next slice's first loads under this one's last FFMAs
        # (one-warp IPC 0.80 -> 0.96 on u128-v128-wgs2-p4, sass_cyfrag2)
        load += UNROLL
    store = [*UNROLL, (f"  for (int gs_j = 0; gs_j < {share}; gs_j++) {_reg(d)} = "
                       "gs_acc[gs_j];"), "}"]
    inner = (K.GComment(f"{g.instr} by {g.mapping.describe()}, into gs_acc", g.span),
             K.GPrim("\n".join(nest), g.span))
    return (K.GPrim("\n".join(load), s.span), replace(s, body=inner),
            K.GPrim("\n".join(store), g.span))  # g's line: no second loop header


def mma_sync(s: K.GInstr, env) -> list[str]:
    """mma.sync: operands are fragments in the lanes' registers, fetched with
    shuffles (uniform register index: the tile width is a multiple of the share)."""
    d, a, b = (_win(x) for x in s.args)
    _, ka, sa = _tile(a, s.span)
    _, kb, sb = _tile(b, s.span)
    if ka % sa or kb % sb:
        raise unsupported(f"{s.instr}: fragment layout", s.span)
    fetch_a = (f"__shfl_sync(0xffffffffu, {_reg(a, f'gs_k % {sa}')}, "
               f"(gs_m * {ka} + gs_k) / {sa})")
    fetch_b = (f"__shfl_sync(0xffffffffu, {_reg(b, f'gs_k % {sb}')}, "
               f"(gs_n * {kb} + gs_k) / {sb})")
    return _tile_loop(s, env, d, [
        f"float gs_acc = {_reg(d)};",
        f"for (int gs_k = 0; gs_k < {ka}; gs_k++) {{",
        f"  const float gs_a = {fetch_a};",
        f"  const float gs_b = {fetch_b};",
        "  gs_acc = gs_fadd(gs_acc, gs_fmul(gs_a, gs_b));",
        "}",
        f"{_reg(d)} = gs_acc;"])


RULES = {
    "cuda_copy_f32": copy,
    "Sm80_cp_async_f32": cp_async,
    "Sm90_tma_load_2d_f32": tma_load,
    "Sm90_tma_multicast_2d_f32": tma_multicast,
    "Sm90_tma_multicast_warps_2d_f32": tma_multicast_warps,
    "cuda_atomic_add_f32": atomic_add,
    "cuda_atomic_add_i32": atomic_add,
    "cuda_shfl_xor_f32": shfl("xor"),
    "cuda_shfl_down_f32": shfl("down"),
    "Sm80_mma_load_a_f32": mma_load(False),
    "Sm80_mma_load_b_f32": mma_load(True),
    "Sm80_mma_zero_d_f32": mma_zero,
    "Sm80_mma_m16n8k8_f32": mma_sync,
    "Sm80_mma_store_d_f32": mma_store,
    "Sm90_wgmma_zero_d_f32": mma_zero,
    "Sm90_wgmma_m64nNk8_f32": wgmma,
    "Sm90_wgmma_m64nNk8_f32_fma": wgmma,
    "Sm90_wgmma_store_d_f32": mma_store,
}
