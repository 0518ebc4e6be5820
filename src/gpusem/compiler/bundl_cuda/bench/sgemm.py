"""The SGEMM benchmark template of issue 4 (rendered by `programs.py`): the Prism
paper's Appendix B.2 variant 3 (2D block tiling through shared memory, 8 x 8 results
per thread) as Bundl text, and the variants past the paper that the harness measures:
double buffering (two As/Bs pairs), register prefetch (`_prefetch_loop`), split
column runs (`SgemmSize.split_n`), and a k-major A tile (`SgemmSize.kmajor_a`). Every variant computes each C element in the same
order of float operations (k ascending from 0.0, then alpha * acc + beta * C), so one
same-order reference checks them all bit for bit (`reference.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SgemmSize:
    """C (m x n) = alpha * A (m x k) @ B (k x n) + beta * C, the Prism paper's
    Appendix B.2 variant 3 (2D block tiling, Boehm's kernel 5): a block computes a
    bm x bn tile from bm x bk and bk x bn shared tiles; a thread an 8 x 8 sub-tile."""

    m: int
    n: int
    k: int
    bm: int
    bn: int
    bk: int
    tm: int = 8
    tn: int = 8
    # split_n: a thread's 8 columns are two runs of 4, bn/2 apart (columns 4t'..4t'+3
    # and bn/2 + 4t'..), not 8 adjacent ones: its two 16-byte Bs reads per k then
    # tile a quarter-warp's 128 bytes with no bank conflict (adjacent 8-column runs
    # put two threads of each quarter-warp on the same banks).
    split_n: bool = False
    # kmajor_a: As holds the A tile k-major (As[d * bm + row], transposed while
    # staging, as Boehm's kernel 6 does), so a thread's 8 rows at one k are adjacent:
    # two 16-byte reads per k. Row-major, nvcc reads 4 k-steps of a row at once (one
    # 16-byte read) and keeps 32 A values live, not 8: registers the BK = 16 and
    # double-buffered kernels then spill.
    kmajor_a: bool = False
    # zigzag: the 64 updates of a k-step in column order, down the 8 rows for even
    # columns and up them for odd ones (c0j..c7j, then c7j'..c0j'), not row by row.
    # Same float ops per C element in the same k order (the elements are independent),
    # so bit-identical; it only steers ptxas's register allocation and operand reuse:
    # in strict_pf_split_al's k-loop (nvcc 13, sm_90a) the FMUL/FADDs with two source
    # registers of one parity and no .reuse fall from 18% to 9% (FADDs 92 -> 21).
    zigzag: bool = False
    # fma: each update of the dot product written as the explicit c = fma(m, n, c)
    # (the Bundl extension: one rounding, exact in every evaluator), not c = c + m * n:
    # the FFMA peak under the strict CompileOptions() (no contraction anywhere else;
    # the epilogue keeps alpha * acc + beta * C). The same k order from 0.0, so the
    # same-order reference checks it bit for bit with a correctly rounded fma.
    fma: bool = False

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def blocks(self) -> int:
        return (self.m // self.bm) * (self.n // self.bn)

    @property
    def load_a(self) -> int:  # As elements each thread stages per k-tile
        return self.bm * self.bk // self.threads

    @property
    def load_b(self) -> int:
        return self.bk * self.bn // self.threads

    def check(self) -> None:
        assert (self.tm, self.tn) == (8, 8), "the template spells out 8 x 8 sub-tiles"
        assert self.m % self.bm == 0 and self.n % self.bn == 0 and self.k % self.bk == 0
        assert self.bm * self.bk % self.threads == 0, self
        assert self.bk * self.bn % self.threads == 0, self
        # a thread's staged run stays in one tile row or covers whole rows (the
        # prefetched kernels address it as one base plus constant offsets)
        assert self.load_a % self.bk == 0 or self.bk % self.load_a == 0, self
        # k-major As: a thread's run stays in one column of the tile (one k)
        assert not self.kmajor_a or self.bm % self.load_a == 0, self
        assert self.load_b % self.bn == 0 or self.bn % self.load_b == 0, self


SGEMM_SMALL = SgemmSize(m=16, n=32, k=8, bm=16, bn=16, bk=4)
SGEMM_GPU = SgemmSize(m=4096, n=4096, k=4096, bm=128, bn=128, bk=8)
# The prefetched twins take four k-tiles, so their loops run (the last one is peeled).
SGEMM_SMALL_PF = SgemmSize(m=16, n=32, k=16, bm=16, bn=16, bk=4)
# BK is a template parameter of the paper's kernel; 16 halves the barriers per FLOP.
SGEMM_GPU_BK16 = SgemmSize(m=4096, n=4096, k=4096, bm=128, bn=128, bk=16)
# 64 x 128 block tiles: 128 threads, so four blocks (not two) share an SM at 128
# registers, and a block waiting at a barrier idles a quarter of the SM, not half.
SGEMM_GPU_BM64 = SgemmSize(m=4096, n=4096, k=4096, bm=64, bn=128, bk=8)
SGEMM_GPU_SPLIT = SgemmSize(m=4096, n=4096, k=4096, bm=128, bn=128, bk=8, split_n=True)
SGEMM_GPU_BM64_SPLIT = SgemmSize(m=4096, n=4096, k=4096, bm=64, bn=128, bk=8,
                                 split_n=True)
# BK = 16 with split columns: two barriers per 16 k-steps, not per 8 (needs
# CompileOptions.unroll_max_trips = 16 for the dot loop to unroll).
SGEMM_GPU_BK16_SPLIT = SgemmSize(m=4096, n=4096, k=4096, bm=128, bn=128, bk=16,
                                 split_n=True)
# ... and with As k-major (SgemmSize.kmajor_a): 8 live A values per k, not 32.
SGEMM_GPU_KA_SPLIT = SgemmSize(m=4096, n=4096, k=4096, bm=128, bn=128, bk=8,
                               split_n=True, kmajor_a=True)
# zigzag update order (SgemmSize.zigzag), row-major and k-major As
SGEMM_GPU_ZZ_SPLIT = SgemmSize(m=4096, n=4096, k=4096, bm=128, bn=128, bk=8,
                               split_n=True, zigzag=True)
SGEMM_GPU_KA_ZZ_SPLIT = SgemmSize(m=4096, n=4096, k=4096, bm=128, bn=128, bk=8,
                                  split_n=True, kmajor_a=True, zigzag=True)
SGEMM_GPU_BK16_KA_SPLIT = SgemmSize(m=4096, n=4096, k=4096, bm=128, bn=128, bk=16,
                                    split_n=True, kmajor_a=True)


def sgemm_tiled(size: SgemmSize, small: bool = False, double_buffer: bool = False,
                prefetch: bool = False) -> str:
    """Variant 3 as the paper writes it (one As/Bs pair; a barrier after the inner
    product, before the next k-tile overwrites them), or with `double_buffer` two
    pairs used alternately, so a k-tile needs only the barrier after its staging.
    `prefetch`: each thread loads its share of the NEXT k-tile from global memory into
    registers before the inner product of this one and stores them to shared memory
    after it, so the global latency hides behind the arithmetic (`_prefetch_loop`)."""
    size.check()
    s, T = size, size.threads
    assert not double_buffer or (s.k // s.bk) % 2 == 0, "double buffering: even k-tiles"
    ind = " " * 10
    accs = [f"c{i}{j}" for i in range(8) for j in range(8)]
    regs = (*(f"r{i}" for i in range(s.load_a)), *(f"q{i}" for i in range(s.load_b))) \
        if prefetch else ()
    decls = "\n".join(f"{ind}let {name} : float @ thread[1] = 0.0;"
                      for name in (*accs, *(f"m{i}" for i in range(8)),
                                   *(f"n{j}" for j in range(8)), *regs))
    ind3 = " " * 18
    stores = "\n".join(f"{ind3}cp[{i * 8 + j}] = AB[0] * c{i}{j} + AB[1] * cp[{i * 8 + j}];"
                       for i in range(8) for j in range(8))
    head = _sgemm_head(size, small, double_buffer, prefetch)
    if prefetch:
        allocs, loop = _prefetch_loop(s, double_buffer)
        return _sgemm_text(s, head, allocs, decls, loop, stores, small)
    if double_buffer:
        allocs = _pair_allocs(s)
        loop = (_stage(s, "As0", "Bs0", "k0", "0") + _compute(s, "As0", "Bs0", "0")
                + _stage(s, "As1", "Bs1", f"k0 + {s.bk}", "1")
                + _compute(s, "As1", "Bs1", "1")
                + f"            k0 = k0 + {2 * s.bk};\n")
    else:
        allocs = (f"          alloc As : float[{s.bm * s.bk}] in Shared;\n"
                  f"          alloc Bs : float[{s.bk * s.bn}] in Shared;")
        loop = (_stage(s, "As", "Bs", "k0", "") + _fenced(_compute(s, "As", "Bs", ""), T)
                + f"            k0 = k0 + {s.bk};\n")
    loop = f"          while k0 < {s.k} {{\n{loop}          }}\n"
    return _sgemm_text(s, head, allocs, decls, loop, stores, small)


def _sgemm_text(s: SgemmSize, head: str, allocs: str, decls: str, loop: str,
                stores: str, small: bool) -> str:
    text = _sgemm_text_plain(s, head, allocs, decls, loop, stores, small)
    return _explicit_fma(text) if s.fma else text


_UPDATE = re.compile(r"\b(c(\d)(\d)) = \1 \+ (m\2) \* (n\3);")


def _explicit_fma(text: str) -> str:
    """Every dot-product update c_ij = c_ij + m_i * n_j as c_ij = fma(m_i, n_j, c_ij)
    (SgemmSize.fma); nothing else changes."""
    fused, count = _UPDATE.subn(r"\1 = fma(\4, \5, \1);", text)
    assert count and count % 64 == 0, count
    note = "// explicit fma: each update is c = fma(m, n, c), rounded once.\n"
    return fused.replace("machine blocks", note + "machine blocks", 1)


def _sgemm_text_plain(s: SgemmSize, head: str, allocs: str, decls: str, loop: str,
                      stores: str, small: bool) -> str:
    T = s.threads
    return f"""{head}machine blocks = {s.blocks}, threads = {T};

global A : float[{s.m * s.k}]{' = iota' if small else ''};
global B : float[{s.k * s.n}]{' = iota' if small else ''};
global AB : float[2]{' = [1.0, 0.0]' if small else ''};
global C : float[{s.m * s.n}];

main {{
  lower C into cg {{
    destruct {{
      let b : int @ block[1] = partition_id;
      partition cg into cb by {s.blocks} {{
        group {s.blocks} {{
          let ab : int @ block[1] = (b / {s.n // s.bn}) * {s.bm * s.k};
          let bb : int @ block[1] = (b % {s.n // s.bn}) * {s.bn};
{allocs}
{decls}
          let k0 : int @ block[1] = 0;
{loop}          lower cb into ct {{
            destruct {{
              let tw : int @ thread[1] = partition_id;
              partition ct into cp by {T} {{
                group {T} {{
{stores}
                }}
              }}
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""


def _stage(s: SgemmSize, a_arr: str, b_arr: str, k: str, tag: str) -> str:
    """Each thread copies its contiguous run of the A and B k-tiles into shared memory;
    both partitions nest (as the paper's variant does), so their barriers merge."""
    return _staging(s, a_arr, b_arr, tag, _stage_loops(s, k, tag))


def _stage_loops(s: SgemmSize, k: str, tag: str) -> str:
    """The copy loops of `_stage` (inside `_staging`'s partitions of As/Bs)."""
    return f"""                        let la{tag} : int @ thread[1] = 0;
                        while la{tag} < {s.load_a} {{
                          ap{tag}[la{tag}] = A[{_a_cell(s, f"ta{tag} * {s.load_a} + la{tag}", k)}];
                          la{tag} = la{tag} + 1;
                        }}
                        let lb{tag} : int @ thread[1] = 0;
                        while lb{tag} < {s.load_b} {{
                          bp{tag}[lb{tag}] = B[({k} + (ta{tag} * {s.load_b} + lb{tag}) / {s.bn}) * {s.n} + bb + (ta{tag} * {s.load_b} + lb{tag}) % {s.bn}];
                          lb{tag} = lb{tag} + 1;
                        }}
"""


def _a_cell(s: SgemmSize, i: str, k: str) -> str:
    """The A element that As[i] holds for the k-tile at `k` (block row base `ab`):
    row-major As[row * bk + d], or k-major As[d * bm + row]."""
    if s.kmajor_a:
        return f"ab + (({i}) % {s.bm}) * {s.k} + {k} + ({i}) / {s.bm}"
    return f"ab + (({i}) / {s.bk}) * {s.k} + {k} + ({i}) % {s.bk}"


def _compute(s: SgemmSize, a_arr: str, b_arr: str, tag: str) -> str:
    """The thread's 8 x 8 outer products over the k-tile (at thread[1])."""
    ind = " " * 20
    cols = [j + (s.bn // 2 - 4) * (j >= 4) for j in range(8)] if s.split_n else range(8)
    a_at = ([f"d{tag} * {s.bm} + ar{tag} + {i}" for i in range(8)] if s.kmajor_a
            else [f"ar{tag} + {i * s.bk} + d{tag}" for i in range(8)])
    regs = "\n".join([f"{ind}m{i} = {a_arr}[{at}];" for i, at in enumerate(a_at)]
                     + [f"{ind}n{j} = {b_arr}[db{tag} + {c}];" for j, c in enumerate(cols)])
    fmas = "\n".join(f"{ind}c{i}{j} = c{i}{j} + m{i} * n{j};" for i, j in _updates(s))
    return f"""            destruct {{
              let tc{tag} : int @ thread[1] = partition_id;
              group {s.threads} {{
                let ar{tag} : int @ thread[1] = (tc{tag} / {s.bn // 8}) * {8 if s.kmajor_a else 8 * s.bk};
                let bc{tag} : int @ thread[1] = (tc{tag} % {s.bn // 8}) * {4 if s.split_n else 8};
                let d{tag} : int @ thread[1] = 0;
                while d{tag} < {s.bk} {{
                  let db{tag} : int @ thread[1] = d{tag} * {s.bn} + bc{tag};
{regs}
{fmas}
                  d{tag} = d{tag} + 1;
                }}
              }}
            }}
"""


def _updates(s: SgemmSize) -> list[tuple[int, int]]:
    """(row, column) of the thread's 64 updates per k-step, in emission order:
    row by row, or zigzag down and up the columns (SgemmSize.zigzag)."""
    if s.zigzag:
        return [(i if j % 2 == 0 else 7 - i, j) for j in range(8) for i in range(8)]
    return [(i, j) for i in range(8) for j in range(8)]


def _fenced(compute: str, threads: int, tag: str = "") -> str:
    """`compute` inside a lower + partition of the block's C piece, only for the
    barrier at its end: the next k-tile overwrites As and Bs (a WAR race otherwise)."""
    body = compute.split("\n", 2)[2]  # drop `destruct {` and the partition_id line
    body = body.rsplit("            }\n", 1)[0]  # and the destruct's closing brace
    body = "\n".join(("    " + ln) if ln else ln for ln in body.split("\n"))
    return f"""            lower cb into cc{tag} {{                  // only for the barrier at its end:
              destruct {{                        // the next k-tile overwrites As, Bs
                let tc{tag} : int @ thread[1] = partition_id;
                partition cc{tag} into cq{tag} by {threads} {{
{body}                }}
              }}
            }}
"""


_SGEMM_SMALL_HEAD = """\
// sgemm_tiled_small: the interpreter-sized twin of the GPU SGEMM (rendered by
// gpusem.compiler.bench.programs; the same text with other sizes): the Prism paper's
// Appendix B.2 variant 3 (2D block tiling through shared memory, 8 x 8 results per
// thread), C = alpha * A @ B + beta * C with A 16 x 8, B 8 x 32, alpha = 1, beta = 0.
// expect: ok (fixed); ill-typed T-Partition-Id (paper)
// why: C is written in a tiled layout, because Bundl's partition gives each block and
// each thread a contiguous piece: C[((b * 4 + t) * 8 + i) * 8 + j] is the element at
// row (b / 2) * 16 + (t / 2) * 8 + i, column (b % 2) * 16 + (t % 2) * 8 + j.
"""


_SGEMM_DB_SMALL_HEAD = """\
// sgemm_tiled_db_small: sgemm_tiled_small.bundl with two As/Bs pairs used alternately
// (double buffering; rendered by gpusem.compiler.bench.programs): k-tile 2i is staged
// into As0/Bs0 and k-tile 2i+1 into As1/Bs1, so the only barrier a k-tile needs is the
// one ending its staging (the next write of a pair is behind the other pair's staging
// barrier, which every thread passes after its last read of the pair).
// expect: ok (fixed); ill-typed T-Partition-Id (paper)
// why: the same product as sgemm_tiled_small.bundl, in the same tiled layout
// (C[((b * 4 + t) * 8 + i) * 8 + j] is row (b / 2) * 16 + (t / 2) * 8 + i, column
// (b % 2) * 16 + (t % 2) * 8 + j), with the same order of float operations.
"""


def _sgemm_head(size: SgemmSize, small: bool, double_buffer: bool, prefetch: bool) -> str:
    if small:
        return {(False, False): _SGEMM_SMALL_HEAD, (True, False): _SGEMM_DB_SMALL_HEAD,
                (False, True): _SGEMM_PF_SMALL_HEAD,
                (True, True): _SGEMM_PFDB_SMALL_HEAD}[double_buffer, prefetch]
    return _sgemm_gpu_head(size, double_buffer, prefetch)


def _sgemm_gpu_head(size: SgemmSize, double_buffer: bool = False,
                    prefetch: bool = False) -> str:
    db = ("register-prefetched " if prefetch else "") + (
        "double-buffered " if double_buffer else "")
    twin = "sgemm_tiled" + ("_pf" if prefetch else "") + ("_db" if double_buffer
                                                          else "") + "_small"
    return (f"// sgemm_tiled: C = alpha * A @ B + beta * C, {size.m} x {size.n} x "
            f"{size.k}, {db}{size.bm} x {size.bn} x {size.bk} block tiles, 8 x 8 per "
            f"thread\n// (see {twin}.bundl; C in the tiled layout it describes).\n")


_SGEMM_PF_SMALL_HEAD = """\
// sgemm_tiled_pf_small: sgemm_tiled_small.bundl with register prefetching (rendered by
// gpusem.compiler.bench.programs): k-tile 0 is staged as before; then, for each
// further k-tile, every thread first loads its share of it from A and B into its
// registers r*, q* (thread-local lets), computes the current k-tile's outer products
// from As/Bs, passes the WAR barrier, and stores the registers into As/Bs (staging
// barrier); the last k-tile is computed after the loop. On a GPU the global loads are
// in flight during the arithmetic instead of in front of it.
// expect: ok (fixed); ill-typed T-Partition-Id (paper)
// why: C = A @ B with A 16 x 16, B 16 x 32 (sgemm_tiled_small.bundl with k = 16, so
// four k-tiles of 4), in the same tiled layout
// (C[((b * 4 + t) * 8 + i) * 8 + j] is row (b / 2) * 16 + (t / 2) * 8 + i, column
// (b % 2) * 16 + (t % 2) * 8 + j), with the same order of float operations.
"""


_SGEMM_PFDB_SMALL_HEAD = """\
// sgemm_tiled_pf_db_small: register prefetching (sgemm_tiled_pf_small.bundl) with two
// As/Bs pairs used alternately (rendered by gpusem.compiler.bench.programs): the
// registers holding k-tile i + 1 are stored into the pair k-tile i is NOT read from,
// so a k-tile needs only its staging barrier (a pair is next written after the other
// pair's staging barrier, which every thread passes after its last read of the pair).
// expect: ok (fixed); ill-typed T-Partition-Id (paper)
// why: C = A @ B with A 16 x 16, B 16 x 32 (sgemm_tiled_small.bundl with k = 16, so
// four k-tiles of 4), in the same tiled layout
// (C[((b * 4 + t) * 8 + i) * 8 + j] is row (b / 2) * 16 + (t / 2) * 8 + i, column
// (b % 2) * 16 + (t % 2) * 8 + j), with the same order of float operations.
"""


def _fetch_regs(s: SgemmSize, t: str, k: str, ind: str) -> str:
    """Thread `t`'s share of the k-tile at `k` into its registers r*, q*: the elements
    `_stage` copies, as one per-thread base (ga, gb) plus constant offsets, so nvcc
    keeps one address per matrix instead of one per element. Exact because a run of
    load_a elements starting at t * load_a stays in one row of the bm x bk tile or
    covers whole rows (SgemmSize.check): ((t*L + i) / bk, (t*L + i) % bk) =
    ((t*L) / bk + i / bk, (t*L) % bk + i % bk) for 0 <= i < L; k-major (kmajor_a),
    the run stays in one column (bm % L == 0), so element i is i rows below."""
    tag = t[2:]
    a = [f"{ind}r{i} = A[ga{tag} + {k} + {_a_offset(s, i)}];\n" for i in range(s.load_a)]
    b = [f"{ind}q{i} = B[gb{tag} + ({k}) * {s.n} + {(i // s.bn) * s.n + i % s.bn}];\n"
         for i in range(s.load_b)]
    rows, cols = (f"({t} * {s.load_a}) % {s.bm}", f"({t} * {s.load_a}) / {s.bm}") \
        if s.kmajor_a else (f"({t} * {s.load_a}) / {s.bk}", f"({t} * {s.load_a}) % {s.bk}")
    bases = (f"{ind}let ga{tag} : int @ thread[1] = ab + ({rows}) * {s.k} + {cols};\n"
             f"{ind}let gb{tag} : int @ thread[1] = bb + (({t} * {s.load_b}) / {s.bn}) * "
             f"{s.n} + ({t} * {s.load_b}) % {s.bn};\n")
    return bases + "".join(a + b)


def _a_offset(s: SgemmSize, i: int) -> int:
    """A offset of the i-th element of a thread's As run from its first (`ga`): the
    run is within one row (row-major; or whole rows) or one column (k-major)."""
    if s.kmajor_a:
        return i * s.k
    return (i // s.bk) * s.k + i % s.bk


def _store_regs(s: SgemmSize, a_arr: str, b_arr: str, tag: str, fetch: str = "") -> str:
    """The registers into the thread's runs of As/Bs (partitioned as in `_stage`);
    with `fetch` (a k offset), then that k-tile's share into the registers: the loads
    sit before the staging barrier, which nvcc does not move them across, so they
    are in flight during the next inner product instead of sunk to its end."""
    ind = " " * 24
    body = "".join([f"{ind}ap{tag}[{i}] = r{i};\n" for i in range(s.load_a)]
                   + [f"{ind}bp{tag}[{i}] = q{i};\n" for i in range(s.load_b)])
    if fetch:
        body += _fetch_regs(s, f"ta{tag}", fetch, ind)
    return _staging(s, a_arr, b_arr, tag, body)


def _stage_and_fetch(s: SgemmSize, a_arr: str, b_arr: str, tag: str, fetch: str) -> str:
    """`_stage` of k-tile 0 (from global memory), then k-tile `fetch` into registers."""
    body = _stage_loops(s, "k0", tag) + _fetch_regs(s, f"ta{tag}", fetch, " " * 24)
    return _staging(s, a_arr, b_arr, tag, body)


def _staging(s: SgemmSize, a_arr: str, b_arr: str, tag: str, body: str) -> str:
    T = s.threads
    return f"""            lower {a_arr} into al{tag} {{
              lower {b_arr} into bl{tag} {{
                destruct {{
                  let ta{tag} : int @ thread[1] = partition_id;
                  partition al{tag} into ap{tag} by {T} {{
                    partition bl{tag} into bp{tag} by {T} {{
                      group {T} {{
{body}                      }}
                    }}
                  }}
                }}
              }}
            }}
"""


def _prefetch_loop(s: SgemmSize, double_buffer: bool) -> tuple[str, str]:
    """(allocations, k-loop text) of the register-prefetched kernel (n = k / bk
    k-tiles, n >= 2; even with double buffering). k-tile 0 is staged from global
    memory and k-tile 1 fetched into registers; each loop step computes a k-tile,
    stores the registers (the next k-tile) and fetches the one after; the last two
    k-tiles are peeled, so no fetch reads past the k-tiles."""
    assert s.k // s.bk >= 2
    if not double_buffer:
        allocs = (f"          alloc As : float[{s.bm * s.bk}] in Shared;\n"
                  f"          alloc Bs : float[{s.bk * s.bn}] in Shared;")
        body = (_fenced(_compute(s, "As", "Bs", ""), s.threads)
                + _store_regs(s, "As", "Bs", "", f"k0 + {2 * s.bk}")
                + f"            k0 = k0 + {s.bk};\n")
        return allocs, (_outdent(_stage_and_fetch(s, "As", "Bs", "S", f"k0 + {s.bk}"))
                        + f"          while k0 < {s.k - 2 * s.bk} {{\n{body}          }}\n"
                        + _outdent(_fenced(_compute(s, "As", "Bs", "E"), s.threads, "E")
                                   + _store_regs(s, "As", "Bs", "E")
                                   + _compute(s, "As", "Bs", "L")))
    allocs = _pair_allocs(s)
    # pairs of k-tiles (even ones from pair 0, odd from pair 1); the last pair peeled
    body = (_compute(s, "As0", "Bs0", "0")
            + _store_regs(s, "As1", "Bs1", "1", f"k0 + {2 * s.bk}")
            + _compute(s, "As1", "Bs1", "1")
            + _store_regs(s, "As0", "Bs0", "0", f"k0 + {3 * s.bk}")
            + f"            k0 = k0 + {2 * s.bk};\n")
    return allocs, (_outdent(_stage_and_fetch(s, "As0", "Bs0", "S", f"k0 + {s.bk}"))
                    + f"          while k0 < {s.k - 2 * s.bk} {{\n{body}          }}\n"
                    + _outdent(_compute(s, "As0", "Bs0", "E")
                               + _store_regs(s, "As1", "Bs1", "E")
                               + _compute(s, "As1", "Bs1", "L")))


def _pair_allocs(s: SgemmSize) -> str:
    """Two As/Bs pairs (double buffering): As is bm x bk, Bs bk x bn."""
    return "\n".join(f"          alloc {x}{i} : float[{n}] in Shared;" for i in (0, 1)
                     for x, n in (("As", s.bm * s.bk), ("Bs", s.bk * s.bn)))


def _outdent(text: str) -> str:
    """Blocks written for the loop body (12 spaces), placed outside it (10)."""
    return "\n".join(ln.removeprefix("  ") for ln in text.split("\n"))
