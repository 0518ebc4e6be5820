"""examples/lambdacu: the VCODE primitives of Sec 7 and NESL benchmarks (ours) in
lambda-cu. Every expected value is computed here from the operation's definition on
the example's own inputs (each input's text is checked to be in the file), never
taken from the interpreter."""

import math
from pathlib import Path

import pytest
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.calculus.lambdacu.values import to_json
from gpusem.interpreter.lambdacu.machine import evaluate
from gpusem.interpreter.lambdacu.rules import FIXED
from gpusem.typing_rules.lambdacu.wellformed import check_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lambdacu"


def wrap(n):
    return (n + 2**31) % 2**32 - 2**31


def elementwise():
    xs, ys = [1, -2, 3, 2147483647], [10, 20, 30, 1]
    flgs = [True, False, True, False]
    return ([("xs", xs), ("ys", ys), ("flgs", flgs)],
            [[wrap(x + y) for x, y in zip(xs, ys)], [wrap(-x) for x in xs],
             [x if f else y for f, x, y in zip(flgs, xs, ys)]])


def scan_reduce():
    xs = [3, 1, 4, 1, 5, 9, 2, 6]
    exclusive_sum = [sum(xs[:i]) for i in range(len(xs))]
    exclusive_max = [max(xs[:i], default=-2**31) for i in range(len(xs))]
    return [("xs", xs)], [exclusive_sum, exclusive_max, sum(xs), max(xs)]


def permutations():
    xs, ix, jx, flgs = [10, 20, 30, 40], [3, 0, 2, 1], [3, 3, 0, 1], [True, False,
                                                                       True, False]
    scattered = [0] * 4
    for i, d in enumerate(ix):
        scattered[d] = xs[i]
    return ([("xs", xs), ("", ix), ("", jx), ("", flgs)],
            [scattered, [xs[j] for j in jx],
             [xs[j] if f else 0 for j, f in zip(jx, flgs)]])


def other():
    xs, ix, starts = [1, 2, 3, 4, 5, 6], [1, 0, 0], [0, 2, 5]
    flgs = [True, False, True, True, False, True]
    replaced = list(xs)
    replaced[1] = 9
    return ([("xs", xs), ("", ix), ("", starts), ("", flgs)],
            [xs[4], [xs[s + o] for s, o in zip(starts, ix)], replaced,
             [x for x, f in zip(xs, flgs) if f]])


def dot_muladd():
    # every product and sum here is exact in binary32
    xs, ys = [1.5, 2.0, 3.0], [4.0, 5.0, 0.5]
    return ([("xs", xs), ("ys", ys)],
            [sum(x * y for x, y in zip(xs, ys)), [2.0 * x + y for x, y in zip(xs, ys)]])


def radix_step():
    keys = [5, 2, 7, 0, 3, 6]

    def split(ks, b):
        return ([k for k in ks if not (k >> b) & 1] + [k for k in ks if (k >> b) & 1])

    return [("keys", keys)], [split(keys, 0), split(keys, 0), split(split(keys, 0), 1)]


def _cnd(d):
    k = 1.0 / (1.0 + 0.2316419 * abs(d))
    poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (
        -1.821255978 + k * 1.330274429))))
    c = 0.3989422804014327 * math.exp(-0.5 * d * d) * poly
    return 1.0 - c if d > 0 else c


def blackscholes():
    s, k, t, r, v = [100.0, 90.0, 110.0], [100.0, 100.0, 100.0], [1.0, 0.5, 2.0], \
        0.05, 0.2
    prices = []
    for si, ki, ti in zip(s, k, t):
        d1 = (math.log(si / ki) + (r + v * v / 2) * ti) / (v * math.sqrt(ti))
        d2 = d1 - v * math.sqrt(ti)
        prices.append(si * _cnd(d1) - ki * math.exp(-r * ti) * _cnd(d2))
    return [("s", s), ("k", k), ("t", t)], prices


CASES = {"vcode_elementwise.lcu": elementwise, "vcode_scan_reduce.lcu": scan_reduce,
         "vcode_permutations.lcu": permutations, "vcode_other.lcu": other,
         "nesl_dot_muladd.lcu": dot_muladd, "nesl_radix_step.lcu": radix_step,
         "nesl_blackscholes.lcu": blackscholes}


def lcu_text(value):
    items = ", ".join("true" if v is True else "false" if v is False else str(v)
                      for v in value)
    return f"[{items}]"


def test_every_example_has_a_case():
    assert sorted(p.name for p in EXAMPLES.glob("*.lcu")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_computes_its_definition(name):
    text = (EXAMPLES / name).read_text()
    inputs, expected = CASES[name]()
    for _, value in inputs:
        assert lcu_text(value) in text  # the case's inputs are the file's
    checked = check_program(parse_program(text, name))
    got = to_json(evaluate(checked.program, FIXED, elems=checked.elems).value)
    if name == "nesl_blackscholes.lcu":
        # float32 against float64: a relative error of 1e-4 is float32's rounding
        assert got == pytest.approx(expected, rel=1e-4)
    else:
        assert got == expected
