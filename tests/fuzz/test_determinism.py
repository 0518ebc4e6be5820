"""Determinism (DESIGN.md): the z3 race analysis (`typing_rules/bundl/race`) and the property that
programs it proves race-free end in one memory under every explored schedule.

Hand-written cases have independently known answers: a staged exchange through Shared
memory is ordered by the barrier that ends the writing partition (race-free, one final
memory) and is racy without it (exhaustive search finds two final memories); uniform
writes of one value are benign; a read-modify-write by two threads is a race.
"""

from __future__ import annotations

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.fuzz.bundl import properties as props
from gpusem.typing_rules.bundl import race
from gpusem.fuzz.bundl.strategies.kernels import kernels
from gpusem.fuzz.bundl.strategies.programs import programs
from gpusem.fuzz.campaign import Campaign
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HEAD = """machine blocks = 1, threads = 2;
global out : int[2];
main { lower out into ob { destruct {
  alloc s : int[2] in Shared;
  lower s into st { lower ob into ot { destruct {
    let t : int @ thread[1] = partition_id;
"""
TAIL = "} } } } } }\n"
# thread t writes slot t of s, then (after the barrier ending that partition) reads
# slot t + 1 mod 2: out = [11, 10] under every schedule.
ORDERED = HEAD + """
    partition st into s1 by 2 { group 2 { s1[0] = t + 10; } }
    partition ot into o by 2 { group 2 { o[0] = st[(t + 1) % 2]; } }
""" + TAIL
# the same exchange inside one partition: thread 0 reads slot 1 before or after
# thread 1 writes it: out[0] is 0 or 11.
UNORDERED = HEAD + """
    partition st into s1 by 2 { partition ot into o by 2 { group 2 {
      s1[0] = t + 10;
      o[0] = s1[1 - t];
    } } }
""" + TAIL
UNIFORM = "machine blocks = 2, threads = 2;\nglobal out : int[1];\nmain { out[0] = 5; }"
RMW = ("machine blocks = 1, threads = 2;\nglobal out : int[1];\n"
       "main { out[0] = out[0] + 1; }")
# different values from two blocks into one cell: a piece's bounds keep the array's
# end (errata S-Partition), so block 0 reaches block 1's cell: out[1] is 1 or 2.
TWO_VALUES = """machine blocks = 2, threads = 1;
global out : int[2];
main { lower out into ob { destruct {
  let b : int @ block[1] = partition_id;
  partition ob into op by 2 { group 2 { op[1 - b] = b + 1; } }
} } }"""


def _prog(src: str):
    p = parse_program(src)
    check_program(p)
    return p


def test_barrier_orders_the_staged_exchange():
    p = _prog(ORDERED)
    assert race.analyse(p).race_free
    every = run_program(p, "exhaustive")
    assert every.final_memories == [{"out": [11, 10]}]
    assert props.determinism(p).status == "pass"


def test_exchange_without_barrier_is_a_race_with_a_witness():
    p = _prog(UNORDERED)
    report = race.analyse(p)
    assert not report.race_free
    assert "t=0" in report.races[0].witness or "t=1" in report.races[0].witness
    # the race is real: two final memories under exhaustive exploration
    assert len(run_program(p, "exhaustive").final_memories) == 2
    assert props.determinism(p).status == "invalid"


def test_uniform_writes_are_benign_and_different_values_are_not():
    assert race.analyse(_prog(UNIFORM)).race_free
    p = _prog(TWO_VALUES)
    assert not race.analyse(p).race_free
    assert len(run_program(p, "exhaustive").final_memories) == 2
    assert not race.analyse(_prog(RMW)).race_free


def test_partitioned_kernel_writes_are_disjoint():
    src = """machine blocks = 2, threads = 2;
global out : int[4];
main { lower out into ob { destruct { partition ob into op by 2 { group 2 {
  lower op into ot { destruct { let t : int @ thread[1] = partition_id;
    partition ot into o by 2 { group 2 { o[0] = t * 3 + 1; } } } } } } } } }"""
    p = _prog(src)
    assert race.analyse(p).race_free
    assert len(run_program(p, "exhaustive").final_memories) == 1
    # thread 0 writing its piece's cell 1 reaches its neighbour's cell (a piece's
    # bounds keep the array's end): threads 0 and 1 of a block both write out[2b + 1],
    # 1 and 4.
    bad = _prog(src.replace("o[0] = t * 3 + 1;", "o[1 - t] = t * 3 + 1;"))
    report = race.analyse(bad)
    assert not report.race_free and "out[" in report.races[0].witness
    assert len(run_program(bad, "exhaustive").final_memories) == 4


def test_the_property_reports_a_wrong_race_freedom_claim(monkeypatch):
    """The property can fail: an analysis that calls everything race-free makes the
    racy exchange a finding (two memories across schedules or exhaustively)."""
    monkeypatch.setattr(race, "analyse", lambda p: race.RaceReport(True))
    res = props.determinism(_prog(UNORDERED))
    assert res.status == "finding"
    assert res.signature == "determinism:nondeterministic"
    assert "program.bundl" in res.files


def test_race_free_programs_are_deterministic():
    """Not vacuous: most of the 60 programs are proved race-free and run (`pass`)."""
    verdicts = []

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(programs(), kernels(max_blocks=2, max_threads=8)))
    def check(prog):
        res = props.determinism(prog)
        assert res.status != "finding", res.files.get("trace.txt")
        verdicts.append(res.status)

    check()
    assert verdicts.count("pass") >= 40, verdicts


def test_the_analysis_proves_most_kernels_race_free():
    """Not vacuous: the kernel generator's programs are race-free by construction;
    the analysis (barriers, partitions, read-only inputs) proves it for them."""
    got = []

    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(kernels(max_blocks=2, max_threads=8))
    def collect(p):
        got.append(race.analyse(p).race_free)

    collect()
    assert sum(got) >= 0.9 * len(got)


def test_determinism_campaign_runs_clean(tmp_path):
    summary = Campaign("bundl", prop="determinism", budget_s=30, max_programs=40,
                       out_dir=str(tmp_path)).run()
    assert summary.programs >= 40 and summary.findings == []
    assert summary.invalid < summary.programs  # some programs are proved race-free


@pytest.mark.benchmark
def test_bench_race_analysis(benchmark):
    p = _prog(ORDERED)
    assert benchmark(race.analyse, p).race_free
