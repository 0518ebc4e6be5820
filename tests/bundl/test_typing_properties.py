"""Property tests of the typing rules against small independent models.

- Code perspective: a random nest of destruct / group / split arms is type-checked with
  a probe inside; an arithmetic model of T-Destruct, T-Group and T-Split (written here
  from the rules, not from the checker) predicts the probe's code perspective, and the
  probe observes it (`group n` accepted, `group n + 1` rejected, `destruct` only above
  Thread).
- Read up / write down: a variable declared at a random perspective is read and written
  from random code; acceptance must follow Sec 3.4 through the order of A.1 / Sec 3.2.
- Teeth: flipping one RuleSet flag to its paper value re-opens exactly the hole the
  errata entry names; relaxing flags never reject more, restricting ones never less.
- Totality: any syntax tree gets a verdict (IllTyped or acceptance), never a crash.
"""

from __future__ import annotations

from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.perspective import Level, Perspective, leq
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.fuzz.bundl.strategies.anything import syntax_programs
from gpusem.fuzz.bundl.strategies.programs import programs
from gpusem.typing_rules.bundl.context import FIXED, PAPER, with_flag
from gpusem.typing_rules.bundl.context import RULE_SETS as RULES
from gpusem.typing_rules.bundl.stmt import check_program, type_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=60, deadline=None)
SHAPES = st.sampled_from([(1, 4), (2, 4), (2, 8), (4, 6), (3, 12), (6, 2)])


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def nests(draw):
    """(machine, wrappers, expected code perspective) for a random legal nest."""
    blocks, threads = draw(SHAPES)
    level, n = Level.GRID, 1
    wrappers: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        can_destruct = n == 1 and level != Level.THREAD
        moves = ["group", "split"] + (["destruct"] if can_destruct else [])
        move = draw(st.sampled_from(moves))
        if move == "destruct":  # ↓(Grid,1) = (Block,B), ↓(Block,1) = (Thread,T)
            level, n = Level(level - 1), blocks if level == Level.GRID else threads
            wrappers.append("destruct { %s }")
        elif move == "group":  # T-Group: (h, q·n') -> (h, n')
            q = draw(st.sampled_from(divisors(n)))
            n //= q
            wrappers.append(f"group {q} {{ %s }}")
        else:  # T-Split: n1, n2 | n, n2 | n1, n1 + n2 <= n
            pairs = [(a, b) for a in divisors(n) for b in divisors(n)
                     if a + b <= n and a % b == 0]
            if not pairs:
                continue
            n1, n2 = draw(st.sampled_from(pairs))
            if draw(st.booleans()):
                n = n1
                wrappers.append(f"split({n1}, {n2}) {{ %s }} {{ skip; }}")
            else:
                n = n2
                wrappers.append(f"split({n1}, {n2}) {{ skip; }} {{ %s }}")
    return (blocks, threads), wrappers, Perspective(level, n)


def nest(wrappers: list[str], probe: str) -> str:
    body = probe
    for w in reversed(wrappers):
        body = w % body
    return body


def well_typed(src: str, rules=FIXED) -> bool:
    try:
        check_program(parse_program(src), rules)
    except IllTyped:
        return False
    return True


def source(shape, main: str) -> str:
    return f"machine blocks = {shape[0]}, threads = {shape[1]};\nmain {{ {main} }}\n"


@SETTINGS
@given(nests())
def test_code_perspective_follows_destruct_group_split(case):
    shape, wrappers, expected = case
    n = expected.n
    assert well_typed(source(shape, nest(wrappers, f"group {n} {{ skip; }}")))
    assert not well_typed(source(shape, nest(wrappers, f"group {n + 1} {{ skip; }}")))
    broad = expected.level != Level.THREAD
    probe = f"group {n} {{ destruct {{ skip; }} }}"
    assert well_typed(source(shape, nest(wrappers, probe))) == broad


PERSPS = st.builds(Perspective, st.sampled_from(list(Level)),
                   st.sampled_from([1, 2, 4]))


@SETTINGS
@given(nests(), PERSPS, st.sampled_from(["fixed", "paper"]))
def test_read_up_write_down(case, data_persp, rules):
    """`x @ π'` declared by a broad enough scope, then read and written at code π."""
    shape, wrappers, code = case
    decl = f"let x : int @ {data_persp} = 1;"
    # Declared at grid[1]: legal whenever π' <= grid[1]; otherwise nothing to test.
    if not leq(data_persp, Perspective(Level.GRID, 1), rules):
        return
    read = source(shape, decl + nest(wrappers, "let y : int @ thread[1] = x;"))
    write = source(shape, decl + nest(wrappers, "x = 2;"))
    ruleset = RULES[rules]
    # T-Var: fixed reads up (π <= π'), paper needs π' = π; then T-Decl writes y down.
    readable = leq(code, data_persp, rules) if rules == "fixed" else data_persp == code
    y_ok = leq(Perspective(Level.THREAD, 1), code, rules)
    assert well_typed(read, ruleset) == (readable and y_ok)
    assert well_typed(write, ruleset) == leq(data_persp, code, rules)  # T-Assn


SHARED_AT_THREAD = source((1, 4), "destruct { destruct { group 4 { "
                                  "alloc s : int[4] in Shared; skip; } } }")
REBIND = source((1, 2), "let x : int @ grid[1] = 1; if true { "
                        "let x : float @ grid[1] = 2.0; }")
CLAIM3 = ("machine blocks = 1, threads = 4;\nglobal g : int[4];\n"
          "main { lower g into gb { destruct { lower gb into gt { destruct {"
          " claim gt into w at 3 { skip; } } } } } }\n")


def test_each_flag_guards_its_hole():
    holes = {
        "alloc_shared_block": SHARED_AT_THREAD,
        "no_rebinding": REBIND,
        "claim_divides": CLAIM3,
    }
    for flag, src in holes.items():
        assert not well_typed(src, FIXED), flag
        assert well_typed(src, with_flag(FIXED, **{flag: False})), flag


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(syntax_programs(), st.sampled_from(["fixed", "paper"]))
def test_checker_is_total_on_arbitrary_syntax(prog, rules):
    """Any syntax tree (runtime forms, garbage perspectives) gets a verdict: IllTyped
    errors or acceptance, never a Python exception; both entry points agree."""
    try:
        errors = type_errors(prog, rules)
    except BadInput:
        return  # duplicate top-level names
    assert all(isinstance(e, IllTyped) and e.rule for e in errors)
    try:
        check_program(prog, rules)
        assert errors == []
    except IllTyped as first:
        assert errors and errors[0].message == first.message


# Flags that only relax a premise (an order that contains A.1's, reflexive read up, an
# extra accepted destination) and flags that only add one. Monotonicity: turning a
# relaxation on, or a restriction off, never rejects a program that was accepted.
RELAXING = ("lexicographic_order", "var_read_up", "memcpy_async_dst")
RESTRICTING = ("alloc_shared_block", "claim_divides", "assign_base_only",
               "no_rebinding", "source_runtime_forms")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(programs(), syntax_programs()))
def test_rule_flags_are_monotone(prog):
    try:
        fixed_ok, paper_ok = well_typed_prog(prog, FIXED), well_typed_prog(prog, PAPER)
    except BadInput:
        return
    if fixed_ok:
        for flag in RESTRICTING:
            assert well_typed_prog(prog, with_flag(FIXED, **{flag: False})), flag
    if paper_ok:
        for flag in RELAXING:
            assert well_typed_prog(prog, with_flag(PAPER, **{flag: True})), flag


def well_typed_prog(prog, rules) -> bool:
    return not type_errors(prog, rules)
