"""`gpusem run` (cli/run.py): output, JSON, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from gpusem.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "bundl"


@dataclass
class Result:
    exit_code: int
    output: str
    err: str


@pytest.fixture
def invoke(monkeypatch, capsys):
    """`gpusem run ARGS` through the real entry point (error handling included)."""
    def go(*args):
        monkeypatch.setattr(sys, "argv", ["gpusem", "run", *map(str, args)])
        with pytest.raises(SystemExit) as info:
            main()
        out, err = capsys.readouterr()
        return Result(info.value.code or 0, out, err)
    return go


def test_run_prints_memory_and_exits_0(invoke):
    r = invoke(EXAMPLES / "block_reduce_shared.bundl")
    assert r.exit_code == 0
    assert "out = [6, 22]" in r.output and "terminated after" in r.output


def test_run_json_and_schedules(invoke):
    for sched in ("rr", "random:3", "exhaustive"):
        r = invoke(EXAMPLES / "claim_mask.bundl", "--json", "--schedule", sched)
        assert r.exit_code == 0, r.output
        doc = json.loads(r.output)
        assert doc["outcome"] == "terminated" and doc["globals"]["out"] == [7, 0, 7, 0]


def test_run_stuck_exits_1_naming_the_rule(invoke, tmp_path):
    f = tmp_path / "w.bundl"
    f.write_text((EXAMPLES / "fig12_write_down.bundl").read_text())
    r = invoke(f, "--json")
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert doc["outcome"] == "stuck" and doc["rule"] == "S-Assn"
    assert doc["message"].startswith("perspective mismatch")
    assert doc["thread"] == [0, 0, 0]


def test_run_budget_and_bad_input_exit_2(invoke, tmp_path):
    r = invoke(EXAMPLES / "while_triangle.bundl", "--max-steps", "10")
    assert r.exit_code == 2
    bad = tmp_path / "b.bundl"
    bad.write_text("main { x = ; }")
    r = invoke(bad)
    assert r.exit_code == 2 and r.err.count("\n") == 1 and "syntax error" in r.err
    assert invoke(EXAMPLES / "map_double.bundl", "--schedule", "nope").exit_code == 2


def test_run_overrides_the_machine(invoke):
    r = invoke(EXAMPLES / "block_reduce_shared.bundl", "--threads", "2", "--json")
    # with T = 2 the program's partition by 4 no longer divides thread[2]: stuck
    assert r.exit_code == 1 and json.loads(r.output)["rule"] == "S-Partition"


def test_run_with_the_preservation_check_and_big_step(invoke):
    for flag in ("--check-preservation", "--big-step"):
        r = invoke(EXAMPLES / "block_reduce_shared.bundl", flag, "--json")
        assert r.exit_code == 0, r.err
        assert json.loads(r.output)["globals"]["out"] == [6, 22]
