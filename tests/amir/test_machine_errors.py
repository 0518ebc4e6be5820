"""Malformed AMIR and runaway programs: BadInput (exit 2) / Trap / BudgetExhausted, each
with its stable message prefix and rule (never a verdict, never a traceback)."""

from __future__ import annotations

import pytest
from gpusem.calculus.amir.parser import parse_proc
from gpusem.calculus.errors import BadInput, BudgetExhausted, Trap
from gpusem.interpreter.amir.machine import check_amir


def run(src: str, defines=None, **kw):
    return check_amir(parse_proc(src, "e.amir"), defines or {}, **kw)


def test_missing_definition():
    with pytest.raises(BadInput, match="missing definition: -D N"):
        run("proc p(N):\n    IncTaskID\n")


def test_unbound_control_variable():
    with pytest.raises(BadInput, match="unbound control variable: k"):
        run("proc p():\n    ClearReads(x[k])\n")


def test_rank_mismatch():
    src = "proc p():\n    Alloc(x[4])\n    ClearReads(x[0, 1])\n"
    with pytest.raises(BadInput, match="access: x has 1 dimensions"):
        run(src)


def test_out_of_bounds_is_a_trap():
    with pytest.raises(Trap) as err:
        run("proc p():\n    Alloc(x[4])\n    ClearReads(x[4])\n")
    assert err.value.prefix == "out of bounds" and err.value.rule == "E#-Acc"


def test_negative_index_is_a_trap_even_unallocated():
    with pytest.raises(Trap, match="out of bounds"):
        run("proc p():\n    ClearReads(g[0 - 1])\n")


def test_unallocated_variables_grow():
    src = ("proc p():\n"
           "    RecordMutate(fully_ordered, false, g[1000, 3], cuda2, {}, {}) @ threads(0)\n"  # noqa: E501
           "    CheckMutates(fully_ordered, false, g[990:1001, 0:4], {cuda2}) @ threads(1)\n")  # noqa: E501
    v = run(src).violation
    assert v is not None and v.index == (1000, 3)


def test_arrive_without_home_barrier():
    src = ("proc p():\n    Alloc(z[2], barrier)\n"
           "    Arrive(true, {cuda2}, {z[0], z[1]}) @ threads(0)\n")
    with pytest.raises(BadInput, match="arrive: no unique home barrier"):
        run(src)


def test_arrive_on_a_mixed_window_has_no_unique_home():
    """E#-Acc: z[0, 0:2] is the product {0} x {0, 1}, two cells: no unique home
    (it used to crash with an AttributeError on the point coordinate)."""
    src = ("proc p():\n    Alloc(z[2, 4], barrier)\n"
           "    Arrive(true, {cuda2}, {z[0, 0:2]}) @ threads(0)\n")
    with pytest.raises(BadInput, match="arrive: no unique home barrier"):
        run(src)


def test_await_on_a_window():
    src = ("proc p():\n    Alloc(z[2], barrier)\n"
           "    Await(z[0:2], {}, {}, 0) @ threads(0)\n")
    with pytest.raises(BadInput, match="await: z must name one barrier cell"):
        run(src)


def test_check_barrier_on_data():
    with pytest.raises(BadInput):
        run("proc p():\n    Alloc(x[2])\n    CheckBarrier(x[0])\n")


def test_division_by_zero_in_control():
    with pytest.raises(BadInput, match="division by zero"):
        run("proc p(N):\n    ClearReads(x[4 / N])\n", {"N": 0})


def test_c_division_truncates():
    # -7 / 2 = -3 and -7 % 2 = -1 in C: the access lands on x[3 - 3 + 1] = x[1]
    src = ("proc p():\n"
           "    RecordMutate(fully_ordered, false, x[0 - 7 / 2 + 0 - 7 % 2 + 5], cuda2, "  # noqa: E501
           "{}, {}) @ threads(0)\n"
           "    CheckMutates(fully_ordered, false, x[1], {cuda2}) @ threads(1)\n")
    v = run(src).violation
    assert v is not None and v.index == (1,)


def test_step_budget():
    src = ("proc p(N):\n    for i in loop(0, N):\n        for j in loop(0, N):\n"
           "            IncTaskID\n")
    with pytest.raises(BudgetExhausted) as err:
        run(src, {"N": 10_000}, max_steps=100_000)
    assert err.value.prefix == "step budget exhausted" and err.value.rule == "LoopStep"
    assert err.value.exit_code == 2


def test_negative_thread_index():
    with pytest.raises(BadInput, match="thread mapping"):
        run("proc p():\n    Fence(true, {}, {}, {}) @ threads(0 - 1)\n")
