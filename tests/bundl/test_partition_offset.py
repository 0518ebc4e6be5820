"""Our extension T-Partition-Offset / S-Partition-Offset (errata "Extension: partition
at an offset"): `partition x into y by c at e { s }` gives each piece of (h, n/c) the
view x + e, e evaluated at the piece's perspective. Prism's surface needs it for
`partition(x, dimension=π, offset=e)` (Sec 3.4.2, Appendix B).

Expected memories are computed here from the rule (NumPy), never copied from a run.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.printer import print_program
from gpusem.calculus.errors import IllTyped
from gpusem.fuzz.bundl.compile_property import check_program as compile_check
from gpusem.interpreter.bundl.big_step import run_big_step
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program

# Block b sees A from 8b (a block-level offset partition); thread t of it writes
# y[0] = t + 1 and y[1] = 10 (t + 1) at its offset OFF(t) inside the block's view.
PROGRAM = """machine blocks = 2, threads = 4;
global A : int[16];
main {{
  lower A into a {{ destruct {{
    partition a into ab by 2 at partition_id * 8 {{ group 2 {{
      lower ab into at {{ destruct {{
        let t : int @ thread[1] = partition_id;
        partition at into y by 4 at {off} {{ group 4 {{
          y[0] = t + 1;
          y[1] = 10 * (t + 1);
        }} }}
      }} }}
    }} }}
  }} }}
}}
"""


def expected(off) -> list[int]:
    a = np.zeros(16, np.int64)
    for b in range(2):
        for t in range(4):
            base = 8 * b + off(t)
            a[base], a[base + 1] = t + 1, 10 * (t + 1)
    return a.tolist()


def program(off: str):
    return parse_program(PROGRAM.format(off=off), "t.bundl")


@pytest.mark.parametrize(("text", "off"), [
    ("6 - 2 * t", lambda t: 6 - 2 * t),   # reversed pairs
    ("2 * t", lambda t: 2 * t),           # the paper's plain chunks, as an offset
])
def test_s_partition_offset_small_and_big_step(text, off):
    prog = program(text)
    check_program(prog)
    small = run_program(prog, "rr")
    assert small.kind == "terminated", small.message
    assert small.globals["A"] == expected(off)
    seen: set[str] = set()
    run_program(prog, "random:3", seen=seen)
    assert "S-Partition-Offset" in seen
    big = run_big_step(prog)
    assert big.globals["A"] == expected(off)


def test_offset_past_the_array_stops_in_the_rule():
    # block 1, thread 0: offset 9 > 8, the length of block 1's view (A from 8): the
    # rule's premise 0 <= v <= len fails (reported as other out-of-bounds accesses)
    out = run_program(program("9 - 2 * t"), "rr")
    assert out.kind in ("stuck", "trap")
    assert out.message.startswith("out of bounds: partition offset 9"), out.message


def test_t_partition_offset_types_e_at_the_piece():
    # a float offset is ill-typed
    with pytest.raises(IllTyped) as e:
        check_program(program("1.5"))
    assert e.value.rule == "T-Partition-Offset"
    # a thread[1] variable read at the piece (block[1]) would give one block's
    # threads different views of "the" piece: rejected by read up (T-Var)
    bad = PROGRAM.replace("at partition_id * 8", "at q").replace(
        "  lower A into a {{ destruct {{",
        "  lower A into a {{ destruct {{ let q : int @ thread[1] = 0;", 1)
    with pytest.raises(IllTyped) as e:
        check_program(parse_program(bad.format(off="t"), "t.bundl"))
    assert e.value.rule == "T-Var"


def test_print_parse_round_trip_keeps_the_offset():
    prog = program("6 - 2 * t")
    assert parse_program(print_program(prog), "u.bundl") == prog
    assert "by 4 at 6 - 2 * t" in print_program(prog)


def test_compiled_offset_partition_agrees_on_cpu():
    v = compile_check(program("6 - 2 * t"), "cpu", (0, 1, 2, 3))
    assert v.agree, (v.kind, v.message)
