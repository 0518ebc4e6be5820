"""The Bundl reducer checks its candidates in batches (fuzz/bundl/shrink.py; issue 31.1:
a 20 s campaign on a fresh g++ cache shrank nothing, each candidate its own build).
Batched, it must end in the program that checking one candidate at a time ends in,
and build far fewer modules."""

from __future__ import annotations

import pytest
from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.walk import child_stmts, statement_count
from gpusem.compiler.backends.cpu import CpuBackend
from gpusem.fuzz.bundl import compile_property
from gpusem.fuzz.bundl import shrink as S
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.fuzz.targets import CheckResult, checked
from tests.fuzz.test_bundl_shrink import BLOATED, FLAT

# The finding of the Dask campaign of tests/fuzz/test_budget_kept.py (seed 0, the
# floor-division fault), as its piece wrote it: 15 statements.
DASK_FINDING = """
machine blocks = 1, threads = 8;

global x0 : int[7] = [-38, 251, -37, 116997, 2027, -7200, 6928];
global out : int[16];

main {
  lower out into ob {
    destruct {
      let b : int @ block[1] = partition_id;
      lower ob into ot {
        destruct {
          let t : int @ thread[1] = partition_id;
          partition ot into o by 8 {
            group 8 {
              let acc2 : int @ thread[1] = x0[((6 + 2) % 7 + 7) % 7];
              let n3 : int @ thread[1] = 0;
              while n3 < 0 {
                acc2 = acc2 + (x0[(t % 7 + 7) % 7] + (t - -9));
                n3 = n3 + 1;
              }
              o[0] = acc2;
              o[1] = (b - t) / 3;
            }
          }
        }
      }
    }
  }
}
"""

STORES = "\n".join(f"  out[{i}] = {100 + i};" for i in range(40))
LONG = ("machine blocks = 1, threads = 1;\nglobal out : int[40];\n"
        f"main {{\n{STORES}\n}}\n")


def _values(p: B.Program) -> list[int]:
    """The int literals stored, in program order."""
    found: list[int] = []

    def visit(s: B.Stmt) -> None:
        if isinstance(s, B.ArrAssign) and isinstance(s.value, B.IntLit):
            found.append(s.value.value)
        for c in child_stmts(s):
            visit(c)
    visit(p.main)
    return found


def _oracle(need: set[int]):
    """A finding while every value of `need` is still stored (any other store may
    go): its candidates that still fail come anywhere in a batch, not only first."""
    def check(g: Generated) -> CheckResult:
        if need <= set(_values(g.program)):
            return CheckResult("finding", signature="A",
                               size=statement_count(g.program))
        return CheckResult("pass")
    return check


@pytest.mark.parametrize(("text", "need"), [
    (LONG, {103, 117, 139}),
    (LONG, {100}),
    (FLAT, {3, 5}),
    (BLOATED, {3}),
], ids=["long-three", "long-first", "flat", "bloated"])
def test_the_batched_shrink_ends_where_one_at_a_time_ends(text, need) -> None:
    start = Generated(parse_program(text), race_free_by_construction=False)
    check = _oracle(need)
    asked: list[int] = []

    def prefetch(gs: list[Generated], deadline: float) -> int:
        asked.append(len(gs))
        return len(gs)  # every verdict of the batch "cached" (check computes it)

    alone, alone_res, one = S.shrink(start, "A", check, None, budget_s=600,
                                     max_tried=10_000, batch=1)
    batched, batched_res, many = S.shrink(start, "A", check, prefetch, budget_s=600,
                                          max_tried=10_000)
    assert batched.program == alone.program
    assert batched_res == alone_res
    assert (many.tried, many.kept, many.after) == (one.tried, one.kept, one.after)
    assert not many.capped and not one.capped
    # the batches: fewer than the candidates read, doubling within a step
    assert one.batches == 0 and many.batches == len(asked) < many.tried
    assert max(asked) <= S.BATCH_MAX and many.built == sum(asked) >= many.tried


def test_the_candidate_cap_counts_what_one_at_a_time_would_read() -> None:
    start = Generated(parse_program(LONG), race_free_by_construction=False)
    check = _oracle({103, 117, 139})
    alone, _, one = S.shrink(start, "A", check, None, max_tried=25, batch=1)
    batched, _, many = S.shrink(start, "A", check, lambda gs, d: len(gs),
                                max_tried=25)
    assert one.capped and many.capped and one.tried == many.tried == 25
    assert batched.program == alone.program


def test_a_batch_cut_at_its_deadline_reads_only_its_checked_candidates() -> None:
    start = Generated(parse_program(LONG), race_free_by_construction=False)
    read: list[Generated] = []

    def check(g: Generated) -> CheckResult:
        read.append(g)
        return CheckResult("pass")

    small, res, stats = S.shrink(start, "A", check, lambda gs, d: 2)
    # each batch's verdicts past the first two were cut: none is read, and the
    # shrink ends there, capped
    assert stats.capped and stats.tried == len(read) == 2 and res is None
    assert small.program == start.program


@pytest.fixture
def cold_cpu(monkeypatch, tmp_path):
    """The compile oracle on a cpu backend of its own, with an empty library cache;
    `builds` counts its g++ modules."""
    backend = CpuBackend(cache_dir=tmp_path / "cpu")
    builds: list[int] = []
    compile_library = backend._compile_library

    def counted(lib, specs):
        builds.append(len(specs))
        return compile_library(lib, specs)

    monkeypatch.setattr(backend, "_compile_library", counted)
    monkeypatch.setattr(compile_property, "shared_backend", lambda name: backend)
    monkeypatch.setenv("GPUSEM_FAULT", "floor-division")
    monkeypatch.delenv("GPUSEM_SHRINK_S", raising=False)
    yield builds
    backend.close()


def test_a_real_finding_shrinks_to_the_same_program_with_few_builds(cold_cpu) -> None:
    """The Dask campaign's finding on the cpu backend: batched, one g++ module per
    batch (a handful per step) where one at a time was one per candidate; then one
    at a time, from the cache the batches left (each kernel knows its library),
    the same candidates in the same order end in the same program."""
    builds = cold_cpu
    target = BundlTarget()
    start = Generated(parse_program(DASK_FINDING), race_free_by_construction=True)
    first = checked(target, start, "compile")
    assert first.signature == "compile:disagree:disagree:out:int:value"
    assert first.size == statement_count(start.program) == 15
    builds.clear()

    small = target.minimise(start, first, "compile", budget_s=600)
    stats = target.shrink_stats[first.signature]
    assert small.signature == first.signature and small.size <= 5, stats
    assert not stats["capped"] and stats["kept"] >= 10
    # one module per batch (a batch whose candidates all stop before the backend,
    # racy or not compared, builds none)
    assert len(builds) <= stats["batches"] < stats["tried"] / 2, (builds, stats)
    assert len(builds) <= 30, builds  # 91 candidates read: 91 builds one at a time

    builds.clear()
    _, alone_res, one = S.shrink(
        start, first.signature, lambda g: checked(target, g, "compile"), None,
        budget_s=600, max_tried=target.shrink_max_tried, batch=1)
    assert alone_res is not None and alone_res.files == small.files
    assert (one.tried, one.kept) == (stats["tried"], stats["kept"])
    assert builds == []  # every candidate it read, a batch built before
    target.close()
