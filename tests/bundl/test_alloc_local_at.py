"""Our extension T-Alloc-Local-At / S-Alloc-Local-At (errata "Extension: Local arrays
at a declared perspective"): `alloc r : τ[n] @ π' in Local` at code π ≥ π' gives each
thread its own array, bound at π', as T-Decl binds a scalar. Prism's surface needs it
for `threadResults : float[64] @ thread[1]` declared at block[1] and written, across
several `group(thread[1])`, by each thread (Appendix B.2 kernels 3 and 4).

Expected memories are computed here from the rule, never copied from a run.
"""

from __future__ import annotations

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.printer import print_program
from gpusem.calculus.errors import IllTyped
from gpusem.fuzz.bundl.compile_property import check_program as compile_check
from gpusem.interpreter.bundl.big_step import run_big_step
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program

# Two separate thread[1] regions share the block-level declaration of r: thread t
# stores 3t + 1 into r[1] in the first, the second adds r[1] + t into out[t].
PROGRAM = """machine blocks = 1, threads = 4;
global out : int[4];
main {{
  lower out into ob {{ destruct {{ group 1 {{
    alloc r : int[2] {at} in Local;
    let t : int @ thread[1] = partition_id;
    destruct {{ group 4 {{ r[1] = 3 * t + 1; }} }}
    lower ob into ot {{ destruct {{ partition ot into o by 4 {{ group 4 {{
      o[0] = r[1] + t;
    }} }} }} }}
  }} }} }}
}}
"""


def test_alloc_local_at_keeps_one_array_per_thread_across_regions():
    prog = parse_program(PROGRAM.format(at="@ thread[1]"), "t.bundl")
    check_program(prog)
    want = [3 * t + 1 + t for t in range(4)]
    seen: set[str] = set()
    small = run_program(prog, "random:5", seen=seen)
    assert small.kind == "terminated", small.message
    assert small.globals["out"] == want and "S-Alloc-Local-At" in seen
    assert run_big_step(prog).globals["out"] == want
    v = compile_check(prog, "cpu", (0, 1, 2, 3))
    assert v.agree, (v.kind, v.message)


def test_without_the_perspective_the_write_is_rejected():
    # the paper's T-Alloc binds r at the code's block[1]: thread[1] code may not
    # write it (write down)
    with pytest.raises(IllTyped) as e:
        check_program(parse_program(PROGRAM.format(at=""), "t.bundl"))
    assert e.value.rule == "T-Arr-Assn"


@pytest.mark.parametrize(("at", "mem", "msg"), [
    ("@ block[2]", "Local", "perspective mismatch"),   # broader than the code: no
    ("@ thread[1]", "Global", "bad alloc"),            # only Local takes one
])
def test_t_alloc_local_at_premises(at, mem, msg):
    src = PROGRAM.format(at=at).replace("in Local", f"in {mem}")
    with pytest.raises(IllTyped) as e:
        check_program(parse_program(src, "t.bundl"))
    assert e.value.rule == "T-Alloc-Local-At" and e.value.prefix == msg


def test_print_parse_round_trip_keeps_the_perspective():
    prog = parse_program(PROGRAM.format(at="@ thread[1]"), "t.bundl")
    assert parse_program(print_program(prog), "u.bundl") == prog
    assert "alloc r : int[2] @ thread[1] in Local;" in print_program(prog)
