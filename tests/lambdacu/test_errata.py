"""Each erratum of lambda-cu (proofs_notes/errata.md, "lambda-cu") pinned: the rule as
printed (its `RuleSet` flag off, every other flag as `fixed`) against the corrected
one, on a program whose value is worked out by hand here. `paper` and `fixed` differ
exactly by these flags (test_every_flag_is_an_erratum_with_its_test)."""

import dataclasses
from pathlib import Path

import pytest
from gpusem.calculus.errors import Stuck
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.calculus.lambdacu.values import I32, Arr
from gpusem.interpreter.lambdacu.machine import evaluate
from gpusem.interpreter.lambdacu.rules import FIXED, PAPER, RuleSet

ERRATA = Path(__file__).resolve().parents[2] / "proofs_notes" / "errata.md"


def printed(flag):
    """`fixed` with one rule as printed."""
    return dataclasses.replace(FIXED, **{flag: False})


def run(text, rules=FIXED):
    return evaluate(parse_program(text, "e.lcu"), rules)


def stuck_at(text, rules):
    with pytest.raises(Stuck) as err:
        run(text, rules)
    return err.value


def ints(*xs):
    return Arr("int", tuple(I32(x) for x in xs))


def k1(body, ret="[int]", xs="[10, 20, 30, 40]", extra="", args="xs"):
    return (f"kernel k(xs: [int]{extra}) -> {ret} {{\n{body}\n}}\n"
            f"function main() -> {ret} {{ let (xs) = {xs} in run k({args}) }}")


SQ = ("function sq(x: int) -> int { let (y) = mul x x in y }\n"
      "function main() -> int { let (r) = sq(7) in r }")


def test_L1_let_exp_keeps_rhs_env():
    # sq(7) = 49; as printed, the rhs's `let (y)` binds into a V' that CPU-LET-EXP drops
    assert run(SQ).value == I32(49)
    err = stuck_at(SQ, printed("let_exp_keeps_rhs_env"))
    assert err.rule == "CPU-TUPLE" and "unbound variable y" in err.message


MAP_SUB = k1("let ys = MAP { i => xs[i] using xs } #xs\nret ys")
MAP_RET = k1("let ys = MAP { i => let x = ret i in ret x using xs } #xs\nret ys")


def test_L2_gpu_value_result():
    assert run(MAP_SUB).value == ints(10, 20, 30, 40)
    err = stuck_at(MAP_SUB, printed("gpu_value_result"))
    assert err.rule == "IDX-THUNK" and "element 0 of MAP" in err.message
    # a thunk written with `ret` only is what the printed rules can run
    assert run(MAP_RET, printed("gpu_value_result")).value == ints(0, 1, 2, 3)


PAIRS = k1("let a, b = FILTER { i => let x = xs[i] in ret x, i using xs } "
           "{ x, j => gt x 15 } #xs\nret b", extra="")


def test_L3_thunk_binds_tuple():
    # rows (x, i); keep x > 15: indices 1, 2, 3
    assert run(PAIRS).value == ints(1, 2, 3)
    err = stuck_at(PAIRS, printed("thunk_binds_tuple"))
    assert err.rule == "IDX-THUNK" and "tuple of 2" in err.message


EVENS = k1("let e = FILTER { i => xs[i] using xs } { x => let r = mod x 20 in eq r 0 } "
           "#xs\nret e")


def test_L4_filter_count_in_range():
    # 20 and 40 are multiples of 20
    assert run(EVENS).value == ints(20, 40)
    err = stuck_at(EVENS, printed("filter_count_in_range"))
    assert err.rule == "SOAC-FILTER" and "u_s reads p_s" in err.message


def test_L5_filter_index_off_by_one():
    # keep = [F, T, F, T], u = [0, 1, 1, 2]: printed o_0 = min{j | u_j = 0} = 0 and
    # o_1 = min{j | u_j = 1} = 1 pick 10 and 20, the elements *before* each kept one
    assert run(EVENS, printed("filter_index_off_by_one")).value == ints(10, 20)
    first = k1("let e = FILTER { i => xs[i] using xs } { x => lt x 15 } #xs\nret e")
    assert run(first).value == ints(10)
    err = stuck_at(first, printed("filter_index_off_by_one"))  # u = [1, 1, 1, 1]
    assert err.rule == "SOAC-FILTER" and "empty set" in err.message


def test_L6_partition_false_side():
    # keep = [T, F] on [10, 20]: the false side is [20]; printed v^{0 - o_0} = v^0 = 10
    text = k1("let t, f = PARTITION { i => xs[i] using xs } { x => lt x 15 } #xs\n"
              "ret f", xs="[10, 20]")
    assert run(text).value == ints(20)
    assert run(text, printed("partition_false_side")).value == ints(10)
    # keep = [F, T, T, T]: o_0 = 1, so the printed v^{0 - 1} reads element -1
    text = k1("let t, f = PARTITION { i => xs[i] using xs } { x => gt x 15 } #xs\n"
              "ret f")
    assert run(text).value == ints(10)
    err = stuck_at(text, printed("partition_false_side"))
    assert err.rule == "SOAC-PARTITION" and "element -1" in err.message


SCATTER = ("kernel k(xs: [int], ix: [int]) -> [int] {\n"
           "let r = PERMUTE { i => xs[i] using xs } { i => ix[i] using ix } #xs\n"
           "ret r\n}\n"
           "function main() -> [int] { run k([10, 20, 30], [2, 0, 1]) }")


def test_L7_permute_scatters():
    # scatter: out[2] = 10, out[0] = 20, out[1] = 30; gather: out[i] = xs[ix[i]]
    assert run(SCATTER).value == ints(20, 30, 10)
    assert run(SCATTER, printed("permute_scatters")).value == ints(30, 10, 20)


PRINT = "function main() -> () { print(1, [2, 3]) }"


def test_L8_cpu_cmd():
    out = run(PRINT)
    assert out.value == () and out.printed == ("1 [2, 3]",)
    assert stuck_at(PRINT, printed("cpu_cmd")).rule == "CPU-CMD"


UNCAPTURED = k1("let ys = MAP { i => xs[i] } #xs\nret ys")


def test_L9_thunk_reads_using_only():
    # the thunk reads xs without capturing it: only V as printed has it
    assert run(UNCAPTURED, printed("thunk_reads_using_only")).value == \
        ints(10, 20, 30, 40)
    err = stuck_at(UNCAPTURED, FIXED)
    assert err.rule == "GPU-SUBSCRIPT" and "unbound variable xs" in err.message


def test_L10_scan_is_inclusive_as_printed_in_both_rule_sets():
    # indices 0, 1, 2, 3 summed inclusively; VCODE's +_SCAN would give [0, 0, 1, 3]
    text = k1("let s = SCAN { i => ret i using xs } (iadd) #xs\nret s")
    assert run(text, FIXED).value == ints(0, 1, 3, 6)
    assert run(text, PAPER).value == ints(0, 1, 3, 6)


def test_L11_run_binds_parameters_not_the_callers_names():
    # the kernel's parameter is ys, the caller's array xs: a fresh environment
    text = ("kernel k(ys: [int]) -> int { let s = REDUCE { i => ys[i] using ys } "
            "(iadd) "
            "#ys\nret s }\nfunction main() -> int { let (xs) = [1, 2] in "
            "let (ys) = [5] in run k(xs) }")
    assert run(text).value == I32(3)


PINS = {"let_exp_keeps_rhs_env": test_L1_let_exp_keeps_rhs_env,
        "gpu_value_result": test_L2_gpu_value_result,
        "thunk_binds_tuple": test_L3_thunk_binds_tuple,
        "filter_count_in_range": test_L4_filter_count_in_range,
        "filter_index_off_by_one": test_L5_filter_index_off_by_one,
        "partition_false_side": test_L6_partition_false_side,
        "permute_scatters": test_L7_permute_scatters,
        "cpu_cmd": test_L8_cpu_cmd,
        "thunk_reads_using_only": test_L9_thunk_reads_using_only}


def test_every_flag_is_an_erratum_with_its_test():
    flags = [f.name for f in dataclasses.fields(RuleSet)]
    assert sorted(PINS) == sorted(flags)
    assert all(getattr(FIXED, f) and not getattr(PAPER, f) for f in flags)
    text = ERRATA.read_text()
    section = text[text.index("## lambda-cu"):]
    for flag, test in PINS.items():
        assert f"`{flag}`" in section and test.__name__ in section, flag


def test_paper_is_every_printed_rule_at_once():
    # under `paper` even the dot product is stuck: its thunks end in values (L2)
    assert stuck_at(MAP_SUB, PAPER).rule == "IDX-THUNK"
    assert run(MAP_RET, PAPER).value == ints(0, 1, 2, 3)
