"""The reference semantics of CKernel on hand-written kernels, each expected value
derived by hand from C's rules (C11 6.5.5 division, 6.3.1.3 conversions, 6.5.7 shifts
as the emitter masks them) and CUDA's (shuffles, atomics, bit intrinsics)."""

from __future__ import annotations

import numpy as np
import pytest

from gpusem.calculus.ckernel.parser import parse_kernel
from gpusem.calculus.errors import IllTyped
from gpusem.interpreter.ckernel.inputs import initial_memory
from gpusem.interpreter.ckernel.machine import run_kernel
from gpusem.typing_rules.ckernel.wellformed import check_kernel
from tests.ckernel.kernels import EXCHANGE, HEAD, T1, one


def slot0(k) -> list[int]:
    check_kernel(k)
    return [int(v) for v in run_kernel(k).memory["st"][0::4]]


@pytest.mark.parametrize("expr, want", [
    ("(/ -7:i32 2)", -3), ("(% -7:i32 2)", -1), ("(/ 7:i32 -2)", -3),
    ("(% 7:i32 -2)", 1), ("(/ -2147483648:i32 2)", -1073741824),
    ("(% -2147483648:i32 3)", -2), ("(/ -9:i32 -4)", 2), ("(% -9:i32 -4)", -1),
    ("(cast i32 (/ 4294967295:u32 16))", 268435455),
    ("(cast i32 (% 4294967295:u32 10))", 5),
    ("(cast i32 (/ -9223372036854775808:i64 -2))", 0),  # 2**62 truncated to 32 bits
    ("(cast i32 (% -9223372036854775807:i64 1000))", -807),
])
def test_division_truncates_toward_zero(expr: str, want: int) -> None:
    assert slot0(one(expr)) == [want] * 32


@pytest.mark.parametrize("expr, want", [
    ("(+ 2147483647:i32 1:i32)", -2147483648),
    ("(* 65536:i32 65536:i32)", 0),
    ("(* 65535:i32 65537:i32)", -1),  # 2**32 - 1
    ("(neg -2147483648:i32)", -2147483648),
    ("(cast i32 (cast i16 40000:i32))", 40000 - 65536),
    ("(cast i32 (cast u16 -1:i32))", 65535),
    ("(cast i32 (cast i64 -5:i32))", -5),
    ("(cast i32 (cast u64 -1:i32))", -1),
    ("(cast i32 (* 4294967296:i64 3:i64))", 0),
    ("(cast i32 (>> (cast i64 -1:i32) 40:i64))", -1),
])
def test_ints_wrap_and_convert_as_c(expr: str, want: int) -> None:
    assert slot0(one(expr)) == [want] * 32


@pytest.mark.parametrize("expr, want", [
    ("(<< 1:i32 33:i32)", 2), ("(>> -8:i32 1:i32)", -4), ("(>> -8:i32 33:i32)", -4),
    ("(cast i32 (>> 4294967288:u32 1:u32))", 2147483644),
    ("(<< 1:i32 31:i32)", -2147483648), ("(<< -1:i32 -1:i32)", -2147483648),
    ("(popc 4294967295:u32)", 32), ("(clz 1:i32)", 31), ("(clz 0:i32)", 32),
    ("(clz -1:i32)", 0), ("(cast i32 (brev 1:u32))", -2147483648),
    ("(cast i32 (brev 6:u32))", 0x60000000), ("(abs (>> -9:i32 1:i32))", 5),
    ("(min -3:i32 2:i32)", -3), ("(cast i32 (max 4294967295:u32 1:u32))", -1),
])
def test_shifts_masked_and_bit_intrinsics(expr: str, want: int) -> None:
    assert slot0(one(expr)) == [want] * 32


def test_shuffles_read_the_source_lane() -> None:
    assert slot0(one("(shfl (* lane 10:i32) 1)")) == [
        ((t + 1) % 32) * 10 for t in range(32)]
    assert slot0(one("(shflx lane 16)")) == [t ^ 16 for t in range(32)]


@pytest.mark.parametrize("op, value, want", [
    ("add", "(+ 2147483600:i32 tid)", (32 * 2147483600 + 496 + 2**31) % 2**32 - 2**31),
    ("min", "(- 5:i32 tid)", -26), ("max", "(- 5:i32 tid)", 5),
    ("and", "(| tid 64:i32)", 0), ("or", "(<< 1:i32 tid)", -1),
    ("xor", "tid", 0),
])
def test_atomics_reduce_schedule_independently(op: str, value: str, want: int) -> None:
    k = parse_kernel(HEAD + "{\n  atomic " + op + " acc 5 = " + value + ";\n}\n")
    check_kernel(k)
    assert int(run_kernel(k).memory["acc"][5]) == want


def test_t1_branch_reads_the_arm_each_thread_takes() -> None:
    k = parse_kernel(T1, "t1.ck")
    check_kernel(k)
    x0 = initial_memory(k)["x0"]
    st = run_kernel(k).memory["st"]
    for t in range(32):
        want = int(x0[4 * t + 1]) if t & 1 else 3 * t
        assert st[4 * t] == want
        assert st[4 * t + 2] == (int(x0[4 * t + 1]) if t < 4 else 3 * t)


def test_exchange_reads_the_neighbour_after_the_barrier() -> None:
    k = parse_kernel(EXCHANGE, "x.ck")
    check_kernel(k)
    assert [int(v) for v in run_kernel(k).memory["st"][0::4]] == [
        ((t + 1) % 32) * 10 for t in range(32)]


def test_floats_round_once_per_operation() -> None:
    head = HEAD.replace("param acc", "param of rw f32\nparam acc")
    text = head + "{\n  store of (own 0) = (+ (* 3.0:f32 0.1:f32) 0.0:f32);\n}\n"
    with pytest.raises(IllTyped):  # 0.1 is no float32: the literal is refused
        check_kernel(parse_kernel(text))
    text = head + ("{\n  store of (own 0) = (- (* 16777215.0:f32 3.0:f32) "
                   "50331644.0:f32);\n}\n")
    k = parse_kernel(text)
    check_kernel(k)
    # 16777215 * 3 = 50331645 rounds to 50331644 in binary32 (an FMA would give 1)
    assert set(run_kernel(k).memory["of"][0::4].tolist()) == {0.0}


@pytest.mark.parametrize("body, rule", [
    ("if (< tid 3:i32) { store st (own 0) = (shfl tid 1); } else { }", "Shfl-Converged"),
    ("store st (own 0) = (sel tid (shfl tid 1) 0:i32);", "Shfl-Converged"),
    ("for i in 2 { sync; }", "Sync-TopLevel"),
    ("store s0 (own 0) = tid;\n  store st (own 0) = (load s0 (nbr 1 0));",
     "Shared-Ordered"),
    ("store st (own 0) = (load s0 (own 1));", "Shared-Init"),
    (("store s0 (own 0) = tid; sync;\n  store st (own 0) = (load s0 (nbr 1 0));\n"
     "  store s0 (own 0) = 1:i32;"), "Shared-WAR"),
    ("store st (own 0) = (/ tid -1);", "DivC-Defined"),
    ("store st (own 0) = (% tid 0);", "DivC-Defined"),
    ("atomic add acc 0 = 1:i32;\n  atomic xor acc 1 = 1:i32;", "Atomic-Commutes"),
    ("store st (own 0) = (load acc (own 0));", "Atomic-Commutes"),
    ("store st (own 0) = (abs tid);", "Abs-Defined"),
    ("store st (own 0) = (load st (mask tid));", "Load-Own"),
    ("store st (own 0) = (ldg st (own 0));", "Ldg-ReadOnly"),
    ("store st (own 0) = (+ tid 1:u32);", "T-Binary"),
])
def test_ill_formed_kernels_are_rejected_by_their_rule(body: str, rule: str) -> None:
    with pytest.raises(IllTyped) as err:
        check_kernel(parse_kernel(HEAD + "{\n  " + body + "\n}\n", "bad.ck"))
    assert err.value.rule == rule


def test_inputs_are_a_function_of_the_seed() -> None:
    k = parse_kernel(T1)
    a, b = initial_memory(k), initial_memory(k)
    assert all(np.array_equal(a[n], b[n]) for n in a)
    assert np.abs(a["x0"]).max() <= 100  # read-only cells stay small (dead guards)


def test_vector_store_reads_its_operands_before_writing() -> None:
    """make_int2(5, st[own 0]) is evaluated before the store: cell 1 gets the OLD
    value of cell 0 (a reference bug the generator found: it wrote component 0 first)."""
    k = parse_kernel(HEAD + "{\n  vstore st 0 = (5:i32, (load st (own 0)));\n}\n")
    check_kernel(k)
    before = initial_memory(k)["st"]
    after = run_kernel(k).memory["st"]
    assert (after[0::4] == 5).all()
    assert (after[1::4] == before[0::4]).all() and not (before[0::4] == 5).all()
