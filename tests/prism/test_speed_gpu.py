"""scripts/prism_speed_gpu.py (issue 28, the Appendix B table's "speed vs baseline"):
the header re-sized to the timed size, the rows and their ratio, the cpu path that runs
the same code at small sizes and checks every output, a disagreement failing the run
(exit 1), no GPU refused in one line (exit 2), the GPU-size kernels compiling, and our
kernel's launch through the cuda backend's worker (the fake CuPy of
tests/backends/fake_cupy: nvcc for NVRTC, the cpu harness for the GPU)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.prism.parser import parse_prism
from gpusem.compiler.backends import nvcc

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "prism_speed_gpu.py"


def _load():
    return load_script("prism_speed_gpu")


S = _load()


def test_render_rewrites_launch_template_and_every_arg():
    case = S.sgemm_case("b2_sgemm_3_blocktiling", 256, 64)
    path = S.CORRECTED / "b2_sgemm_3_blocktiling.prism"
    launch = parse_prism(S.render(path.read_text(), case), str(path)).launch
    assert (launch.blocks, launch.threads) == (4, 256)
    assert dict(launch.template) == S.PAPER_TILES
    args = {a.name: a for a in launch.args}
    assert args["K"].values == (64,) and args["num_blocks_N"].values == (2,)
    assert (args["A"].size, args["A"].values, args["C"].size) == (256 * 64, None,
                                                                  256 * 256)


def test_render_refuses_an_arg_the_program_lacks_or_misses():
    case = S.copy_case(1024)
    text = (S.CORRECTED / "b4_cub_copy.prism").read_text()
    extra = dataclasses.replace(case, scalars={"n": 1})
    with pytest.raises(ValueError, match="has no # arg"):
        S.render(text, extra)
    short = dataclasses.replace(case, arrays={"inp": ("int", 1024)})
    with pytest.raises(ValueError, match="no value for # arg out"):
        S.render(text, short)


def test_row_is_the_median_ratio_and_exact_agreement():
    case = S.copy_case(1024)
    want = np.arange(8.0)
    row = S.make_row(case, [3.0, 1.0, 2.0], "memcpy", 0.5, want.copy(), want, want,
                     "cmd", "dev")
    assert (row["ours_ms"], row["baseline_ms"], row["ratio"]) == (2.0, 0.5, 4.0)
    assert row["agree"] and row["wrong_cells"] == 0 and row["launches_timed"] == 3
    assert (row["command"], row["device"], row["program"]) == ("cmd", "dev",
                                                               "b4_cub_copy")
    off = want.copy()
    off[5] += 1
    bad = S.make_row(case, [1.0], "memcpy", 0.5, off, want, want, "cmd", "dev")
    assert not bad["agree"] and (bad["wrong_cells"], bad["first_wrong"]) == (1, 5)
    # ours = the baseline, but the baseline is not the exact result: not agreeing
    wrong_base = S.make_row(case, [1.0], "memcpy", 0.5, off, off, want, "cmd", "dev")
    assert not wrong_base["agree"] and not wrong_base["baseline_exact"]
    failed = S.make_row(case, [], "memcpy", 0.5, None, want, want, "cmd", "dev")
    assert failed["ours_ms"] is None and failed["ratio"] is None
    assert not failed["agree"]


def test_cpu_run_checks_every_output(tmp_path):
    out = tmp_path / "speed.json"
    only = "b2_sgemm_1_naive,b4_cub_copy,b1_tf32_mma"
    assert S.main(["--backend", "cpu", "--only", only, "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [r["program"] for r in report["rows"]] == ["b1_tf32_mma",
                                                      "b2_sgemm_1_naive", "b4_cub_copy"]
    for r in report["rows"]:
        assert r["agree"] and r["wrong_cells"] == 0 and r["baseline_exact"], r
        assert r["ratio"] == pytest.approx(r["ours_ms"] / r["baseline_ms"], rel=1e-3)
        assert {"program", "size", "ours_ms", "baseline", "baseline_ms", "ratio",
                "agree", "command", "device"} <= set(r)
    assert report["summary"]["seconds"] > 0
    assert report["summary"] | {"seconds": 0} == {"rows": 3, "agree": 3, "wrong": 0,
                                                   "seconds": 0}


def test_a_kernel_that_computes_something_else_fails_the_run(tmp_path, monkeypatch):
    # ours is compiled with another alpha than the baseline multiplies by: every
    # cell of C differs, as a miscompiled kernel's would
    real = S.compile_case

    def other_alpha(case):
        return real(dataclasses.replace(case, scalars={**case.scalars, "alpha": 2.5}))

    monkeypatch.setattr(S, "compile_case", other_alpha)
    out = tmp_path / "speed.json"
    assert S.main(["--backend", "cpu", "--only", "b2_sgemm_1_naive", "--out",
                   str(out)]) == 1
    (row,) = json.loads(out.read_text())["rows"]
    assert not row["agree"] and row["wrong_cells"] > 0 and row["baseline_exact"]


def test_no_gpu_is_one_line_and_exit_2(tmp_path):
    # a CuPy that cannot be imported stands first on the path: the same answer on a
    # machine that has a GPU
    (tmp_path / "cupy").mkdir()
    (tmp_path / "cupy" / "__init__.py").write_text(
        "raise ImportError('no CuPy here (test)')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out",
                           str(tmp_path / "x.json")], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "no CuPy here" in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_gpu_sizes_render_and_compile(tmp_path):
    out = tmp_path / "dry.json"
    assert S.main(["--dry-run", "--out", str(out)]) == 0
    rows = {r["program"]: r for r in json.loads(out.read_text())["rows"]}
    assert sorted(rows) == sorted(p.stem for p in S.CORRECTED.glob("*.prism"))
    assert (rows["b2_sgemm_3_blocktiling"]["blocks"],
            rows["b2_sgemm_3_blocktiling"]["threads"]) == (256, 256)
    assert rows["b3_scan"]["threads"] == 512 and rows["b3_scan"]["smem_bytes"] == 69632
    assert rows["b5_h100_gemm"]["blocks"] == S.H200_SMS


@pytest.mark.skipif(not nvcc.nvcc_available(), reason="nvcc not on PATH")
def test_our_kernel_launches_and_is_timed_through_the_cuda_backend(tmp_path):
    from tests.backends.fake_gpu import fake_gpu_backend

    with fake_gpu_backend(tmp_path / "cache") as backend:
        case = S.copy_case(512)
        data = S.inputs(case, np.random.default_rng(1))
        job = S.job_for(S.compile_case(case), case, data, 30.0)
        out, each, why = S.run_ours(backend, job, case, warmup=1, iters=2)
    assert why == "" and len(each) == 2 and all(ms > 0 for ms in each)
    assert np.array_equal(out, data["inp"])


@pytest.mark.gpu
def test_on_the_gpu_one_kernel_agrees_and_is_timed(tmp_path):
    out = tmp_path / "speed.json"
    assert S.main(["--only", "b4_cub_copy", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["agree"] and row["launches_timed"] >= 20 and row["ratio"] > 0
