"""Issue 29 item 6: the VCODE differential's comparison (scripts/vcode_diff.py), which
judges NESL's serial and CUDA vector libraries against each other on the neslgpu
benchmarks (results/lambdacu/vcode_*.json). The third-party interpreter is not in the
project: its runs are played here by stand-in interpreters, small shell scripts that
print what a VCODE run prints (the final stack, one value a line, the timer last)."""

from __future__ import annotations

import json
import math
import stat
import subprocess
from pathlib import Path

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "neslgpu_build.sh"


def _script():
    return load_script("vcode_diff")


vd = _script()


def test_a_timed_programs_last_value_is_its_timer_and_is_not_compared():
    toks, secs = vd.split_timer("( 2.47052900000000e+06 )\n( 7.541e-06 )\n", True)
    assert toks == ["(", "2.47052900000000e+06", ")"] and secs == 7.541e-06
    # a program with no timer keeps every value, segment descriptors included
    toks, secs = vd.split_timer("[ 2 ]\n( 4 5 )\n", False)
    assert toks == ["[", "2", "]", "(", "4", "5", ")"] and secs is None


def test_float32_rounding_is_named_and_anything_else_differs():
    # dotp.10000000's sum: exact in double, rounded in float32 (rel ~1.7e-8)
    cmp = vd.compare(["(", "2.45019288640000e+10", ")"],
                     ["(", "2.45019284480000e+10", ")"], 1e-5)
    assert cmp["verdict"] == "float32" and 0 < cmp["max_rel_float32"] < 1e-7
    # past the tolerance: a difference
    cmp = vd.compare(["(", "2.507794e+06", ")"], ["(", "2.470529e+06", ")"], 1e-5)
    assert cmp["verdict"] == "differs" and cmp["first"][0]["token"] == 1
    # integers are never float32: 1 apart in 10^9 still differs
    assert vd.compare(["1000000000"], ["1000000001"], 1e-5)["verdict"] == "differs"


def test_nans_and_lengths():
    assert vd.compare(["nan"], ["-nan"], 1e-5)["verdict"] == "nan-sign"
    assert vd.compare(["-nan"], ["1.5"], 1e-5)["verdict"] == "differs"
    assert vd.compare(["inf"], ["1e308"], 1e-5)["verdict"] == "differs"
    cmp = vd.compare(["(", "1", "2", ")"], ["(", "1", ")"], 1e-5)
    assert cmp["verdict"] == "differs" and cmp["first"][0]["why"] == "lengths differ"
    assert vd.compare(["(", "T", ")"], ["(", "F", ")"], 1e-5)["verdict"] == "differs"
    assert vd.compare(["(", "T", ")"], ["(", "T", ")"], 1e-5)["verdict"] == "same"
    # dotp.10000 prints its time alone: nothing was compared, and the verdict says so
    assert vd.compare([], [], 1e-5)["verdict"] == "timer-only"


def test_the_short_runs_start_first(tmp_path):
    for name, size in (("qs.1000.vcode", 10), ("bh.500.vcode", 50),
                       ("bh.75000.vcode", 50), ("dotp.vcode", 5)):
        (tmp_path / name).write_text("x" * size)
    ranked = sorted(tmp_path.iterdir(), key=vd.cost)
    assert [p.name for p in ranked] == ["dotp.vcode", "qs.1000.vcode",
                                        "bh.500.vcode", "bh.75000.vcode"]


def _stand_in(path: Path, stdout: str, rc: int = 0) -> str:
    path.write_text(f"#!/bin/sh\nprintf '{stdout}'\nexit {rc}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_run_compares_each_interpreter_with_the_first(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "timed.vcode").write_text("FUNC MAIN1_1\nSTART_TIMER\nSTOP_TIMER\nRET\n")
    (bench / "plain.vcode").write_text("FUNC MAIN1_1\nRET\n")
    ref = _stand_in(tmp_path / "ref", "( 1 2 )\\n( 0.5 )\\n")
    same = _stand_in(tmp_path / "same", "( 1 2 )\\n( 0.7 )\\n")
    other = _stand_in(tmp_path / "other", "( 1 3 )\\n( 0.5 )\\n")
    crash = _stand_in(tmp_path / "crash", "", rc=1)
    out = tmp_path / "r.json"
    rc = vd.main(["--bench", str(bench), "--interp", f"ref={ref}",
                  "--interp", f"same={same}", "--interp", f"other={other}",
                  "--interp", f"crash={crash}", "--interp", f"gone={tmp_path}/none",
                  "--out", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    rows = {r["file"]: r for r in report["benchmarks"]}
    timed, plain = rows["timed.vcode"], rows["plain.vcode"]
    # the timer (0.5 against 0.7) is set apart in a timed program ...
    assert timed["against"]["same"]["verdict"] == "same"
    assert timed["runs"]["same"]["program_timer_s"] == 0.7
    # ... and compared in one that has none
    assert plain["against"]["same"]["verdict"] == "differs"
    assert timed["against"]["other"]["verdict"] == "differs"
    assert timed["against"]["crash"] == {"verdict": "error", "rc": {"ref": 0, "crash": 1}}
    assert timed["runs"]["gone"]["rc"] == "not-built"
    assert report["builds"]["gone"] == {"built": False}
    assert report["tally"]["other:differs"] == 2


def test_nothing_starts_past_the_deadline(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "a.vcode").write_text("FUNC MAIN1_1\nRET\n")
    ref = _stand_in(tmp_path / "ref", "( 1 )\\n")
    out = tmp_path / "r.json"
    assert vd.main(["--bench", str(bench), "--interp", f"ref={ref}",
                    "--deadline", "-1", "--out", str(out)]) == 0
    row = json.loads(out.read_text())["benchmarks"][0]
    assert row["runs"]["ref"]["rc"] == "deadline"
    assert math.isclose(row["runs"]["ref"]["seconds"], 0.0)


def test_no_benchmark_is_bad_input(tmp_path):
    assert vd.main(["--bench", str(tmp_path), "--interp", "a=/bin/true",
                    "--out", str(tmp_path / "r.json")]) == 2


def test_the_build_script_refuses_a_missing_checkout(tmp_path):
    for args in (["build", str(tmp_path), str(tmp_path / "b"), "serial"],
                 ["prepare"], ["nonsense", str(tmp_path)]):
        proc = subprocess.run(["bash", str(BUILD), *args], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 2, args
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("neslgpu_build:")
    (tmp_path / "nesl" / "vcode").mkdir(parents=True)
    proc = subprocess.run(["bash", str(BUILD), "build", str(tmp_path),
                           str(tmp_path / "b"), "arm"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 2 and "serial or cuda" in proc.stderr
