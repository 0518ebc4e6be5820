"""The wgmma model (calculus/prism/intrinsics.py, B.5): on one warpgroup, each lane's
accumulators hold the elements of D = A B^T that the PTX ISA's register layout of
wgmma m64nNk16 gives it (the expectation is computed here from that table, not from
a run), and the intrinsic is refused outside warpgroup code."""

from __future__ import annotations

import random

import pytest
from gpusem.api.prism import parse
from gpusem.calculus.errors import GpusemError
from gpusem.interpreter.bundl.big_step import run_big_step
from gpusem.typing_rules.bundl.stmt import check_program

N = 16


def program(a: list[int], b: list[int], code: str = "warp[4]") -> str:
    call = f"intrinsic.wgmma(A[0], B[0], 1, 1, 1, 0, 0, out=[d[0]], n={N}, ld=16)"
    return f"""# launch: k blocks=1 threads=128
# arg A = float[{64 * 16}] {a}
# arg B = float[{N * 16}] {b}
# arg O = float[{128 * N // 2}]
@prism("global")
@requires(grid[1], block[1], warp[4])
def k(A: ptr(const(float)) @ grid[1], B: ptr(const(float)) @ grid[1],
      O: ptr(float) @ grid[1]):
    with group(grid[1]):
        with partition(O, dimension=block[1], offset=0) as O_b:
            with group(block[1]):
                d : float[{N // 2}] @ thread[1]
                lane : int @ thread[1] = id()
                with partition(O_b, dimension=thread[1], offset=0) as o_t:
                    with group({code}):
                        {call}
                        {call}
                        with group(thread[1]):
                            for e in range(0, {N // 2}, 1):
                                o_t[lane * {N // 2} + e] = d[e]
"""


def test_each_lane_holds_its_elements_of_the_product():
    rnd = random.Random(7)
    a = [rnd.randint(-3, 3) for _ in range(64 * 16)]
    b = [rnd.randint(-3, 3) for _ in range(N * 16)]
    prog = parse(program(a, b), "wgmma.prism")
    check_program(prog)
    res = run_big_step(prog)
    assert res.kind == "terminated", res.message
    want = []
    for lane in range(128):
        w, g, t = lane // 32, lane % 32 // 4, lane % 4
        for j in range(N // 16):
            for e in range(8):
                r = 16 * w + g + 8 * (e // 2 % 2)
                c = 16 * j + 2 * t + e % 2 + 8 * (e // 4)
                # two calls with scale_d = 1 from zeroed registers: 2 A B^T
                want.append(2 * sum(a[r * 16 + k] * b[c * 16 + k] for k in range(16)))
    assert res.globals["O"] == want


def test_wgmma_needs_warpgroup_code():
    with pytest.raises(GpusemError) as e:
        parse(program([0] * 1024, [0] * 256, code="warp[1]"), "wgmma.prism")
    assert e.value.rule == "Intrinsic-Wgmma"
