"""The benchmark programs of issue 4 ("Speed of what it emits"), as Bundl text.

Each benchmark is one template rendered at two sizes: the small twin committed under
`examples/bundl/bench/` (which the interpreter runs in CI, so the conformance runner and
the cpu backend check it) and the GPU size the harness compiles (2^26 floats for the
reduction, 4096^3 for SGEMM). The two texts differ only in their numbers: a test renders
the small parameters and compares with the committed twin byte for byte.

Note: the GPU-size texts are rendered, not committed as `.bundl` files, because the
example runners (`tests/bundl/test_conformance.py`, `tests/compiler/test_bundl_examples
.py`) interpret every `examples/bundl/**/*.bundl`, and the interpreter initialises
globals in Python (2^26 cells). `python -m gpusem.compiler.bundl_cuda.bench.programs DIR` writes
them out.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

# The SGEMM template lives in sgemm.py; its names are part of this module's interface.
from gpusem.compiler.bundl_cuda.bench.sgemm import (  # noqa: F401
    SGEMM_GPU,
    SGEMM_GPU_BK16,
    SGEMM_GPU_BK16_KA_SPLIT,
    SGEMM_GPU_BK16_SPLIT,
    SGEMM_GPU_BM64,
    SGEMM_GPU_BM64_SPLIT,
    SGEMM_GPU_KA_SPLIT,
    SGEMM_GPU_KA_ZZ_SPLIT,
    SGEMM_GPU_SPLIT,
    SGEMM_GPU_ZZ_SPLIT,
    SGEMM_SMALL,
    SGEMM_SMALL_PF,
    SgemmSize,
    sgemm_tiled,
)

BENCH_DIR = Path(__file__).resolve().parents[5] / "examples" / "bundl" / "bench"


@dataclass(frozen=True, slots=True)
class ReduceSize:
    """blocks x threads threads; each thread folds `per_thread` elements into eight
    accumulators (so per_thread is a multiple of 8); threads a power of 4, so the
    shared-memory tree has an even number of levels and ends in s0."""

    blocks: int
    threads: int
    per_thread: int

    @property
    def chunk(self) -> int:  # elements per block
        return self.threads * self.per_thread

    @property
    def n(self) -> int:
        return self.blocks * self.chunk

    def check(self) -> None:
        levels = self.threads.bit_length() - 1
        assert self.threads == 1 << levels and levels % 2 == 0, self
        assert self.per_thread % 8 == 0, self


REDUCE_SMALL = ReduceSize(blocks=2, threads=16, per_thread=16)
REDUCE_GPU = ReduceSize(blocks=2048, threads=256, per_thread=128)  # 2^26 floats
# The second pass over REDUCE_GPU's 2048 partial sums (one block).
REDUCE_FINAL = ReduceSize(blocks=1, threads=256, per_thread=8)
# The harness also measures a finer grid (less wave-quantisation tail on 132 SMs).
REDUCE_GPU_FINE = ReduceSize(blocks=4096, threads=256, per_thread=64)
REDUCE_FINAL_FINE = ReduceSize(blocks=1, threads=256, per_thread=16)
# label -> (the block reduction, the final pass over its partial sums)
REDUCE_VARIANTS = {"b2048": (REDUCE_GPU, REDUCE_FINAL),
                   "b4096": (REDUCE_GPU_FINE, REDUCE_FINAL_FINE)}


def reduce_sum(size: ReduceSize, small: bool = False) -> str:
    size.check()
    t, c = size.threads, size.chunk
    acc_decl = "\n".join(f"                  let a{j} : float @ thread[1] = 0.0;"
                         for j in range(8))
    acc_step = "\n".join(
        f"                    a{j} = a{j} + X[base + k{f' + {j * t}' if j else ''}];"
        for j in range(8))
    head = _REDUCE_SMALL_HEAD if small else _reduce_gpu_head(size)
    return f"""{head}machine blocks = {size.blocks}, threads = {t};

global X : float[{size.n}]{' = iota' if small else ''};
global out : float[{size.blocks}];

main {{
  lower out into ob {{
    destruct {{
      let b : int @ block[1] = partition_id;
      partition ob into o by {size.blocks} {{
        group {size.blocks} {{
          alloc s0 : float[{t}] in Shared;
          alloc s1 : float[{t}] in Shared;
          lower s0 into st {{
            destruct {{
              let t : int @ thread[1] = partition_id;
              partition st into p by {t} {{
                group {t} {{
                  let base : int @ thread[1] = b * {c} + t;
{acc_decl}
                  let k : int @ thread[1] = 0;
                  while k < {c} {{
{acc_step}
                    k = k + {8 * t};
                  }}
                  p[0] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
                }}
              }}
            }}
          }}
          let h : int @ block[1] = {t // 2};
          while h > 0 {{
            lower s1 into st1 {{
              destruct {{
                let t1 : int @ thread[1] = partition_id;
                partition st1 into p1 by {t} {{
                  group {t} {{
                    if t1 < h {{
                      p1[0] = s0[t1] + s0[t1 + h];
                    }}
                  }}
                }}
              }}
            }}
            h = h / 2;
            lower s0 into st0 {{
              destruct {{
                let t0 : int @ thread[1] = partition_id;
                partition st0 into p0 by {t} {{
                  group {t} {{
                    if t0 < h {{
                      p0[0] = s1[t0] + s1[t0 + h];
                    }}
                  }}
                }}
              }}
            }}
            h = h / 2;
          }}
          o[0] = s0[0];
        }}
      }}
    }}
  }}
}}
"""


_REDUCE_SMALL_HEAD = """\
// reduce_sum_small: the interpreter-sized twin of the GPU reduction (rendered by
// gpusem.compiler.bench.programs; the same text with other sizes): each block sums
// its contiguous chunk of X into out[b].
// expect: ok (fixed); ill-typed T-Partition-Id (paper)
// sizes: blocks = 2, threads = 16, chunk = 256 elements per block (16 per thread)
// why: thread t of block b folds X[b*256 + i*128 + j*16 + t] (i = 0..1, j = 0..7) into
// accumulator j, left to right from 0.0; the eight accumulators are combined
// pairwise; then a tree over the block's threads in shared memory (ping-pong between
// s0 and s1 so no level reads a slot another thread writes) leaves the block sum in
// s0[0] (log2 16 = 4 levels, an even number, as log2 256 = 8 on the GPU).
// With X = iota the block sums are exact integers: sum(0..255) = 32640 and
// sum(256..511) = 256 * 256 + 32640 = 98176.
// output: out = [32640.0, 98176.0]
"""


def _reduce_gpu_head(size: ReduceSize) -> str:
    return (f"// reduce_sum: {size.n} floats, {size.blocks} blocks x {size.threads} "
            f"threads, {size.per_thread} elements per thread;\n"
            "// out[b] = the sum of block b's chunk (see reduce_sum_small.bundl).\n")


def write_gpu_programs(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name, text in gpu_programs().items():
        path = directory / f"{name}.bundl"
        path.write_text(text)
        out.append(path)
    return out


def gpu_programs() -> dict[str, str]:
    out = {}
    for label, (size, final) in REDUCE_VARIANTS.items():
        out[f"reduce_sum_{label}"] = reduce_sum(size)
        out[f"reduce_sum_{label}_final"] = reduce_sum(final)
    out["sgemm_tiled"] = sgemm_tiled(SGEMM_GPU)
    out["sgemm_tiled_bk16"] = sgemm_tiled(SGEMM_GPU_BK16)
    out["sgemm_tiled_db"] = sgemm_tiled(SGEMM_GPU, double_buffer=True)
    out["sgemm_tiled_pf"] = sgemm_tiled(SGEMM_GPU, prefetch=True)
    out["sgemm_tiled_pf_db"] = sgemm_tiled(SGEMM_GPU, prefetch=True, double_buffer=True)
    return out


def small_twins() -> dict[str, str]:
    """The committed interpreter-sized twins, as rendered (file stem -> text)."""
    return {"reduce_sum_small": reduce_sum(REDUCE_SMALL, small=True),
            "sgemm_tiled_small": sgemm_tiled(SGEMM_SMALL, small=True),
            "sgemm_tiled_db_small": sgemm_tiled(SGEMM_SMALL, small=True,
                                                double_buffer=True),
            "sgemm_tiled_pf_small": sgemm_tiled(SGEMM_SMALL_PF, small=True,
                                                prefetch=True),
            "sgemm_tiled_pf_db_small": sgemm_tiled(SGEMM_SMALL_PF, small=True,
                                                   prefetch=True, double_buffer=True)}


if __name__ == "__main__":
    for p in write_gpu_programs(Path(sys.argv[1] if len(sys.argv) > 1 else ".")):
        print(p)
