"""Elaboration of Prism's surface into Bundl (calculus/prism/elaborate.py) and the
surface-only rules (typing_rules/prism/surface.py). Expected memories are computed
here from the surface program's meaning (Sec 3), never copied from a run."""

from __future__ import annotations

import pytest
from gpusem.api.prism import parse
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.interpreter.bundl.big_step import run_big_step
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program

KERNEL = '@prism("global")\n@requires(grid[1], block[1], thread[1]{smem})\n'


def prog(body: str, *, blocks=2, threads=4, n=8, args="", fns="", smem=""):
    head = (f"# launch: k blocks={blocks} threads={threads}\n# arg A = int[{n}]\n"
            f"{args}")
    text = head + fns + KERNEL.format(smem=smem) + "def k(A: ptr(int) @ grid[1]):\n"
    return text + body


def run(text: str, big: bool = False) -> list[int]:
    p = parse(text, "t.prism")
    check_program(p)
    if big:
        return run_big_step(p).globals["A"]
    out = run_program(p, "random:1")
    assert out.kind == "terminated", out.message
    return out.globals["A"]


PER_THREAD = """\
    with group(grid[1]):
        b : int @ block[1] = id()
        with partition(A, dimension=block[1], offset=b * {T}) as A_blk:
            with group(block[1]):
                t : int @ thread[1] = id()
                with partition(A_blk, dimension=thread[1], offset=t) as A_t:
                    with group(thread[1]):
{body}
    return
"""


def per_thread(body: str, T: int = 4, **kw) -> str:
    indented = "\n".join(" " * 24 + line for line in body.splitlines())
    return prog(PER_THREAD.format(T=T, body=indented), threads=T, **kw)


def test_id_partition_group_mean_one_cell_per_thread():
    # id() at grid code into a block[1] variable is the block's index, at block code
    # into a thread[1] variable the thread's (Sec 3.5)
    text = per_thread("A_t[0] = 10 * b + t")
    assert run(text) == [10 * b + t for b in range(2) for t in range(4)]
    assert run(text, big=True) == [10 * b + t for b in range(2) for t in range(4)]


def test_for_range_break_ternary_and_augmented_assignment():
    body = ("s : int @ thread[1] = 0\nfor i in range(0, 10, 2):\n"
            "    if i == 6:\n        break\n    s += i if t > 1 else 1\n"
            "A_t[0] = s")
    # i = 0, 2, 4 before the break: t > 1 adds 0 + 2 + 4, else 1 three times
    want = [6 if t > 1 else 3 for _ in range(2) for t in range(4)]
    assert run(per_thread(body)) == want


def test_function_result_and_inlining():
    fns = ('@prism("device")\n@requires(thread[1])\n'
           "def sq(x : int @ thread[1]):\n    return x * x + 1\n")
    body = "r : int @ thread[1] = sq(t + b)\nA_t[0] = r"
    assert run(per_thread(body, fns=fns)) == [(t + b) ** 2 + 1 for b in range(2)
                                               for t in range(4)]


def test_nary_split_leaves_units_idle():
    # Fig. 8: thread[4] split into 2, 1, 1 (here 2 and 1: the fourth thread idles)
    body = """\
    with group(grid[1]):
        with partition(A, dimension=thread[1], offset=id()) as A_t:
            with group(block[1]):
                match split(thread):
                    case 2:
                        with group(thread[1]):
                            A_t[0] = 7
                    case 1:
                        with group(thread[1]):
                            A_t[0] = 9
"""
    text = prog(body, blocks=1, threads=4, n=4)
    assert run(text) == [7, 7, 9, 0]


def test_warp_is_thread_32():
    body = """\
    with partition(A, dimension=block[1], offset=0) as A_b:
        with group(block[1]):
            w : int @ warp[1] = id()
            with partition(A_b, dimension=warp[1], offset=w * 32) as A_w:
                with group(warp[1]):
                    l : int @ thread[1] = id()
                    with partition(A_w, dimension=thread[1], offset=l) as A_l:
                        with group(thread[1]):
                            A_l[0] = 100 * w + l
"""
    text = prog(body, blocks=1, threads=64, n=64)
    assert run(text, big=True) == [100 * (i // 32) + i % 32 for i in range(64)]


@pytest.mark.parametrize(("body", "rule", "line", "col"), [
    # Fig. 7, example 1: broadening from thread[2] to block[1]
    ("    with group(block[1]):\n        with group(thread[2]):\n"
     "            with group(block[1]):\n                pass\n", "T-Group", 8, 13),
    # Fig. 7, example 2: block[6] cannot be cut into block[5]
    ("    with group(block[6]):\n        with group(block[5]):\n            pass\n",
     "T-Group", 7, 9),
    # Fig. 9: the cases ask for more units than there are
    ("    with group(block[1]):\n        match split(thread):\n            case 4:\n"
     "                pass\n            case 1:\n                pass\n",
     "T-Split", 7, 9),
    # Sec 3.4.2: the partitioned pointer is hidden inside
    ("    with partition(A, dimension=block[1], offset=0) as A_b:\n"
     "        x : int @ grid[1] = A[0]\n", "T-Partition", 7, 29),
    # a Bundl typing error (T-Decl: an int into a bool) reaches the surface span
    ("    x : bool @ grid[1] = 3\n", "T-Decl", 6, 26),
])
def test_errors_name_the_surface_span(body, rule, line, col):
    text = prog(body, blocks=6, threads=4)
    with pytest.raises((BadInput, IllTyped)) as e:
        check_program(parse(text, "t.prism"))
    assert e.value.rule == rule, e.value.one_line()
    assert (e.value.span.file, e.value.span.line, e.value.span.column) == (
        "t.prism", line, col), e.value.one_line()


DEV = ('@prism("device")\n@requires(thread[{n}]{smem})\n'
       "def g(p : ptr({ty}) @ thread[{n}]):\n{body}")


@pytest.mark.parametrize(("n", "ty", "dev_body", "call_at", "rule"), [
    # Bound-Call: a warp-level function called by a pair of threads
    (32, "int", "    pass\n", "thread[2]", "Bound-Call"),
    # Const-Pointer: a non-const pointer parameter needs the exact perspective
    (1, "int", "    pass\n", "thread[4]", "Const-Pointer"),
    # Const-Write: storing through a const pointer
    (4, "const(int)", "    p[0] = 1\n", "thread[4]", "Const-Write"),
])
def test_surface_rules_at_calls(n, ty, dev_body, call_at, rule):
    fns = DEV.format(n=n, ty=ty, smem="", body=dev_body)
    body = (f"    with group(grid[1]):\n        with partition(A, dimension=thread[4],"
            f" offset=0) as A_t:\n            with group({call_at}):\n"
            f"                g(A_t)\n")
    with pytest.raises(IllTyped) as e:
        parse(prog(body, threads=4, fns=fns), "t.prism")
    assert e.value.rule == rule, e.value.one_line()


def test_smem_budget_counts_allocations_and_callees():
    body = ("    with group(grid[1]):\n        with group(block[1]):\n"
            "            s : shared(float[16]) @ block[1]\n")
    parse(prog(body, smem=", smem=64"), "t.prism")  # 16 floats = 64 bytes: fits
    with pytest.raises(IllTyped) as e:
        parse(prog(body, smem=", smem=60"), "t.prism")
    assert e.value.rule == "Smem-Budget"


def test_claim_used_in_one_branch_only():
    body = """\
    with group(grid[1]):
        with group(block[1]):
            s : shared(int[8]) @ block[1]
            with claim(s, scope=thread[2], offset=0) as c:
                match split(thread):
                    case 2:
                        c[0] = 1
                    case 2:
                        c[1] = 2
"""
    with pytest.raises(IllTyped) as e:
        parse(prog(body, smem=", smem=32"), "t.prism")
    assert e.value.rule == "Claim-One-Branch"


def test_bound_launch():
    text = prog("    pass\n", threads=4).replace("thread[1])", "thread[32])")
    with pytest.raises(IllTyped) as e:
        parse(text, "t.prism")
    assert e.value.rule == "Bound-Launch"


def test_partition_by_an_index_function():
    # Fig. 5: y[ro, co] reads x[f(ro, co)]; here thread t of 4 owns cells 2t, 2t + 1,
    # written through f(ro, co) = 2t + co (ro unused, as Fig. 5's row offset 0)
    body = """\
    with group(grid[1]):
        with group(block[1]):
            t : int @ thread[1] = id()
            with partition(A, p=thread[1], f=lambda ro, co: 2 * t + ro + co) as A_t:
                with group(thread[1]):
                    A_t[0, 0] = 10 + t
                    A_t[0, 1] = 20 + t
"""
    text = prog(body.replace("with group(grid[1]):\n        with group(block[1]):",
                             "with partition(A, dimension=block[1], offset=0) as A_b:"
                             "\n        with group(block[1]):").replace(
        "partition(A, p=", "partition(A_b, p="), blocks=1, threads=4, n=8)
    assert run(text) == [v for t in range(4) for v in (10 + t, 20 + t)]
