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


def test_steady_states_split_the_windows_core_time_by_proc_stat_state() -> None:
    # start-up all user time; then per 5 s tick: 50 user, 20 system, 20 idle, 10 steal
    def fields(t: int) -> list[float]:
        s = max(0, t - 10) // 5
        return [100.0 * min(t, 10) + 50 * s, 0, 20.0 * s, 20.0 * s, 0, 0, 0, 10.0 * s]

    stat = [(float(t), fields(t)) for t in range(0, 55, 5)]
    states = throughput.steady_states(stat, 10.0, 20.0, 2)
    assert states == {"user": 0.5, "nice": 0.0, "system": 0.2, "idle": 0.2,
                      "iowait": 0.0, "irq": 0.0, "softirq": 0.0, "steal": 0.1}
    assert throughput.steady_states(stat, 10.0, 20.0, 0) is None


def test_the_client_s_busy_share_is_its_cpu_a_second_in_the_windows() -> None:
    own = [(float(t), 0.2 * t if t <= 10 else 2.0 + 0.9 * (t - 10)) for t in range(0, 55, 5)]
    assert throughput.steady_rate(own, 10.0, 20.0, 2) == 0.9
    assert throughput.steady_rate(own, 10.0, 20.0, 0) is None


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


def test_process_cpu_adds_up_each_role_over_the_windows() -> None:
    # two workers busy all along, a third begun inside the windows, one ended inside
    def table(t: float) -> dict:
        rows = {10: ("0:client", 0.1 * t), 11: ("2:spawned", 1.0 * t),
                12: ("2:spawned", 0.5 * t)}
        if t >= 20:
            rows[13] = ("2:spawned", 1.0 * (t - 20))
        if t < 30:
            rows[14] = ("1:forkserver", 0.01 * t)
        return rows

    procs = [(float(t), table(t)) for t in range(0, 55, 5)]
    got = throughput.steady_process_cpu(procs, 10.0, 20.0, 2)
    assert got["seconds"] == 40.0 and got["ended"] == 1
    # 1.0 + 0.5 + the third's 30 core-seconds (from t = 20) over the 40 s: 2.25
    assert got["roles"]["2:spawned"] == {"cores": 2.25, "processes": 3}
    assert got["roles"]["0:client"] == {"cores": 0.1, "processes": 1}
    assert list(got["roles"]) == ["2:spawned", "0:client"]  # the busiest first
    assert throughput.steady_process_cpu(procs, 10.0, 20.0, 0) is None


def test_the_process_table_finds_this_process_and_its_children() -> None:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        table = throughput.process_table()
    finally:
        child.kill()
        child.wait()
    assert table[child.pid][0] == "1:python" or table[child.pid][0].startswith("1:")
    assert any(role.startswith("0:") for role, _ in table.values())
