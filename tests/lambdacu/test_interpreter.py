"""The lambda-cu interpreter (seed 002, Sec 6.2): each rule on a small program whose
value is worked out by hand in the test, traps and stuck states naming their rule and
element, C arithmetic, the step budget."""

import pytest
from gpusem.calculus.errors import BudgetExhausted, Stuck, Trap
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.calculus.lambdacu.values import F32, I32, Arr, Bool, same_value, show_value
from gpusem.interpreter.lambdacu.machine import evaluate


def run(text, **kw):
    return evaluate(parse_program(text, "t.lcu"), **kw)


def ints(*xs):
    return Arr("int", tuple(I32(x) for x in xs))


def kernel_main(body, ret="[int]", main="run k(xs)", xs="[3, 1, 4, 1, 5]",
                params="xs: [int]"):
    return (f"kernel k({params}) -> {ret} {{\n{body}\n}}\n"
            f"function main() -> {ret} {{ let (xs) = {xs} in {main} }}")


def test_map_applies_the_thunk_at_every_index():
    out = run(kernel_main("let ys = MAP { i => let x = xs[i] in mul x x using xs } "
                          "#xs\n"
                          "ret ys"))
    assert out.value == ints(9, 1, 16, 1, 25)
    assert out.seen["SOAC-MAP"] == 1 and out.seen["IDX-THUNK"] == 5


def test_reduce_and_scan_fold_left_to_right_scan_is_inclusive():
    body = ("let s = REDUCE { i => xs[i] using xs } (imax) #xs\n"
            "let p = SCAN { i => xs[i] using xs } (iadd) #xs\nret s, p")
    out = run(kernel_main(body, ret="(int, [int])"))
    assert out.value == (I32(5), ints(3, 4, 8, 9, 14))


def test_reduce_of_nothing_is_the_identity_and_id_returns_the_array():
    body = ("let s, a = REDUCE { i => let x = xs[i] in ret x, x using xs } "
            "(imin, id) 0\nret s, a")
    out = run(kernel_main(body, ret="(int, [int])"))
    assert out.value == (I32(2**31 - 1), Arr("int", ()))


def test_permute_scatters_each_value_to_its_index():
    # out[ix[i]] = xs[i]: ix = [2, 0, 1] sends 10 to 2, 20 to 0, 30 to 1
    body = ("let r = PERMUTE { i => xs[i] using xs } { i => ix[i] using ix } #xs\n"
            "ret r")
    out = run(kernel_main(body, params="xs: [int], ix: [int]", xs="[10, 20, 30]",
                          main="run k(xs, [2, 0, 1])"))
    assert out.value == ints(20, 30, 10)


def test_filter_and_partition_keep_order():
    body = ("let e = FILTER { i => xs[i] using xs } { x => let r = mod x 2 in "
            "eq r 0 } #xs\n"
            "let t, f = PARTITION { i => xs[i] using xs } { x => lt x 3 } #xs\n"
            "ret e, t, f")
    out = run(kernel_main(body, ret="([int], [int], [int])", xs="[3, 1, 4, 1, 5, 2]"))
    assert out.value == (ints(4, 2), ints(1, 1, 2), ints(3, 4, 5))


def test_once_and_cpu_rules():
    text = """
kernel k(xs: [int], j: int) -> int { let v = ONCE { => xs[j] using xs, j } ret v }
function twice(x: int) -> int { let (y) = add x x in y }
function main() -> (int, int) {
  let (a) = run k([7, 8, 9], 2) in
  let (b) = twice(a) in
  if false then (a, a) else (a, b)
}"""
    out = run(text)
    assert out.value == (I32(9), I32(18))
    for rule in ("CPU-LET-EXP", "CPU-LET-VAL", "CPU-IF-FALSE", "CPU-FUNC-APP",
                 "CPU-PRIM", "CPU-TUPLE", "CPU-RUN", "CPU-ATM-VAR", "CPU-ATM-VAL",
                 "SOAC-ONCE", "KERN-DEF", "FUNC-DEF", "EVAL-MAIN", "KERN-LET",
                 "KERN-RET"):
        assert out.seen[rule] >= 1, rule


def test_int_arithmetic_wraps_and_divides_as_c():
    text = ("function main() -> (int, int, int, int) { let (a) = add 2147483647 1 in "
            "let (b) = div -7 2 in let (c) = mod -7 2 in let (d) = mul 65536 65536 in "
            "(a, b, c, d) }")
    assert run(text).value == (I32(-2**31), I32(-3), I32(-1), I32(0))


def test_float_arithmetic_is_binary32():
    # 16777216 + 1 is not a float32: it rounds back to 16777216 (ties to even)
    text = ("function main() -> (float, bool) { let (a) = add 16777216.0 1.0 in "
            "let (b) = eq a 16777216.0 in (a, b) }")
    value = run(text).value
    assert same_value(value, (F32(16777216.0), Bool(True)))


@pytest.mark.parametrize("expr, prefix", [
    ("div 1 0", "division by zero"), ("mod 1 0", "division by zero"),
    ("div -2147483648 -1", "division overflow"), ("shl 1 32", "shift out of range"),
    ("f2i 3e9", "conversion out of range"),
])
def test_undefined_c_operations_are_named_traps(expr, prefix):
    with pytest.raises(Trap) as err:
        run(f"function main() -> int {{ {expr} }}")
    assert err.value.rule == "CPU-PRIM" and err.value.prefix == prefix


def test_out_of_bounds_subscript_traps_naming_the_element():
    with pytest.raises(Trap) as err:
        run(kernel_main("let ys = MAP { i => let j = add i 1 in xs[j] using xs } #xs\n"
                        "ret ys"))
    e = err.value
    assert e.rule == "GPU-SUBSCRIPT" and e.prefix == "index out of bounds"
    assert "element 4 of MAP" in e.message and e.span.line == 2


@pytest.mark.parametrize("ix, prefix", [("[0, 0, 1]", "permute not 1"),
                                        ("[0, 3, 1]", "permute index out of bounds")])
def test_permute_indices_are_checked(ix, prefix):
    body = ("let r = PERMUTE { i => xs[i] using xs } { i => ix[i] using ix } #xs\n"
            "ret r")
    with pytest.raises(Trap) as err:
        run(kernel_main(body, params="xs: [int], ix: [int]", xs="[10, 20, 30]",
                        main=f"run k(xs, {ix})"))
    assert err.value.rule == "SOAC-PERMUTE" and err.value.prefix.startswith(prefix)


def test_a_stuck_state_names_its_rule():
    with pytest.raises(Stuck) as err:
        run("function main() -> int { add 1 true }")
    assert err.value.rule == "CPU-PRIM" and err.value.prefix == "stuck"


def test_the_step_budget_stops_recursion():
    text = "function f(x: int) -> int { f(x) }\nfunction main() -> int { f(1) }"
    with pytest.raises(BudgetExhausted) as err:
        run(text, max_steps=500)
    assert "500" in err.value.message


# min/max of +0.0 and -0.0 in both orders, and of a NaN (errata L13), in thread code
# and as the fmin/fmax folds
SIGNED_ZEROS = """
kernel k(xs: [float]) -> ([float], [float], [float], [float], float, float) {
  let a, b, c, d = MAP { i => let x = xs[i] in let z = 0.0 in let m = mul x z in
    let p = min m z in let q = max z m in let r = max m z in let u = min z m in
    ret p, q, r, u using xs } #xs
  let lo = REDUCE { i => let z = 0.0 in let n = neg z in let j = eq i 0 in
    if j then n else z } (fmin) #xs
  let hi = REDUCE { i => let z = 0.0 in let n = neg z in let j = eq i 0 in
    if j then z else n } (fmax) #xs
  ret a, b, c, d, lo, hi
}
function main() -> ([float], [float], [float], [float], float, float) {
  run k([-1.0, 2.0]) }
"""


def test_min_and_max_order_minus_zero_below_plus_zero():
    # Before the fix (numpy's fmin: x86 minps, the second operand of two zeros)
    # min -0.0 0.0 was 0.0 and max 0.0 -0.0 was -0.0.
    got = run(SIGNED_ZEROS).value
    assert show_value(got) == ("([-0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [-0.0, 0.0], "
                               "-0.0, 0.0)")
    nan = "let n = sqrt -1.0 in"
    for op, want in (("min", "1.5"), ("max", "1.5")):
        for args in ("n 1.5", "1.5 n"):
            body = f"let ys = MAP {{ i => {nan} {op} {args} }} 1\n  ret ys"
            assert show_value(run(kernel_main(body, ret="[float]")).value) == \
                f"[{want}]"
