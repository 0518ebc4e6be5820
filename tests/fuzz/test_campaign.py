"""The generic campaign runner, on a toy target whose bugs are known exactly.

The toy compiler "miscompiles" lists of integers whose sum is >= 50 and that contain a
7 (class `big7`), and "crashes" on lists longer than 6 containing a 0 (class `long0`):
so the minimal counterexamples are known independently of the runner: [7, 43] shrinks
to a 2-element list with sum exactly 50; [0,0,0,0,0,0,0] to seven zeros."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpusem.cli.main import cli
from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.campaign import Campaign, CheckResult, register_target, run_jobs
from hypothesis import strategies as st


class ToyTarget:
    name = "toy"
    properties = ("compile",)
    backends = ("cpu",)

    def __init__(self, backend: str = "cpu"):
        self.backend = backend

    def strategy(self, prop):
        return st.lists(st.integers(0, 60), max_size=10)

    def size(self, program) -> int:
        return len(program)

    def check(self, program, prop="compile") -> CheckResult:
        return self._verdict(list(program))

    def _verdict(self, xs: list[int]) -> CheckResult:
        files = {"program.json": json.dumps(xs)}
        if 7 in xs and sum(xs) >= 50:
            return CheckResult("finding", "wrong:big7", "wrong", f"sum {sum(xs)}", files,
                               len(xs))
        if len(xs) > 6 and 0 in xs:
            return CheckResult("finding", "crash:long0", "crash", "boom", files, len(xs))
        if xs[:1] == [13]:
            return CheckResult("invalid")
        return CheckResult("pass")

    def finding_meta(self, result) -> dict:
        return {"versions": {"toy": "1.0"}}

    def replay(self, files, meta) -> CheckResult:
        return self._verdict(json.loads(files["program.json"]))

    def close(self) -> None:
        pass


register_target("toy", ToyTarget)


def campaign(tmp_path, **kw) -> Campaign:
    args = {"target_name": "toy", "budget_s": 60, "seed": 7, "out_dir": str(tmp_path),
                "max_programs": 400, "round_size": 50} | kw
    return Campaign(**args)


def test_finds_and_shrinks_both_classes(tmp_path) -> None:
    summary = campaign(tmp_path).run()
    sigs = {f.signature: f for f in summary.findings}
    assert set(sigs) == {"wrong:big7", "crash:long0"}
    assert all(f.shrunk for f in summary.findings)
    big = json.loads(Path(sigs["wrong:big7"].bundle, "program.json").read_text())
    assert 7 in big and sum(big) == 50 and len(big) == 2  # minimal by construction
    long0 = json.loads(Path(sigs["crash:long0"].bundle, "program.json").read_text())
    assert long0 == [0] * 7
    assert len(list_bundles(tmp_path)) == 2  # de-duplicated by signature
    assert summary.programs >= 400 and summary.rate_per_min > 0


def test_deterministic_from_seed(tmp_path) -> None:
    a = campaign(tmp_path / "a", max_programs=120).run()
    b = campaign(tmp_path / "b", max_programs=120).run()
    assert [(f.signature, f.size) for f in a.findings] == [
        (f.signature, f.size) for f in b.findings]
    assert (a.programs, a.invalid) == (b.programs, b.invalid)


def test_shards_do_not_overlap(tmp_path) -> None:
    seen: dict[int, list] = {0: [], 1: []}

    class Spy(ToyTarget):
        def check(self, program, prop="compile"):
            seen[self.shard].append(tuple(program))
            return CheckResult("pass")

    for i in (0, 1):
        register_target(f"spy{i}", lambda backend, i=i: type(
            "S", (Spy,), {"shard": i})(backend))
        campaign(tmp_path, target_name=f"spy{i}", shard=(i, 2), max_programs=100,
                 round_size=10).run()
    # Rounds are seeded by hash(seed, round): shard 0 takes even, shard 1 odd rounds.
    assert len(seen[0]) == len(seen[1]) == 100
    assert seen[0] != seen[1]


def test_jobs_merge_summaries(tmp_path) -> None:
    base = {"target_name": "toy", "backend": "cpu", "prop": "compile", "budget_s": 60, "seed": 3,
                "shard": (0, 1), "out_dir": str(tmp_path), "round_size": 40, "max_programs": 200}
    total = run_jobs(base, jobs=2)
    assert total.programs >= 400  # two processes, 200 programs each
    assert {f.signature for f in total.findings} == {"wrong:big7", "crash:long0"}


def test_cli_fuzz_and_replay(tmp_path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["fuzz", "--target", "toy", "--budget", "30s",
                              "--max-programs", "300", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "bundles in" in res.output
    bundles = list_bundles(tmp_path)
    assert len(bundles) == 2
    res = runner.invoke(cli, ["replay", str(bundles[0].path)])
    assert res.exit_code == 0 and res.output.startswith("reproduces:")
    (bundles[0].path / "program.json").write_text("[1]")  # "fixed" compiler input
    res = runner.invoke(cli, ["replay", str(bundles[0].path)])
    assert res.exit_code == 1 and "does not reproduce" in res.output


@pytest.mark.parametrize(("args", "prefix"), [
    (["--budget", "5x"], "bad budget"), (["--shard", "2/2"], "bad shard"),
    (["--target", "nope"], "unknown target"), (["--property", "x"], "unknown property"),
])
def test_cli_bad_input(args, prefix) -> None:
    res = CliRunner().invoke(cli, ["fuzz", "--target", "toy", *args])
    assert res.exit_code != 0
    assert prefix in str(res.exception) or prefix in res.output


def test_shrinking_stops_at_the_hard_budget(tmp_path) -> None:
    import time

    class Slow(ToyTarget):
        def check(self, program, prop="compile"):
            time.sleep(0.2)  # every program fails: shrinking would take many steps
            if sum(program) > 0:
                return CheckResult("finding", "wrong:any", "wrong", "", {
                    "program.json": json.dumps(list(program))}, len(program))
            return CheckResult("pass")

    register_target("slow", Slow)
    c = campaign(tmp_path, target_name="slow", budget_s=1.0, max_programs=None)
    c._past_hard_stop = lambda: time.monotonic() - c.t0 >= 3.0  # no 30 s grace here
    t0 = time.monotonic()
    summary = c.run()
    assert time.monotonic() - t0 < 6.0
    assert [f.signature for f in summary.findings] == ["wrong:any"]  # still written
