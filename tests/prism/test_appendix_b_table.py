"""The Appendix B table's GPU columns (scripts/prism_appendix_b.py --gpu / --speed):
without the files the table is byte for byte the committed one; with them each
program's cells come from the GPU run's JSON and the header names its command and
device; a file that is not a GPU run is refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "prism"


def _load():
    return load_script("prism_appendix_b")


T = _load()
ROWS = json.loads((RESULTS / "appendix_b.json").read_text())


def test_without_gpu_files_the_table_is_what_it_was():
    plain = [{k: v for k, v in r.items() if k not in ("gpu", "speed")} for r in ROWS]
    table = T.render(plain)
    assert table.splitlines()[2].endswith(
        "CORRECTIONS.md. GPU columns: not run here (the lead runs `gpusem exec FILE "
        "--backend cuda`).")
    assert all(ln.endswith("| not run | not run |") for ln in table.splitlines()[6:])
    committed = (RESULTS / "appendix_b.md").read_text()
    if plain == ROWS:  # no GPU run behind the committed table: byte for byte
        assert table == committed
    # else the GPU run filled the last two columns (and the header): the rest stays
    first_six = [ln.split(" | ")[:6] for ln in table.splitlines()[4:]]
    assert first_six == [ln.split(" | ")[:6] for ln in committed.splitlines()[4:]]


SYNC = {"backend": "cuda", "command": "python3 scripts/prism_sync_gpu.py --backend cuda",
        "device": "NVIDIA H200, 580.159.04", "exec": [
            *({"program": "b2_sgemm_1_naive", "mode": m, "kind": "agree"}
              for m in ("naive", "motion", "prism")),
            *({"program": "b4_cub_copy", "mode": m, "kind": "racy",
               "sampled": {"kind": "agree"}} for m in ("naive", "prism")),
            {"program": "b3_scan", "mode": "motion", "kind": "agree"},
            {"program": "b1_tf32_mma", "mode": "motion", "kind": "racy",
             "sampled": {"kind": "disagree"}}],
        "scan": [{"program": "b3_scan", "mode": "motion", "agree": True,
                  "baseline": "cupy.cumsum (CuPy 14.2.0)"}]}
SPEED = {"backend": "cuda", "command": "python scripts/prism_speed_gpu.py",
         "device": "NVIDIA H200; 132 SMs", "rows": [
             {"program": "b2_sgemm_1_naive", "size": "M=N=2048 K=2048",
              "ours_ms": 12.5, "baseline": "cupy.matmul, cuBLAS FP32",
              "baseline_ms": 0.5, "ratio": 25.0, "agree": True, "launches_timed": 25,
              "wrong_cells": 0, "cells": 4},
             {"program": "b4_cub_copy", "size": "16777216 ints", "ours_ms": 1.0,
              "baseline": "memcpy", "baseline_ms": 0.1, "ratio": 10.0, "agree": False,
              "wrong_cells": 3, "cells": 16}]}


def test_gpu_cells_say_how_each_program_agreed():
    cells = T.gpu_cells(SYNC)
    assert cells["b2_sgemm_1_naive"] == ("agrees in naive, motion, prism (gpusem "
                                         "exec: = the interpreter)")
    assert cells["b4_cub_copy"].startswith("agrees in naive, prism (against the "
                                           "interpreter's sampled schedules")
    assert cells["b3_scan"].endswith("; x = cupy.cumsum (CuPy 14.2.0) in motion")
    assert cells["b1_tf32_mma"] == "DISAGREES: motion disagree"


def test_speed_cells_give_the_ratio_or_the_disagreement():
    cells = T.speed_cells(SPEED)
    assert cells["b2_sgemm_1_naive"].startswith(
        "25x the time of cupy.matmul, cuBLAS FP32 (12.5 ms vs 0.5 ms, median of 25; "
        "M=N=2048 K=2048; output = the baseline's")
    assert cells["b4_cub_copy"] == ("DISAGREES with memcpy at 16777216 ints: 3 of 16 "
                                    "cells")


def test_the_files_fill_the_columns_and_the_header(tmp_path, monkeypatch):
    (tmp_path / "appendix_b.json").write_text(json.dumps(ROWS))
    sync, speed = tmp_path / "sync.json", tmp_path / "speed.json"
    sync.write_text(json.dumps(SYNC))
    speed.write_text(json.dumps(SPEED))
    monkeypatch.setattr(sys, "argv", ["x", "--reuse", "--out", str(tmp_path), "--gpu",
                                      str(sync), "--speed", str(speed)])
    T.main()
    table = (tmp_path / "appendix_b.md").read_text()
    assert ("Agrees on GPU: from `sync.json` (command `python3 scripts/prism_sync_gpu"
            ".py --backend cuda`; device: NVIDIA H200, 580.159.04)") in table
    assert "Speed vs baseline: from `speed.json` (command `python scripts/" in table
    naive = next(ln for ln in table.splitlines() if ln.startswith("| B.2 SGEMM 1"))
    assert naive.endswith("| agrees in naive, motion, prism (gpusem exec: = the "
                          "interpreter) | " + T.speed_cells(SPEED)["b2_sgemm_1_naive"]
                          + " |")
    b5 = next(ln for ln in table.splitlines() if ln.startswith("| B.5"))
    assert b5.endswith("| not in sync.json | not in speed.json |")
    rows = json.loads((tmp_path / "appendix_b.json").read_text())
    assert rows[1]["gpu"].startswith("agrees") and "speed" in rows[1]
    # the cpu columns are the committed rows': only the GPU cells are new
    def cpu_part(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k not in ("gpu", "speed")} for r in rows]

    assert cpu_part(rows) == cpu_part(ROWS)


@pytest.mark.parametrize("report", [
    {**SPEED, "backend": "cpu"},
    {"command": "x", "dry_run": True, "rows": []},
])
def test_a_file_that_is_not_a_gpu_run_is_refused(tmp_path, report):
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(report))
    with pytest.raises(ValueError, match="not a GPU run"):
        T.gpu_source(str(path), "prism_speed_gpu.py", T.speed_cells)
