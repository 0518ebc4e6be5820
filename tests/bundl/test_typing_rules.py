"""One accepted and one rejected program per typing rule of Appendix A.2 (Prism paper),
as source text, matched on the rule name and the message's stable prefix.

The programs run on `machine blocks = 2, threads = 8`; `at(level, body)` wraps a body so
that it is checked at the named code perspective, reached from main's grid[1] exactly as
a Bundl program would (destruct / group). Expectations come from the rules as printed
(and the corrections recorded in proofs_notes/errata.md), not from the checker.
"""

from __future__ import annotations

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.errors import IllTyped
from gpusem.typing_rules.bundl.stmt import check_program, type_errors

B, T = 2, 8
GLOBALS = "global A : int[16] = iota;\nglobal F : float[16];\nglobal out : int[16];\n"

WRAP = {
    "grid1": "{body}",
    "blockB": "destruct {{ {body} }}",
    "block1": "destruct {{ group 2 {{ {body} }} }}",
    "threadT": "destruct {{ group 2 {{ destruct {{ {body} }} }} }}",
    "thread1": "destruct {{ group 2 {{ destruct {{ group 8 {{ {body} }} }} }} }}",
}

# `out` narrowed to one element per thread: o : Global int[] @ thread[1].
OWN = (
    "lower out into ob {{ destruct {{ partition ob into o1 by 2 {{ group 2 {{ "
    "lower o1 into ot {{ destruct {{ partition ot into o by 8 {{ group 8 {{ {body} "
    "}} }} }} }} }} }} }} }}"
)


def at(level: str, body: str) -> str:
    return OWN.format(body=body) if level == "own" else WRAP[level].format(body=body)


def program(main: str, fns: str = "", machine: tuple[int, int] = (B, T)) -> str:
    m = f"machine blocks = {machine[0]}, threads = {machine[1]};\n"
    return f"{m}{GLOBALS}{fns}\nmain {{ {main} }}\n"


def accepts(src: str, rules: str = "fixed") -> None:
    prog = parse_program(src, "t.bundl")
    assert type_errors(prog, rules) == []
    check_program(prog, rules)


def rejects(src: str, rule: str, prefix: str, rules: str = "fixed") -> IllTyped:
    prog = parse_program(src, "t.bundl")
    with pytest.raises(IllTyped) as info:
        check_program(prog, rules)
    err = info.value
    assert (err.rule, err.prefix) == (rule, prefix), err.one_line()
    assert err.span.line >= 1  # every error points into the source
    return err


# -------------------------------------------------------------- A.2.1 expressions


def test_t_var_reads_up():
    # Sec 3.4.1: a block[1] variable is uniform over each block, readable by threads.
    accepts(program(at("block1", "let n : int @ block[1] = 3; destruct { group 8 { "
                                  "let y : int @ thread[1] = n + 1; } }")))


def test_t_var_rejects_reading_down_figure_11():
    err = rejects(program(at("block1", "let flag : bool @ thread[1] = true; "
                                       "if flag { skip; }")),
                  "T-Var", "perspective mismatch")
    assert "block[1]" in err.message and "thread[1]" in err.message


def test_t_var_paper_needs_the_exact_perspective():
    src = program(at("block1", "let n : int @ block[1] = 3; destruct { group 8 { "
                               "let y : int @ thread[1] = n + 1; } }"))
    rejects(src, "T-Var", "perspective mismatch", rules="paper")


def test_t_var_unbound():
    rejects(program("let y : int @ grid[1] = z;"), "T-Var", "unbound variable")


def test_t_int_float_bool():
    accepts(program("let a : int @ grid[1] = 1; let b : float @ grid[1] = 1.5; "
                    "let c : bool @ grid[1] = false;"))
    rejects(program("let a : int @ grid[1] = 1.5;"), "T-Decl", "type mismatch")
    rejects(program("let c : bool @ grid[1] = 0;"), "T-Decl", "type mismatch")


@pytest.mark.parametrize("level", ["thread1", "threadT", "block1", "blockB"])
def test_t_partition_id_below_grid(level):
    accepts(program(at(level, "let i : int @ thread[1] = partition_id;")))


def test_t_partition_id_rejected_at_grid():
    rejects(program("let i : int @ thread[1] = partition_id;"),
            "T-Partition-Id", "perspective mismatch")


def test_t_partition_id_paper_order_rejects_warp_code():
    # A.1's printed order: thread[8] <= grid[1] needs 8 | 1 (errata: order).
    rejects(program(at("threadT", "let i : int @ thread[1] = partition_id;")),
            "T-Partition-Id", "perspective mismatch", rules="paper")


def test_t_arr_access_reads_global_from_a_thread():
    accepts(program(at("thread1", "let v : int @ thread[1] = A[3];")))


def test_t_arr_access_rejects_reading_narrower_array():
    fn = ("fn f(a : Global int[] @ thread[1]) at block[1] uses 0 { "
          "let v : int @ block[1] = a[0]; }\n")
    err = rejects(program("skip;", fns=fn), "T-Arr-Access", "perspective mismatch")
    assert "block[1]" in err.message and "thread[1]" in err.message


def test_t_arr_access_index_must_be_int():
    rejects(program(at("thread1", "let v : int @ thread[1] = A[1.0];")),
            "T-Arr-Access", "type mismatch")


def test_t_arr_access_not_an_array():
    rejects(program(at("thread1", "let k : int @ thread[1] = 1; "
                                  "let v : int @ thread[1] = k[0];")),
            "T-Arr-Access", "not an array")


def test_t_arr_access_shared():
    accepts(program(at("block1", "alloc s : int[8] in Shared; "
                                 "let v : int @ block[1] = s[0];")))
    fn = ("fn g(s : Shared int[] @ grid[1]) at grid[1] uses 0 { "
          "let v : int @ grid[1] = s[0]; }\n")
    rejects(program("skip;", fns=fn), "T-Arr-Access-Shared", "perspective mismatch")


def test_t_bop():
    accepts(program("let a : int @ grid[1] = 1 + 2 * 3 % 2 - 7 / 2; "
                    "let f : float @ grid[1] = 1.5 * 2.0 - 1.0 / 3.0; "
                    "let b : bool @ grid[1] = true && !false || false;"))
    rejects(program("let a : int @ grid[1] = 1 + 1.0;"), "T-Bop", "type mismatch")
    rejects(program("let f : float @ grid[1] = 1.0 % 2.0;"), "T-Bop", "type mismatch")
    rejects(program("let b : bool @ grid[1] = true && 1;"), "T-Bop", "type mismatch")


def test_t_cmp():
    accepts(program("let a : bool @ grid[1] = 1 < 2; let b : bool @ grid[1] = "
                    "1.0 >= 2.0; let c : bool @ grid[1] = true != false;"))
    rejects(program("let a : bool @ grid[1] = 1 < 1.0;"), "T-Cmp", "type mismatch")
    rejects(program("let a : bool @ grid[1] = true < false;"), "T-Cmp",
            "type mismatch")


def test_t_unop():
    accepts(program("let a : int @ grid[1] = -(3); let b : bool @ grid[1] = !true;"))
    rejects(program("let a : bool @ grid[1] = !1;"), "T-Unop", "type mismatch")
    rejects(program("let a : bool @ grid[1] = -true;"), "T-Unop", "type mismatch")


def test_t_ptr_offset():
    accepts(program(at("thread1", "let v : int @ thread[1] = (A + 2)[1];")))
    rejects(program(at("thread1", "let v : int @ thread[1] = (A + 2.0)[1];")),
            "T-Ptr-Offset", "type mismatch")


# ---------------------------------------------------------------- A.2.2 statements

ADD_ONE = ("fn add_one(a : Global int[] @ thread[1], i : int @ thread[1]) at thread[1] "
           "uses 0 { a[i] = a[i] + 1; }\n")


def test_t_function_call():
    accepts(program(at("own", "add_one(o, 0);"), fns=ADD_ONE))
    accepts(program(at("own", "add_one(o, 0);"), fns=ADD_ONE), rules="paper")


def test_t_function_call_wrong_code_perspective():
    err = rejects(program(at("block1", "add_one(out, 0);"), fns=ADD_ONE),
                  "T-Function-Call", "perspective mismatch")
    assert "thread[1]" in err.message and "block[1]" in err.message


def test_t_function_call_pointer_must_match_exactly():
    # Sec 3.6: A lives at grid[1], the parameter at thread[1].
    rejects(program(at("thread1", "add_one(A, 0);"), fns=ADD_ONE),
            "T-Function-Call", "perspective mismatch")
    rejects(program(at("thread1", "add_one(A, 0);"), fns=ADD_ONE),
            "T-Var", "perspective mismatch", rules="paper")


def test_t_function_call_primitive_from_broader_perspective():
    body = ("let n : int @ block[1] = 1; lower o1 into ot { destruct { partition ot "
            "into o by 8 { group 8 { add_one(o, n); } } } }")
    src = program("lower out into ob { destruct { partition ob into o1 by 2 { "
                  f"group 2 {{ {body} }} }} }} }}", fns=ADD_ONE)
    accepts(src)
    rejects(src, "T-Var", "perspective mismatch", rules="paper")


def test_t_function_call_arity_type_and_kind():
    rejects(program(at("own", "add_one(o);"), fns=ADD_ONE), "T-Function-Call",
            "arity mismatch")
    rejects(program(at("own", "add_one(o, true);"), fns=ADD_ONE), "T-Function-Call",
            "type mismatch")
    rejects(program(at("own", "o(1);")), "T-Function-Call", "not a function")


def test_t_function_call_memory_bound():
    fns = ("fn big() at block[1] uses 32 { alloc s : int[8] in Shared; s[0] = 1; }\n"
           "fn ok() at block[1] uses 32 { big(); }\n"
           "fn small() at block[1] uses 16 { big(); }\n")
    err = rejects(program("skip;", fns=fns), "V-Function", "memory bound exceeded")
    assert "small" in err.message and "32" in err.message


def test_v_function_checks_declared_uses():
    fns = "fn f() at block[1] uses 31 { alloc s : int[8] in Shared; skip; }\n"
    rejects(program("skip;", fns=fns), "V-Function", "memory bound exceeded")
    accepts(program("skip;", fns=fns.replace("31", "32")))


def test_t_split_figures_8_9_10():
    accepts(program(at("threadT", "split(4, 4) { skip; } { split(2, 2) { skip; } "
                                  "{ skip; } }")))
    # Figure 9: 4 + 1 threads requested of thread[4].
    rejects(program(at("threadT", "group 2 { split(4, 1) { skip; } { skip; } }")),
            "T-Split", "misaligned split")
    # Figure 10: the second arm (2 threads at offset 1) of thread[3] is misaligned.
    rejects(program("destruct { group 2 { destruct { split(1, 2) { skip; } "
                    "{ skip; } } } }", machine=(2, 3)),
            "T-Split", "misaligned split")


def test_t_split_checks_arms_at_their_perspective():
    rejects(program(at("threadT", "split(4, 4) { destruct { skip; } } { skip; }")),
            "T-Destruct", "bad destruct")


def test_t_group_figure_7():
    accepts(program(at("blockB", "group 2 { skip; }")))
    # Figure 7, example 2: block[6] cannot be grouped into block[5]s.
    rejects(program("destruct { group 5 { skip; } }", machine=(6, 8)),
            "T-Group", "bad group")


def test_t_destruct():
    accepts(program("destruct { skip; }"))
    accepts(program(at("block1", "destruct { skip; }")))
    # Figure 7, example 1: thread[2] cannot broaden to block[1].
    rejects(program(at("threadT", "group 4 { destruct { skip; } }")),
            "T-Destruct", "bad destruct")
    rejects(program(at("blockB", "destruct { skip; }")), "T-Destruct", "bad destruct")


def test_t_assn():
    accepts(program(at("thread1", "let y : int @ thread[1] = 0; y = y + 1;")))
    accepts(program(at("block1", "let y : int @ thread[1] = 0; y = 2;")))
    err = rejects(program(at("block1", "let y : int @ block[1] = 0; destruct { "
                                       "group 8 { y = 1; } }")),
                  "T-Assn", "perspective mismatch")
    assert "cannot write y at block[1]" in err.message
    rejects(program(at("thread1", "let y : int @ thread[1] = 0; y = 1.0;")),
            "T-Assn", "type mismatch")


def test_t_assn_figure_12():
    # y = x reads the thread[1] x at block[1] (T-Var fails before T-Assn is asked).
    rejects(program(at("block1", "let x : bool @ thread[1] = true; "
                                 "let y : bool @ block[1] = false; y = x; "
                                 "if y { skip; }")),
            "T-Var", "perspective mismatch")


def test_t_assn_pointer_rebinding_fixed_vs_paper():
    fn = ("fn f(a : Global int[] @ thread[1], b : Global int[] @ thread[1]) "
          "at thread[1] uses 0 { a = b; }\n")
    rejects(program("skip;", fns=fn), "T-Assn", "not assignable")
    accepts(program("skip;", fns=fn), rules="paper")


def test_t_sync_forms_and_skip():
    accepts(program(at("thread1", "init psi; dec psi; wait psi; skip;")))


def test_t_free():
    accepts(program(at("thread1", "free 0;")))
    # a runtime form: S-Alloc-* appends `free k`; a source `free 4` frees twice.
    rejects(program(at("thread1", "free 4;")), "T-Free", "runtime form")
    accepts(program(at("thread1", "free 4;")), rules="paper")


def test_t_sync_forms_in_source_need_the_whole_barrier():
    rejects(program(at("thread1", "dec psi;")), "T-Sync-Dec", "runtime form")
    rejects(program(at("block1", "init a; dec b; wait a;")), "T-Sync-Init",
            "runtime form")
    rejects(program("init a; dec a; skip; wait a;"), "T-Sync-Init", "runtime form")
    accepts(program(at("thread1", "dec psi;")), rules="paper")
    accepts(program("init a; dec a; wait a; init a; dec a; wait a;"))


def test_t_decl_write_down():
    accepts(program(at("block1", "let x : int @ thread[1] = 1;")))
    err = rejects(program(at("thread1", "let x : int @ block[1] = 1;")),
                  "T-Decl", "perspective mismatch")
    assert "cannot write x at block[1]" in err.message


def test_t_arr_assn():
    accepts(program(at("own", "o[0] = A[partition_id];")))
    accepts(program(at("thread1", "alloc l : float[4] in Local; l[1] = 2.0;")))
    err = rejects(program(at("thread1", "out[0] = 1;")), "T-Arr-Assn",
                  "perspective mismatch")
    assert "grid[1]" in err.message and "thread[1]" in err.message
    rejects(program(at("own", "o[0] = 1.0;")), "T-Arr-Assn", "type mismatch")


def test_t_arr_assn_shared():
    accepts(program(at("block1", "alloc s : int[8] in Shared; s[0] = 1;")))
    rejects(program(at("block1", "alloc s : int[8] in Shared; destruct { group 8 { "
                                 "s[0] = 1; } }")),
            "T-Arr-Assn-Shared", "perspective mismatch")
    fn = "fn g(s : Shared int[] @ grid[1]) at grid[1] uses 0 { s[0] = 1; }\n"
    rejects(program("skip;", fns=fn), "T-Arr-Assn-Shared", "perspective mismatch")


def test_t_if_and_t_while():
    accepts(program(at("thread1", "let i : int @ thread[1] = 0; while i < 3 { "
                                  "i = i + 1; } if i == 3 { skip; } else { skip; }")))
    rejects(program("if 1 { skip; }"), "T-If", "type mismatch")
    rejects(program("while 0 { skip; }"), "T-While", "type mismatch")


def test_t_alloc():
    accepts(program(at("thread1", "alloc l : int[4] in Local; l[0] = 1;")))
    accepts(program(at("thread1", "alloc g : int[4] in Global; g[0] = 1;")))
    fn = "fn f() at thread[1] uses 15 { alloc l : int[4] in Local; skip; }\n"
    rejects(program("skip;", fns=fn), "V-Function", "memory bound exceeded")


def test_t_alloc_shared_fixed_needs_block1():
    src = program(at("thread1", "alloc s : int[4] in Shared; skip;"))
    err = rejects(src, "T-Alloc-Shared", "perspective mismatch")
    assert "thread[1]" in err.message and "block[1]" in err.message
    accepts(src, rules="paper")  # the soundness hole: S-Alloc-Shared gets stuck


def test_t_partition():
    accepts(program(at("own", "o[0] = 1;")))
    rejects(program("lower out into ob { destruct { partition ob into o by 3 { "
                    "skip; } } }"), "T-Partition", "bad partition")
    rejects(program(at("thread1", "alloc l : int[4] in Local; partition l into m "
                                  "by 1 { skip; }")),
            "T-Partition", "local array")
    rejects(program(at("block1", "partition out into o by 1 { skip; }")),
            "T-Partition", "perspective mismatch")


def test_t_partition_hides_its_source():
    rejects(program("lower out into ob { destruct { partition ob into o by 2 { "
                    "group 2 { let v : int @ block[1] = ob[0]; } } } }"),
            "T-Arr-Access", "hidden variable")


def test_t_claim():
    body = "claim st into w at 4 { w[0] = 1; }"
    src = program(at("block1", f"alloc s : int[8] in Shared; lower s into st {{ "
                               f"destruct {{ {body} }} }}"))
    accepts(src)
    bad = src.replace("at 4", "at 3").replace("w[0] = 1;", "skip;")
    rejects(bad, "T-Claim", "bad claim")  # 3 does not divide 8: misaligned
    accepts(bad, rules="paper")           # as printed: n' <= n
    rejects(src.replace("at 4", "at 9"), "T-Claim", "bad claim", rules="paper")


def test_t_claim_body_runs_at_the_claimed_perspective():
    src = program(at("block1", "alloc s : int[8] in Shared; lower s into st { "
                               "destruct { claim st into w at 4 { split(4, 4) "
                               "{ skip; } { skip; } } } }"))
    rejects(src, "T-Split", "misaligned split")  # the body is at thread[4]


def test_t_lower():
    accepts(program("lower out into ob { destruct { skip; } }"))
    rejects(program(at("threadT", "lower out into o { skip; }")), "T-Lower",
            "perspective mismatch")
    fn = ("fn f(a : Global int[] @ thread[1]) at thread[1] uses 0 { "
          "lower a into b { skip; } }\n")
    rejects(program("skip;", fns=fn), "T-Lower", "bad lower")


ASYNC = ("alloc l : int[1] in Local; l[0] = 7; async_partition o into a { "
         "async_memcpy(a, l); }")


def test_t_async_partition_and_memcpy():
    accepts(program(at("own", ASYNC)))
    rejects(program(at("own", "async_partition o into a { a[0] = 1; }")),
            "T-Arr-Assn", "not an array")
    fn = ("fn f(a : Global int[] @ thread[2]) at thread[2] uses 0 { "
          "async_partition a into b { skip; } }\n")
    rejects(program("skip;", fns=fn), "T-Async-Partition", "perspective mismatch")


def test_t_async_memcpy_needs_an_async_destination():
    rejects(program(at("own", "alloc l : int[1] in Local; async_memcpy(o, l);")),
            "T-Async-Memcpy", "not async")


def test_t_memcpy():
    accepts(program(at("own", "alloc l : int[1] in Local; memcpy(o, l);")))
    rejects(program(at("own", "memcpy(o, A);")), "T-Memcpy", "perspective mismatch")
    rejects(program(at("own", "alloc l : float[1] in Local; memcpy(o, l);")),
            "T-Memcpy", "type mismatch")


def test_rebinding_fixed_vs_paper():
    src = program(at("thread1", "let x : int @ thread[1] = 1; if true { "
                                "let x : float @ thread[1] = 1.0; } x = x + 1;"))
    rejects(src, "T-Decl", "redeclaration")
    accepts(src, rules="paper")
    accepts(program(at("thread1", "let x : int @ thread[1] = 1; if true { "
                                  "let x : int @ thread[1] = 2; }")))
