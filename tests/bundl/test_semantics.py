"""The Bundl small-step semantics (Appendix A.3, seed 004): one test or more per S- and
E- rule, the values (int32, C division, float32), the stuck reports, and the rule sets.

Expected memories are derived by hand in each test's comment, never copied from a run.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.machine import Machine
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.interpreter.bundl.values import INT_MAX, INT_MIN, c_div, c_rem, wrap32

# A skeleton: `out` narrowed to one element per thread, code at thread[1], with
# t = the thread's index in its block and b = the block's index.
PER_THREAD = """
machine blocks = {B}, threads = {T};
global out : {ty}[{N}];
{extra}
main {{
  lower out into ob {{
    destruct {{
      let b : int @ block[1] = partition_id;
      partition ob into o2 by {B} {{
        group {B} {{
          lower o2 into ot {{
            destruct {{
              let t : int @ thread[1] = partition_id;
              partition ot into o by {T} {{
                group {T} {{
{body}
                }}
              }}
            }}
          }}
        }}
      }}
    }}
  }}
}}
"""


def per_thread(body: str, B=1, T=4, ty="int", extra="") -> str:
    return PER_THREAD.format(B=B, T=T, N=B * T, ty=ty, extra=extra, body=body)


def run(src: str, schedule="rr", rules="fixed", **kw):
    return run_program(parse_program(src, "t.bundl"), schedule, rules=rules, **kw)


def out_of(src: str, **kw) -> list:
    o = run(src, **kw)
    assert o.kind == "terminated", o.message
    return o.globals["out"]


# ------------------------------------------------------------------------ values


def test_wrap32_and_c_division():
    assert wrap32(INT_MAX + 1) == INT_MIN and wrap32(-(2**32) + 5) == 5
    # C truncates toward zero; the remainder has the dividend's sign
    assert (c_div(-7, 2), c_rem(-7, 2), c_div(7, -2), c_rem(7, -2)) == (-3, -1, -3, 1)
    assert c_div(INT_MIN, -1) == INT_MIN and c_rem(INT_MIN, -1) == 0


def test_int_arithmetic_wraps_and_divides_like_c():
    # t = 0..3: 2147483647 + t wraps for t >= 1; (-7 - t) / 2 and % 3 truncate
    body = """
      if t == 0 { o[0] = 2147483647 * 2; }      // 0xFFFFFFFE -> -2
      if t == 1 { o[0] = 2147483647 + t; }      // INT_MIN
      if t == 2 { o[0] = (-7 - t) / 2; }        // -9 / 2 = -4 (floor would be -5)
      if t == 3 { o[0] = (-7 - t) % 3; }        // -10 % 3 = -1 (Python gives 2)
    """
    assert out_of(per_thread(body)) == [-2, INT_MIN, -4, -1]


def test_float32_rounds_every_operation():
    # 16777216 + 1 is not representable in binary32: rounds back to 16777216 (even);
    # in float64 it would be exact. 0.1 + 0.2 in float32 is 0.3 rounded once more.
    body = """
      if t == 0 { o[0] = 16777216.0 + 1.0; }
      if t == 1 { o[0] = 0.1 + 0.2; }
      if t == 2 { o[0] = 1.0 / 3.0; }
      if t == 3 { o[0] = -(2.5 * 2.0); }
    """
    got = out_of(per_thread(body, ty="float"))
    f = np.float32
    assert got == [16777216.0, float(f(0.1) + f(0.2)), float(f(1) / f(3)), -5.0]
    assert got[1] != 0.1 + 0.2  # the float64 sum differs


def test_division_by_zero_is_a_trap_not_an_exception():
    o = run(per_thread("o[0] = 1 / (t - t);"))
    assert o.kind == "stuck" and o.trap and o.rule == "E-Bop"
    assert o.message.startswith("division by zero")


def test_out_of_bounds_is_a_trap_naming_the_cell():
    # o = out + t keeps the array's end: o[4 - t] is one past the end for every t
    o = run(per_thread("o[4 - t] = 1;"))
    assert o.kind == "stuck" and o.trap and o.rule == "S-Arr-Assn"
    assert o.message.startswith("out of bounds") and "Σ out[4]" in o.message
    assert o.cell == "Σ out[4]" and str(o.persp) == "thread[1]" and o.thread[0] == 0


# ---------------------------------------------------------------- E- rules


def test_e_partition_id_fixed_counts_units_inside_the_code_perspective():
    # block[1] code writing a thread[1] variable: the thread's index in the block;
    # block[B] code writing block[1]: the block index (lead's E-Partition-Id)
    src = per_thread("o[0] = 10 * b + t;", B=2, T=2)
    assert out_of(src) == [0, 1, 10, 11]


def test_e_partition_id_paper_is_the_same_for_every_thread():
    # block[1] code writing a thread[1] variable. As printed, π/π' − 1 =
    # block[1] / thread[1] − 1 = T − 1 = 3 for every thread; fixed gives each thread
    # its index. Pieces: out has 16 cells, piece p starts at 4p under both rule sets
    # (paper: c·p = 4p; fixed: p · 16/4).
    src = """
machine blocks = 1, threads = 4;
global out : int[16];
main {
  lower out into ob {
    destruct { group 1 {
      let t : int @ thread[1] = partition_id;
      lower ob into ot { destruct { partition ot into o by 4 { group 4 {
        o[0] = t + 1;
      } } } }
    } }
  }
}
"""
    # (the paper run then deadlocks in the thread-level partition: Ψ(ψ)(p), see
    # test_psi_indexed_by_p_deadlocks_under_paper_not_fixed), so read t from η
    assert _value_of_t(src, "paper") == [3, 3, 3, 3]
    assert _value_of_t(src, "fixed") == [0, 1, 2, 3]
    assert run(src).globals["out"][0::4] == [1, 2, 3, 4]


def _value_of_t(src: str, rules: str) -> list:
    m = Machine(parse_program(src), rules)
    got = []
    for i, th in enumerate(m.threads()):
        while "t" not in th.env:
            m.step(i)
        got.append(th.env["t"].value)
    return got


def test_partition_id_at_thread_level_is_stuck_under_paper_order():
    # A.1's order: thread[4] < grid[1] needs 4 | 1, false, so E-Partition-Id is stuck
    o = run(per_thread("o[0] = t;"), rules="paper")
    assert o.kind == "stuck" and o.rule == "E-Partition-Id"


def test_e_var_read_up_is_enforced_at_run_time():
    # Figure 11: branching at block[1] on a thread[1] variable gets stuck in E-Var
    src = """
machine blocks = 1, threads = 2;
main {
  destruct { group 1 {
    destruct { let f : bool @ thread[1] = true; }
  } }
}
"""
    assert run(src).kind == "terminated"
    bad = """
machine blocks = 1, threads = 2;
main {
  destruct { group 1 {
    let f : bool @ thread[1] = true;
    if f { skip; }
  } }
}
"""
    o = run(bad)
    assert o.kind == "stuck" and o.rule == "E-Var"
    assert o.message.startswith("perspective mismatch")
    assert o.thread == (0, 0, 0) and "block[1]" in o.message


# ---------------------------------------------------------------- S- rules


SPLIT_SRC = """
machine blocks = 1, threads = 4;
global out : int[4];
main { lower out into ob { destruct { lower ob into ot { destruct {
  partition ot into o by 4 {
    group 4 { o[0] = -1; }
    split(2, 1) {
      let l : int @ thread[1] = partition_id;
      group 2 { o[0] = 100 + l; }
    } {
      let r : int @ thread[1] = partition_id;
      o[0] = 200 + r;
    }
  }
} } } } }
"""


def test_s_split_left_right_none_and_arm_relative_ids():
    # split(2, 1) of thread[4]: p 0, 1 run the left arm at thread[2] with ids 0, 1;
    # p 2 runs the right arm at thread[1] with id 2 − 2 = 0; p 3: S-Split-None
    src = SPLIT_SRC
    assert out_of(src) == [100, 101, 200, -1]
    m = Machine(parse_program(src))
    seen = set()
    while m.live():
        seen.add(m.step(m.enabled_threads()[-1]).rule)
    assert {"S-Split-None", "S-Split-Left-Done", "S-Split-Right-Done"} <= seen


def test_machine_step_events_name_the_congruence_chain():
    src = per_thread("o[0] = t + 1;", B=1, T=2)
    m = Machine(parse_program(src))
    events = []
    while m.live():
        i = m.enabled_threads()[0]
        events.append(m.step(i))
    assert m.globals()["out"] == [1, 2]
    write = next(e for e in events if e.rule == "S-Arr-Assn")
    # lower's init;s;dec;wait, destruct grid, partition, group, lower, destruct block...
    assert write.chain[0] == "S-Seq-First"
    assert "S-Destruct-Grid" in write.chain and "S-Destruct-Block" in write.chain
    assert "S-Group" in write.chain
    assert write.persp.n == 1 and write.thread[2] == 0
    rules = {e.rule for e in events}
    assert {"S-Lower", "S-Partition", "S-Decl", "S-Sync-Init-Zero",
            "S-Sync-Init-Nonzero", "S-Sync-Dec", "S-Sync-Wait-Done", "S-Seq-Done",
            "S-Group-Done", "S-Destruct-Done"} <= rules


def test_snapshot_restore_replays_identically():
    m = Machine(parse_program(per_thread("o[0] = t * 3;")))
    for _ in range(5):
        m.step(0)
    snap = m.snapshot()
    key = m.key()
    while m.live():
        m.step(m.enabled_threads()[0])
    first = m.globals()
    m.restore(snap)
    assert m.key() == key and m.globals()["out"] == [0, 0, 0, 0]
    while m.live():
        m.step(m.enabled_threads()[-1])
    assert m.globals() == first == {"out": [0, 3, 6, 9]}


def test_plug_shows_the_partition_substitution():
    from gpusem.calculus.bundl.printer import print_stmt

    m = Machine(parse_program(per_thread("o[0] = 5;", T=2)))
    text = ""
    while m.live():
        ev = m.step(1)
        if ev.rule == "S-Partition" and ev.persp.n == 2:
            text = print_stmt(m.term(1))
            break
    # thread t = 1 owns piece 1 of ot: S-Partition substitutes o + 1 for o
    assert "o + 1" in text and "init" in text and "wait" in text


def test_s_while_unrolls_and_counts():
    body = """
      let i : int @ thread[1] = 0;
      let acc : int @ thread[1] = 0;
      while i <= t { acc = acc + i; i = i + 1; }
      o[0] = acc;
    """
    assert out_of(per_thread(body)) == [0, 1, 3, 6]  # 0, 0+1, 0+1+2, 0+1+2+3


def test_let_scopes_are_lexical_under_fixed():
    # the inner `let x` is out of scope after its block; the outer x is 1 again
    body = """
      let x : int @ thread[1] = 1;
      if true { let x : int @ thread[1] = 2; o[0] = x; }
      o[0] = o[0] * 10 + x;
    """
    assert out_of(per_thread(body, T=1)) == [21]


def test_shared_memory_is_per_block_under_fixed_and_private_under_paper():
    # one thread per block writes s[0] = 7; the whole block then reads s[0]
    src = """
machine blocks = 2, threads = 2;
global out : int[4];
main { lower out into ob { destruct { partition ob into o2 by 2 { group 2 {
  alloc s : int[2] in Shared;
  lower s into st { destruct {
    claim st into sc at 1 { partition sc into s1 by 1 { group 1 { s1[0] = 7; } } }
  } }
  lower o2 into ot { destruct {
    partition ot into o by 2 { group 2 { o[0] = s[0]; } }
  } }
} } } } }
"""
    assert out_of(src) == [7, 7, 7, 7]
    # paper: S-Alloc-Shared puts the array in η, so thread 1 of each block sees its own
    # zeroed copy (and the paper's E-Partition-Id changes piece order, not values)
    o = run(src, rules="paper")
    assert o.kind != "terminated" or 0 in o.globals["out"]


def test_psi_indexed_by_p_deadlocks_under_paper_not_fixed():
    # a partition at thread[2]: Ψ(ψ)(p) with p = the thread's id is one counter per
    # thread; init sets each to size(thread[2]) = 2 and each thread decrements only its
    # own once, so every wait spins forever. Fixed: one counter for the unit.
    src = """
machine blocks = 1, threads = 2;
global out : int[2];
main { lower out into ob { destruct { lower ob into ot { destruct {
  partition ot into o by 1 { skip; }
} } } } }
"""
    assert run(src).kind == "terminated"
    o = run(src, rules="paper")
    assert o.kind == "deadlock" and o.message.startswith("deadlock")


def test_barrier_is_reusable_in_a_loop_under_fixed():
    # three rounds of a partition in a loop at block[1]: each round every thread adds
    # one to its own cell, so every cell ends at 3
    src = """
machine blocks = 1, threads = 2;
global out : int[2];
main { lower out into ob { destruct { group 1 {
  let r : int @ block[1] = 0;
  while r < 3 {
    lower ob into ot { destruct { partition ot into o by 2 { group 2 {
      o[0] = o[0] + 1;
    } } } }
    r = r + 1;
  }
} } } }
"""
    for sched in ("rr", "random:1", "random:2"):
        assert run(src, schedule=sched).globals["out"] == [3, 3]


def test_barrier_reuse_without_sense_reversal_deadlocks_under_paper():
    # examples/bundl/paper_unsound/barrier_reuse_in_loop.bundl: round-robin passes,
    # but some interleaving deadlocks under paper; under fixed none does
    from pathlib import Path

    path = (Path(__file__).resolve().parents[2] / "examples" / "bundl" /
            "paper_unsound" / "barrier_reuse_in_loop.bundl")
    src = path.read_text()
    assert run(src, rules="paper").kind == "terminated"
    bad = run(src, rules="paper", schedule="exhaustive")
    assert bad.kind == "deadlock" and bad.bad_schedule
    m = Machine(parse_program(src), "paper")
    for i in bad.bad_schedule:  # replaying the schedule reaches the deadlock
        m.step(i)
    assert m.live() and not m.enabled_threads()
    good = run(src, schedule="exhaustive")
    assert good.kind == "terminated" and good.final_memories == [{"out": [0, 0]}]


def test_partition_offset_c_times_p_is_out_of_bounds_under_paper():
    # as printed, piece of thread p is y + c·p: with c = 2 the thread p = 1 gets
    # out + 2, past the end of a 2-cell array (fixed: out + p · 2/2 = out + 1)
    src = """
machine blocks = 1, threads = 2;
global out : int[2];
main { lower out into ob { destruct { lower ob into ot { destruct {
  partition ot into o by 2 { group 2 { o[0] = 1; } }
} } } } }
"""
    assert out_of(src) == [1, 1]
    o = run(src, rules="paper")
    assert o.kind == "stuck" and o.trap and o.message.startswith("out of bounds")


def test_budget_stops_a_runaway_program():
    body = "while true { skip; }"
    o = run(per_thread(body), max_steps=500)
    assert o.kind == "budget" and o.steps == 500
    assert o.message.startswith("step budget exhausted")


def test_random_schedules_agree_on_a_race_free_program():
    src = per_thread("o[0] = t * t + b;", B=2, T=2)
    outs = {tuple(run(src, schedule=f"random:{s}").globals["out"]) for s in range(5)}
    assert outs == {(0, 1, 1, 2)}


def test_exhaustive_finds_both_results_of_a_race():
    # at grid[1] every thread reads out[0] (S-Decl) and later writes x + 1: a
    # lost update is possible. Two threads: final out[0] is 1 (both read 0) or 2.
    src = """
machine blocks = 1, threads = 2;
global out : int[1];
main {
  let x : int @ grid[1] = out[0];
  out[0] = x + 1;
}
"""
    o = run(src, schedule="exhaustive")
    assert o.kind == "terminated"
    assert sorted(m["out"][0] for m in o.final_memories) == [1, 2]
    assert run(src).globals["out"] == [1]  # round-robin: both read before either writes


def test_exhaustive_reports_the_schedule_that_gets_stuck():
    # thread 1 divides by out[0], which thread 0 sets to 0 first in some schedule
    src = """
machine blocks = 1, threads = 2;
global out : int[1] = [1];
main {
  let x : int @ grid[1] = 6 / out[0];
  out[0] = 0;
}
"""
    o = run(src, schedule="exhaustive")
    assert o.kind == "stuck" and o.trap and o.message.startswith("division by zero")
    m = Machine(parse_program(src))
    with pytest.raises(Exception, match="division by zero"):
        for i in o.bad_schedule:
            m.step(i)


def test_unknown_schedule_is_bad_input():
    from gpusem.calculus.errors import BadInput

    with pytest.raises(BadInput):
        run(per_thread("skip;"), schedule="lifo")


# ------------------------------------------------------------ meta and explorer


def test_every_statement_form_has_a_step_rule():
    from gpusem.calculus.bundl.ast import STMT_CLASSES, Skip
    from gpusem.interpreter.bundl.small_step import AXIOMS, ENTER

    for cls in STMT_CLASSES:
        assert cls is Skip or cls in AXIOMS or cls in ENTER, cls.__name__


def test_the_corpus_fires_every_rule():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples" / "bundl"
    fired: set[str] = set()
    texts = [p.read_text() for p in sorted(root.glob("*.bundl"))] + [SPLIT_SRC]
    for text in texts:
        if "expect: ok" not in text and text is not SPLIT_SRC:
            continue
        m = Machine(parse_program(text))
        while m.live():
            ev = m.step(m.enabled_threads()[0])
            fired.update(ev.rules)
    want = {
        "S-Seq-First", "S-Seq-Done", "S-Split-Left", "S-Split-Right", "S-Split-None",
        "S-Split-Left-Done", "S-Split-Right-Done", "S-Group", "S-Group-Done",
        "S-Destruct-Grid", "S-Destruct-Block", "S-Destruct-Done", "S-Decl", "S-Assn",
        "S-Arr-Assn", "S-If-True", "S-If-False", "S-While", "S-Alloc-Local",
        "S-Alloc-Shared", "S-Alloc-Global", "S-Free", "S-Partition", "S-Claim",
        "S-Claim-Body", "S-Claim-Done", "S-Claim-Skip", "S-Lower", "S-Sync-Init-Zero",
        "S-Sync-Init-Nonzero", "S-Sync-Dec", "S-Sync-Wait-Done",
        "S-Async-Partition-Congr", "S-Async-Partition-Unwind",
        "S-Async-Partition-Done", "S-Async-Memcpy", "S-Memcpy", "S-Function-Call",
    }
    assert want <= fired, sorted(want - fired)


@pytest.mark.parametrize("src", [
    # a lost update at grid[1]
    "machine blocks = 1, threads = 3;\nglobal out : int[1];\n"
    "main { let x : int @ grid[1] = out[0]; out[0] = x + 1; }",
    # two reads and a write of one cell, by two threads
    "machine blocks = 1, threads = 2;\nglobal out : int[2];\n"
    "main { let x : int @ grid[1] = out[0]; out[0] = x + 1; out[1] = out[0]; }",
])
def test_partial_order_reduction_keeps_every_final_memory(src):
    from gpusem.interpreter.bundl.explore import explore

    finals = []
    for reduce in (True, False):
        out = explore(Machine(parse_program(src)), reduce=reduce)
        assert out.kind == "terminated"
        finals.append(sorted(map(str, out.final_memories)))
    assert finals[0] == finals[1] and len(finals[0]) > 1


def _chain_by_match(frames) -> tuple[str, ...]:
    """small_step.chain as it was written before its dict lookup: one `match` arm per
    congruence rule, the reference the lookup must agree with."""
    from gpusem.calculus.bundl.perspective import Level
    from gpusem.interpreter.bundl import config as C

    names = []
    for f in frames:
        match f:
            case C.SeqFrame():
                names.append("S-Seq-First")
            case C.SplitFrame(side=side):
                names.append("S-Split-Left" if side == 0 else "S-Split-Right")
            case C.GroupFrame():
                names.append("S-Group")
            case C.DestructFrame(persp=persp):
                names.append("S-Destruct-Grid" if persp.level == Level.GRID
                             else "S-Destruct-Block")
            case C.AsyncFrame():
                names.append("S-Async-Partition-Congr")
            case C.ClaimFrame():
                names.append("S-Claim-Body")
            case C.ScopeFrame() | C.CallFrame():
                pass
            case _:
                raise AssertionError(f)
    return tuple(names)


def test_the_chain_of_every_step_is_its_frames_rules():
    """`chain` (a dict lookup per frame) and the coverage's `note_chain` (into a set) name
    every step's context as one `match` arm per frame did, over programs whose
    contexts hold every kind of frame (splits of both arms, destructs of both levels,
    groups, claims, async partitions, lets, calls)."""
    from pathlib import Path

    from gpusem.interpreter.bundl.small_step import _SPLITS, chain, note_chain

    examples = Path(__file__).resolve().parents[2] / "examples" / "bundl"
    kinds: set[str] = set()
    for name in ("split_arms", "claim_mask", "producer_consumer_split",
                 "fn_shared_scratch", "block_reduce_shared", "async_copy"):
        m = Machine(parse_program((examples / f"{name}.bundl").read_text(), name))
        while m.live():
            event = m.step(m.enabled_threads()[0])
            want = _chain_by_match(event.frames)
            assert event.chain == want and chain(list(event.frames)) == want
            for known in (set(), {"S-Group"}, set(_SPLITS), {"S-Split-Left"},
                          {"S-Destruct-Grid"}):
                seen = set(known)
                note_chain(event.frames, seen)
                assert seen == known | set(want), (known, want)
            kinds.update(type(f).__name__ for f in event.frames)
            kinds.update(n for n in want if n.startswith(("S-Split", "S-Destruct")))
    assert kinds >= {"SeqFrame", "SplitFrame", "GroupFrame", "DestructFrame",
                     "AsyncFrame", "ClaimFrame", "ScopeFrame", "CallFrame",
                     "S-Split-Left", "S-Split-Right", "S-Destruct-Grid",
                     "S-Destruct-Block"}, kinds
