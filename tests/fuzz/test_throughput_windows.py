"""scripts/throughput.py's readings off a campaign's progress ticks: the programs a
minute in each steady window, and the host's busy CPU a program over those windows
(issue 31.3: the campaign's cost a program once it runs, start-up left out)."""

from __future__ import annotations

import pytest

from tests.script_module import load_script

throughput = load_script("throughput")


def test_window_rates_read_the_count_at_each_edge() -> None:
    # 100 programs a second from t = 10 (start-up before): two 20 s windows after 10 s
    samples = [(float(t), max(0, 100 * (t - 10))) for t in range(0, 55, 5)]
    rates = throughput.window_rates(samples, warmup=10.0, window=20.0)
    assert rates == [6000.0, 6000.0]


def test_steady_cpu_is_the_busy_time_in_the_windows_per_program_in_them() -> None:
    # start-up burns 30 core-seconds and checks nothing; then 16 cores busy and 200
    # programs a second: 80 ms of CPU a program, whatever the start-up cost
    samples = [(float(t), max(0, 200 * (t - 10))) for t in range(0, 55, 5)]
    busy = [(float(t), 3.0 * t if t <= 10 else 30.0 + 16.0 * (t - 10))
            for t in range(0, 55, 5)]
    rates = throughput.window_rates(samples, 10.0, 20.0)
    assert throughput.steady_cpu_ms(samples, busy, 10.0, 20.0, len(rates)) == 80.0
    # the whole run's reading would have counted the start-up: 670 s / 8,000 programs
    assert 1000 * busy[-1][1] / samples[-1][1] == pytest.approx(83.75)


def test_no_steady_window_no_reading() -> None:
    assert throughput.steady_cpu_ms([(0.0, 0), (5.0, 10)], [(0.0, 0.0), (5.0, 1.0)],
                                    20.0, 20.0, 0) is None


def test_a_tree_comparison_passes_every_other_argument_to_each_run() -> None:
    trees, turns, rest, out = throughput._tree_args(
        ["--tree", "/tmp/base", "--backend", "cuda", "--tree", ".", "--turns", "2",
         "--jobs", "16", "--json", "both.json", "--keep-bundles", "kept"])
    assert (trees, turns, out) == (["/tmp/base", "."], 2, "both.json")
    # each run writes its own JSON (compare_trees adds --json) and keeps no bundles
    assert rest == ["--backend", "cuda", "--jobs", "16"]
