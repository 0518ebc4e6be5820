"""The CUDA reducer (fuzz/cuda_reduce, issue 23): the tokenizer, each pass, the guards
and the driver, with interestingness tests decided in Python (no compiler run).
`test_cuda_reduce_nvcc.py` reduces with nvcc in the loop."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpusem.fuzz.cuda_reduce import passes as P
from gpusem.fuzz.cuda_reduce import passes_expr as E
from gpusem.fuzz.cuda_reduce.oracles import (
    KeepsMain,
    KeepsMainCheck,
    NoConstantPointers,
)
from gpusem.fuzz.cuda_reduce.reducer import NotInteresting, reduce_cuda
from gpusem.fuzz.cuda_reduce.sites import Site, apply
from gpusem.fuzz.cuda_reduce.tokens import (
    code_tokens,
    match_brackets,
    size_key,
    tokenize,
)

ROOT = Path(__file__).resolve().parents[2]
REPRO = ROOT / ("results/campaign/trust_seed2611/bundl-compile-kernel-failed-"
                "38c3f511ac/repro.cu")
T1 = ROOT / "results/toolchain/T1/t1_min.cu"


def texts(text: str, sites: list[Site]) -> list[list[str]]:
    """Every candidate a pass proposes, site by site."""
    return [[apply(text, alt) for alt in site] for site in sites]


def squeeze(s: str) -> str:
    """The code tokens, one space apart (spaces inside a directive are not code)."""
    return " ".join(" ".join(t.text.split()) if t.kind == "pp" else t.text
                    for t in code_tokens(s))


def test_tokenize_loses_nothing_and_knows_directives_and_launches() -> None:
    text = REPRO.read_text()
    tokens = tokenize(text)
    assert "".join(t.text for t in tokens) == text
    pp = [t.text for t in tokens if t.kind == "pp"]
    assert "#include <cstdio>" in pp and "#endif  // GPUSEM_RT_CUH" in pp
    assert any(t.text.startswith("#define CHECK(call)") and t.text.endswith("while (0)")
               for t in tokens)  # a directive with `\` continuations is one token
    assert "<<<" in [t.text for t in tokens] and ">>>" in [t.text for t in tokens]
    code = code_tokens(text)
    pairs = match_brackets(code)
    assert all(code[pairs[i]].text == {"(": ")", "[": "]", "{": "}"}[code[i].text]
               for i in pairs if code[i].text in "([{")


def test_remove_unused_functions_and_macros_proposes_only_the_unused() -> None:
    text = ("#define USED 1\n#define UNUSED 2\nint helper(int a);\n"
            "int helper(int a) { return a; }\nint dead(int b) { return b; }\n"
            "int main() { return USED; }\n")
    sites = P.remove_unused_functions_and_macros(text)
    all_at_once = apply(text, sites[0][0])
    assert "UNUSED" not in all_at_once and "dead" not in all_at_once
    assert "helper" not in all_at_once  # declaration and definition go together
    assert "USED 1" in all_at_once and "main" in all_at_once
    assert len(sites) == 4  # all at once, then UNUSED, helper, dead alone


def test_pick_preprocessor_arms_keeps_one_arm_or_none() -> None:
    text = "a;\n#if GS_CUDA\nb;\n#else\nc;\n#endif\nd;\n"
    [[none, first, second]] = texts(text, P.pick_preprocessor_arms(text))
    assert squeeze(none) == "a ; d ;"
    assert squeeze(first) == "a ; b ; d ;"
    assert squeeze(second) == "a ; c ; d ;"


def test_remove_blocks_offers_the_arms_of_an_if() -> None:
    text = "void f() { x = 0; if (p) { a(); } else { b(); } y = 1; }"
    cands = {squeeze(c) for cs in texts(text, P.remove_blocks(text)) for c in cs}
    assert "void f ( ) { x = 0 ; y = 1 ; }" in cands  # the whole if
    assert "void f ( ) { x = 0 ; a ( ) ; y = 1 ; }" in cands  # the then arm
    assert "void f ( ) { x = 0 ; b ( ) ; y = 1 ; }" in cands  # the else arm
    assert "void f ( ) { x = 0 ; if ( p ) { a ( ) ; } y = 1 ; }" in cands
    assert "void f ( ) { }" in cands  # an emptied function body


def test_remove_blocks_knows_an_if_without_braces() -> None:
    text = "void k() { if (0 < p) o[0] = x[1]; else o[0] = s[0]; }"
    cands = {squeeze(c) for cs in texts(text, P.remove_blocks(text)) for c in cs}
    assert "void k ( ) { o [ 0 ] = s [ 0 ] ; }" in cands
    assert "void k ( ) { if ( 0 < p ) o [ 0 ] = x [ 1 ] ; }" in cands


def test_simplify_expressions_replaces_by_constants_and_operands() -> None:
    text = "void f() { y = a + b * 2; }"
    cands = {squeeze(c) for cs in texts(text, E.simplify_expressions(text)) for c in cs}
    for rhs in ("0", "1", "a", "b * 2"):
        assert f"void f ( ) {{ y = {rhs} ; }}" in cands


def test_remove_casts_and_qualifiers() -> None:
    text = ('extern "C" __global__ void k(const int* __restrict__ x) '
            "{ int p = (int)threadIdx.x; }")
    cands = {squeeze(c) for cs in texts(text, E.remove_casts_and_qualifiers(text))
             for c in cs}
    assert any("( int ) threadIdx" not in c and "p = threadIdx . x" in c for c in cands)
    assert any("__restrict__" not in c for c in cands)
    assert any(c.startswith("__global__") for c in cands)  # extern "C" gone
    assert any("( int * __restrict__" in c for c in cands)  # const gone


def test_shrink_constants_only_makes_literals_smaller() -> None:
    text = "int a = 128; int b = 0xA5u; int c = 1;"
    sites = E.shrink_constants(text)
    cands = [squeeze(c) for cs in texts(text, sites) for c in cs]
    assert "int a = 64 ; int b = 0xA5u ; int c = 1 ;" in cands
    assert "int a = 128 ; int b = 82u ; int c = 1 ;" in cands
    assert all(size_key(c) < size_key(text) for cs in texts(text, sites) for c in cs)


def test_shrink_arrays_and_launch() -> None:
    text = "int h[4] = {1, 2, 3, 4}; void m() { k<<<dim3(2, 1, 1), 8, 0>>>(h); }"
    cands = {squeeze(c) for cs in texts(text, E.shrink_arrays_and_launch(text))
             for c in cs}
    assert any("{ 1 , 2 }" in c for c in cands) and any("{ 1 }" in c for c in cands)
    assert any("<<< 1 , 8 , 0 >>>" in c for c in cands)
    assert any("<<< dim3 ( 2 , 1 , 1 ) , 8 >>>" in c for c in cands)


def test_rename_identifiers_renames_every_use_and_nothing_else() -> None:
    text = "__global__ void kern(int* out) { int pid = threadIdx.x; out[pid] = pid; }"
    cands = [c for cs in texts(text, E.rename_identifiers(text)) for c in cs]
    assert "__global__ void kern(int* out) { int a = threadIdx.x; out[a] = a; }" \
        in cands
    assert all("threadIdx" in c for c in cands)
    # first every name at once, each its own letter: where the walk ends when it
    # keeps each rename alone
    assert cands[0] == "__global__ void a(int* b) { int c = threadIdx.x; b[c] = c; }"


def test_clang_format_lite_changes_whitespace_only_and_is_idempotent() -> None:
    text = REPRO.read_text()
    once = E.clang_format_lite(text)
    assert squeeze(once) == squeeze(text)
    assert E.clang_format_lite(once) == once
    assert "\n\n" not in once


def test_clang_format_lite_tightens_brackets_outside_literals_and_directives() -> None:
    text = ('void a( int* b , int* c ) {\n  x[ 0 ] = y ;\n  printf("( a )");\n}\n'
            "#define F (x)\n")
    assert E.clang_format_lite(text) == ('void a(int* b, int* c) {\n  x[0] = y;\n'
                                         '  printf("( a )");\n}\n#define F (x)\n')


def test_guards_see_a_main_that_no_longer_decides() -> None:
    t1 = T1.read_text()
    assert KeepsMain()(t1) is None and KeepsMainCheck()(t1) is None
    assert KeepsMainCheck()(t1.replace("return r != 1;", "return 1;")) is not None
    constant = t1.replace("return r != 1;", "if (0) return 1;\n  return 0;")
    assert KeepsMainCheck()(constant) is not None  # `if (0)` decides nothing
    assert KeepsMain()(t1.replace("k<<<1, 1>>>(x, s, o);", "")) is not None
    assert KeepsMain()("__global__ void k() {}") == "main is gone"


def test_a_pointer_made_from_a_constant_is_refused() -> None:
    guard = NoConstantPointers()
    assert guard("int* j = reinterpret_cast<int*>(1); j[0] = 0;") is not None
    assert guard("int* p = (int*)4;") is not None
    for fine in ("int* p = (int*)q;", "x = (int)1;", "k<<<1, 1>>>(nullptr);",
                 "int* p = reinterpret_cast<int*>(0);", T1.read_text()):
        assert guard(fine) is None


def keeps_the_t1_shape(text: str) -> bool:
    """A Python interestingness test: the branch reading both buffers is still there."""
    return "x0[1]" in text and "st[0]" in text and "if" in text


def test_reduction_keeps_the_test_true_and_is_deterministic() -> None:
    runs = [reduce_cuda(T1.read_text(), keeps_the_t1_shape, budget_s=60,
                        guards=[KeepsMain()]) for _ in range(2)]
    assert runs[0].stopped == "fixpoint"
    assert runs[0].text == runs[1].text
    assert keeps_the_t1_shape(runs[0].text) and KeepsMain()(runs[0].text) is None
    assert runs[0].lines_after < runs[0].lines_before


def test_reduction_of_a_committed_repro_is_deterministic_and_small() -> None:
    def keep(text: str) -> bool:
        return "__syncwarp(" in text and "bundl_main<<<" in text

    runs = [reduce_cuda(REPRO.read_text(), keep, budget_s=120,
                        guards=[KeepsMain()]) for _ in range(2)]
    assert runs[0].text == runs[1].text
    assert runs[0].stopped == "fixpoint" and keep(runs[0].text)
    assert runs[0].lines_before > 300 and runs[0].lines_after < 30


def test_the_budget_is_respected() -> None:
    def slow(text: str) -> bool:
        time.sleep(0.2)
        return "__syncwarp(" in text

    t0 = time.monotonic()
    r = reduce_cuda(REPRO.read_text(), slow, budget_s=3.0)
    assert r.stopped == "budget"
    assert time.monotonic() - t0 < 3.0 + 0.5


def test_an_uninteresting_input_is_refused() -> None:
    with pytest.raises(NotInteresting):
        reduce_cuda(T1.read_text(), lambda text: False, budget_s=5)


class CountingGuard:
    """A guard that refuses a text that no longer synchronises, and counts its
    calls and refusals; `late` as the reducer's `BuildsAlone` is."""

    def __init__(self, late: bool) -> None:
        self.late, self.calls, self.refused = late, 0, 0

    def __call__(self, text: str) -> str | None:
        self.calls += 1
        if "cudaDeviceSynchronize()" in text:
            return None
        self.refused += 1
        return "no synchronisation"


def test_a_late_guard_is_asked_per_walk_and_its_refusals_are_rolled_back() -> None:
    def keep(text: str) -> bool:
        return "__syncwarp(" in text and "bundl_main<<<" in text

    runs = {}
    for late in (False, True):
        g = CountingGuard(late)
        runs[late] = (reduce_cuda(REPRO.read_text(), keep, budget_s=120, guards=[g]), g)
    for r, g in runs.values():
        assert r.stopped == "fixpoint" and keep(r.text) and g(r.text) is None
        assert r.lines_after < 30
    sg, lg = runs[False][1], runs[True][1]
    # the late guard refused some walk's text (so the bisection and the roll-back
    # ran) and still cost fewer calls than one per kept candidate
    assert lg.refused > 0
    assert lg.calls < sg.calls, (lg.calls, sg.calls)


def test_simplify_expressions_leaves_parameters_and_a_launchs_arity_alone() -> None:
    """A definition's parameter list is declarations (`k(0, int* b) {` never
    compiles); a launch's several arguments replaced by one value change its arity."""
    text = "__global__ void k(int* a, int* b) { a[0] = b[1] + 2; }\n" \
           "int main() { k<<<1, 1>>>(x, y); g<<<1, 1>>>(u + 1); f(p, q + 1); }\n"
    cands = [squeeze(c) for cs in texts(text, E.simplify_expressions(text)) for c in cs]
    assert not any("void k ( int * a , int * b )" not in c for c in cands)
    assert not any("k <<< 1 , 1 >>> ( x , y )" not in c for c in cands)
    assert any("g <<< 1 , 1 >>> ( 0 )" in c for c in cands)  # one argument: as before
    assert any("f ( p , 0 )" in c for c in cands)  # a call's arguments: as before


DECLARING = """#include <cstdio>
#define GS_DEV __device__
typedef unsigned int u32;
GS_DEV int add(int a, int b) { return (int)((u32)a + (u32)b); }
__global__ void k(const int* __restrict__ x0, int* st) {
  const int pid = (int)threadIdx.x;
  for (int i = 0; i < 4; ++i) st[i] = add(pid, x0[i]);
}
static const int in_x0[8] = {42, 42};
int main() { int *d = nullptr, *e = nullptr; dim3 g(1, 1); k<<<g, 1>>>(d, e);
  printf("%d", in_x0[0]); }
"""


def test_declared_names_are_the_files_own() -> None:
    from gpusem.fuzz.cuda_reduce.declared import declared_names

    names = declared_names(code_tokens(DECLARING))
    assert {"GS_DEV", "u32", "add", "a", "b", "k", "x0", "st", "pid", "i", "in_x0",
            "main", "d", "e", "g"} <= names
    assert not names & {"printf", "threadIdx", "x", "cstdio"}


@pytest.mark.parametrize("line, loses", [
    ("typedef unsigned int u32;\n", True),  # u32 is still used
    ("#define GS_DEV __device__\n", True),
    ("  const int pid = (int)threadIdx.x;\n", True),
    ("static const int in_x0[8] = {42, 42};\n", True),
    ("#include <cstdio>\n", False),  # declares nothing of the file's own
    ("  for (int i = 0; i < 4; ++i) st[i] = add(pid, x0[i]);\n", False),
])
def test_a_candidate_that_loses_a_used_declaration_is_known(line, loses) -> None:
    from gpusem.fuzz.cuda_reduce.declared import declared_names, loses_a_declaration

    assert line in DECLARING
    base = declared_names(code_tokens(DECLARING))
    cand = DECLARING.replace(line, "")
    assert loses_a_declaration(base, code_tokens(cand)) is loses


def test_the_declaration_check_is_asked_only_when_the_test_compiles() -> None:
    """Without `compiles` (a shell test may grep), a candidate that lost a used
    declaration reaches the test; with it, the test never sees one."""
    seen: list[str] = []

    def grep(text: str) -> bool:
        seen.append(text)
        return "x0[i]" in text and "(u32)a" in text

    reduce_cuda(DECLARING, grep, budget_s=60, max_rounds=1)
    assert any("typedef" not in t and "(u32)" in t for t in seen)
    seen.clear()
    grep.compiles = True  # type: ignore[attr-defined]
    r = reduce_cuda(DECLARING, grep, budget_s=60, max_rounds=1)
    assert seen and not any("typedef" not in t and "(u32)" in t for t in seen)
    assert "x0[i]" in r.text and "typedef unsigned int u32;" in r.text
