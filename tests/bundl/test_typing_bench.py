"""Benchmarks of the Bundl type checker (pytest-benchmark).

The interpreter's preservation check (STYLE 15) re-types the current statement of a
thread after every step, so `check_stmt` speed bounds how fast a checked run goes.
Run: `python -m pytest tests/bundl/test_typing_bench.py --benchmark-only`.
"""

from __future__ import annotations

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.perspective import GRID1
from gpusem.typing_rules.bundl.stmt import check_program, check_stmt, program_context

# A block-wide tree reduction through shared memory, B = 4, T = 128.
REDUCE = """machine blocks = 4, threads = 128;
global A : int[512] = iota;
global out : int[4];
main {
  lower out into ob { destruct { partition ob into o by 4 { group 4 {
    alloc s : int[128] in Shared;
    lower s into st { destruct { partition st into mine by 128 { group 128 {
      let i : int @ thread[1] = partition_id;
      mine[0] = A[i];
    } } } }
    let stride : int @ block[1] = 64;
    while stride > 0 {
      lower s into st2 { destruct { partition st2 into cell by 128 { group 128 {
        let k : int @ thread[1] = partition_id;
        if k < stride { cell[0] = cell[0] + cell[stride]; }
      } } } }
      stride = stride / 2;
    }
    o[0] = s[0];
  } } } }
}
"""


@pytest.mark.benchmark
def test_bench_check_program_block_reduce(benchmark):
    prog = parse_program(REDUCE, "reduce.bundl")
    uses = benchmark.pedantic(check_program, (prog,), rounds=300, warmup_rounds=10)
    assert uses["main"] == 512  # 128 ints of shared memory


@pytest.mark.benchmark
def test_bench_check_stmt_main(benchmark):
    prog = parse_program(REDUCE, "reduce.bundl")
    ctx = program_context(prog)
    args = (ctx, GRID1, prog.main, "fixed", prog.machine)
    assert benchmark.pedantic(check_stmt, args, rounds=300, warmup_rounds=10) == 512
