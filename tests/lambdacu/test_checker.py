"""⊢ prog ok for lambda-cu (typing_rules/lambdacu/wellformed.py): every named rule
rejects a program that breaks it, and accepts its well-formed neighbour."""

import dataclasses

import pytest
from gpusem.calculus.lambdacu import ast
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.calculus.lambdacu.values import I32, Arr
from gpusem.interpreter.lambdacu.machine import evaluate
from gpusem.typing_rules.lambdacu.wellformed import all_errors, check_program


def kern(soac_line, ret="[int]", params="xs: [int]", extra=""):
    return (f"kernel k({params}) -> {ret} {{\n  let r = {soac_line}\n  ret r\n}}\n"
            f"{extra}function main() -> int {{ 0 }}")


GOOD = kern("MAP { i => xs[i] using xs } #xs")

BAD = [
    ("WF-Main", "function f() -> int { 0 }"),
    ("WF-Scope", kern("MAP { i => xs[j] using xs } #xs")),
    ("WF-Scope", "function main() -> int { y }"),
    ("WF-SoacArity", kern("MAP { i => xs[i] using xs } { i => i } #xs")),
    ("WF-SoacArgKind", kern("REDUCE { i => xs[i] using xs } { i => i } #xs", "int")),
    ("WF-Size", kern("MAP { i => xs[i] using xs } f", params="xs: [int], f: float")),
    ("WF-Size", kern("MAP { i => xs[i] using xs }")),
    ("WF-Size", "kernel k() -> int { let r = ONCE { => 1 } 3\n ret r }\n"
                "function main() -> int { 0 }"),
    ("WF-ThunkParams", kern("MAP { i, j => xs[i] using xs } #xs")),
    ("WF-ThunkResult", kern("MAP { i => ret xs using xs } #xs")),
    ("WF-Using", kern("MAP { i => xs[i] } #xs")),
    ("WF-Using", kern("MAP { i => xs[i] using ys } #xs")),
    ("WF-PermuteIndex", kern("PERMUTE { i => xs[i] using xs } { i => true } #xs")),
    ("WF-Predicate", kern("FILTER { i => xs[i] using xs } { x => x } #xs")),
    ("WF-RopCount", kern("REDUCE { i => xs[i] using xs } (iadd, iadd) #xs", "int")),
    ("WF-RopType", kern("REDUCE { i => xs[i] using xs } (fadd) #xs", "int")),
    ("WF-NoCallInKernel", kern("MAP { i => f i } #xs",
                               extra="function f(x: int) -> int { x }\n")),
    ("WF-Prim", kern("MAP { i => frob i } #xs")),
    ("WF-Prim", kern("MAP { i => add i 1.0 } #xs")),
    ("WF-GpuAtom", kern("MAP { i => let a = 0 in a[i] } #xs") + "// ARRAY"),
    ("WF-If", kern("MAP { i => if i then 1 else 2 } #xs")),
    ("WF-If", kern("MAP { i => let c = lt i 2 in if c then 1 else 2.0 } #xs")),
    ("WF-LetArity", kern("MAP { i => let a, b = ret i in a } #xs")),
    ("WF-LetArity", "function main() -> int { let (a, b) = (1, 2, 3) in a }"),
    ("WF-Subscript", kern("MAP { i => i[i] } #xs")),
    ("WF-Subscript", kern("MAP { i => let c = true in xs[c] using xs } #xs")),
    ("WF-Call", "function main() -> int { g(1) }"),
    ("WF-Call", "function main() -> int { run g(1) }"),
    ("WF-Call", "function f(x: int) -> int { x }\nfunction main() -> int { f(true) }"),
    ("WF-Ret", kern("MAP { i => xs[i] using xs } #xs", "[float]")),
    ("WF-Ret", "function main() -> float { 1 }"),
    ("WF-LetArity", "kernel k(xs: [int]) -> [int] {\n let a, b = MAP { i => xs[i] "
                    "using xs } #xs\n ret a\n}\nfunction main() -> int { 0 }"),
]


def test_a_well_formed_program_is_accepted():
    check_program(parse_program(GOOD))


@pytest.mark.parametrize("rule, text", BAD, ids=[f"{r}-{i}" for i, (r, _) in
                                                   enumerate(BAD)])
def test_each_rule_rejects_what_breaks_it(rule, text):
    program = parse_program(text, "bad.lcu")
    if "ARRAY" in text:  # thread code cannot even parse an array literal: build it
        program = _with_array_literal(program)
    with pytest.raises(IllTyped) as err:
        check_program(program)
    assert err.value.rule == rule
    assert err.value.one_line().startswith("bad.lcu:")


def _with_array_literal(program):
    k = program.kernels[0]
    app = k.body.app
    t = app.args[0]
    rhs = ast.GAtom(ast.Lit(Arr("int", (I32(1), I32(2))), t.body.rhs.span),
                    t.body.rhs.span)
    body = dataclasses.replace(t.body, rhs=rhs)
    app = dataclasses.replace(app, args=(dataclasses.replace(t, body=body),))
    kernel = dataclasses.replace(k, body=dataclasses.replace(k.body, app=app))
    return dataclasses.replace(program, kernels=(kernel,))


def test_every_rule_of_the_table_has_a_rejected_program():
    import gpusem.typing_rules.lambdacu.wellformed as wf
    table = {line.split("|")[1].strip() for line in wf.__doc__.splitlines()
             if line.startswith("| WF-")}
    assert table == {rule for rule, _ in BAD}


def test_errors_of_several_definitions_are_collected():
    text = ("kernel k(xs: [int]) -> int { let r = MAP { i => xs[i] } #xs\n ret r }\n"
            "function main() -> int { z }")
    errors, _ = all_errors(parse_program(text))
    assert [e.rule for e in errors] == ["WF-Using", "WF-Scope"]


def test_the_checker_gives_the_interpreter_the_types_of_empty_arrays():
    text = ("kernel k(n: int) -> [float] {\n let r = MAP { i => i2f i } n\n ret r\n}\n"
            "function main() -> [float] { run k(0) }")
    checked = check_program(parse_program(text))
    assert evaluate(checked.program, elems=checked.elems).value == Arr("float", ())
    assert evaluate(checked.program).value != Arr("float", ())  # without: a guess


def test_well_formed_programs_run_to_a_value():
    text = kern("SCAN { i => xs[i] using xs } (iadd) #xs",
                extra="").replace("function main() -> int { 0 }",
                                  "function main() -> [int] { run k([1, 2]) }")
    checked = check_program(parse_program(text))
    assert evaluate(checked.program).value == Arr("int", (I32(1), I32(3)))
