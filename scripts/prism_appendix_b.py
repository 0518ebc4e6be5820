"""The Appendix B table of Prism (issue 28): for every program of Appendix B, whether
the printed listing is parsed (or the rule that rejects it), the corrections it needed,
and for the corrected program: does it run on the Bundl machine and end where NumPy
says, does it compile, does the compiled kernel agree with the interpreter on the cpu
backend. Writes results/prism/appendix_b.md and appendix_b.json.

    PYTHONPATH=src python scripts/prism_appendix_b.py [--out results/prism]
        [--only b5_h100_gemm] [--modes naive,motion,prism]

`--only NAME` recomputes the row of that corrected program and keeps the others from
the existing appendix_b.json (the whole table takes minutes on a shared machine);
`--reuse` keeps every row (nothing recomputed: the table is only written again);
`--modes` the barrier placements compiled and compared (default: motion alone).

The GPU columns come from the two JSON files a GPU run writes: `--gpu FILE`
(scripts/prism_sync_gpu.py: `gpusem exec --backend cuda` per corrected program and
sync mode, B.3 against cupy.cumsum) fills "agrees on GPU", `--speed FILE`
(scripts/prism_speed_gpu.py: each kernel timed against its outside baseline) fills
"speed vs baseline"; the table's header then names each file's command and device.
Without them both columns say "not run" and the output is what it always was.

    PYTHONPATH=src python scripts/prism_appendix_b.py --reuse \
        --gpu gpu-out/prism_sync_gpu.json --speed gpu-out/prism_speed_gpu.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from gpusem.api.prism import parse  # noqa: E402
from gpusem.calculus.errors import GpusemError  # noqa: E402
from gpusem.calculus.prism.parser import parse_prism  # noqa: E402
from gpusem.compiler.bundl_cuda.pipeline import compile_program  # noqa: E402
from gpusem.fuzz.bundl.compile_property import check_program as exec_cpu  # noqa: E402
from gpusem.interpreter.bundl.big_step import run_big_step  # noqa: E402
from gpusem.interpreter.bundl.reference import reference  # noqa: E402
from gpusem.typing_rules.prism.surface import check_surface  # noqa: E402
from prism.test_appendix_b import CORRECTED, args  # noqa: E402

import numpy as np  # noqa: E402

BOOK = ROOT / "examples" / "prism" / "appendix_b"
PROGRAMS = [  # (program, printed files, corrected file or None)
    ("B.1 TF32 mma (simple_mma, mmaTF32NaiveKernel)", ["b1_tf32_mma"], "b1_tf32_mma"),
    ("B.2 SGEMM 1 naive", ["b2_sgemm_1_naive"], "b2_sgemm_1_naive"),
    ("B.2 SGEMM 2 coalesced", ["b2_sgemm_2_coalesced"], "b2_sgemm_2_coalesced"),
    ("B.2 SGEMM 3 block tiling", ["b2_sgemm_3_blocktiling"], "b2_sgemm_3_blocktiling"),
    ("B.2 SGEMM 4 float4", ["b2_sgemm_4_float4"], "b2_sgemm_4_float4"),
    ("B.3 scan, decoupled look-back (one block)", ["b3_scan"], "b3_scan"),
    ("B.4 CUB load/store (6 functions)", ["b4_block_load", "b4_warp_load",
     "b4_thread_load", "b4_block_store", "b4_warp_store", "b4_thread_store"],
     "b4_cub_copy"),
    ("B.5 H100 bf16 GEMM (TMA and wgmma modelled)", ["b5_h100_gemm"],
     "b5_h100_gemm"),
]


def printed_status(name: str) -> str:
    path = BOOK / "printed" / f"{name}.prism"
    try:
        check_surface(parse_prism(path.read_text(), str(path)))
    except GpusemError as e:
        return f"{name}: rejected, {e.rule} at {e.span.line}:{e.span.column}"
    return f"{name}: parsed"


def corrections(name: str) -> int:
    text = (BOOK / "CORRECTIONS.md").read_text()
    m = re.search(rf"\(`corrected/{name}\.prism`\)[^\n]*\n(.*?)(?=\n### |\n## |\Z)", text,
                  re.S)
    return len(re.findall(r"^\d+\. ", m.group(1), re.M)) if m else 0


def corrected_status(name: str, modes: tuple[str, ...] = ("",)) -> dict[str, object]:
    path = BOOK / "corrected" / f"{name}.prism"
    prog = parse(path.read_text(), str(path))
    out, spec = CORRECTED[name]
    t = time.perf_counter()
    res = run_big_step(prog)
    ok = res.kind == "terminated" and np.array_equal(
        np.asarray(res.globals[out], np.float64),
        np.asarray(spec(args(path)), np.float64))
    row: dict[str, object] = {"runs": "yes (= NumPy)" if ok else f"no ({res.kind})",
                              "run_s": round(time.perf_counter() - t, 2)}
    try:
        kernel = compile_program(prog)
        row["compiles"] = f"yes ({len(kernel.source.splitlines())} lines)"
    except GpusemError as e:
        row["compiles"] = f"no: {e.one_line()}"
        return row
    # `modes`: the barrier placements compared (""/motion is the default), each
    # against the one reference
    ref, how = reference(prog), "4 schedules"
    if ref.racy:
        # the z3 race analysis could not prove race freedom: compare against the
        # interpreter's sampled schedules instead, and say so
        ref = reference(prog, prove_race_free=False)
        how = "4 schedules; race freedom sampled, not proven by the analysis"
    kinds = [exec_cpu(prog, "cpu", (0, 1, 2, 3), ref=ref, sync=m).kind for m in modes]
    verdict = "agrees" if set(kinds) == {"agree"} else "/".join(kinds)
    named = f" in {', '.join(modes)}" if modes != ("",) else ""
    row["cpu"] = f"{verdict}{named} ({how})"
    return row


# ------------------------------------------------------------------ GPU columns
def gpu_source(path: str | None, producer: str, cells) -> tuple[dict, dict] | None:
    """(the file's header facts, {corrected program: cell}) of a GPU run's JSON, or
    None when no file is given; ValueError when it is not one (a cpu or dry run
    would fill a GPU column with what no GPU said)."""
    if path is None:
        return None
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot read it: {err}") from None
    if not isinstance(report, dict) or report.get("backend") != "cuda" \
            or report.get("dry_run"):
        raise ValueError(f"{path}: not a GPU run of {producer} (backend "
                         f"{report.get('backend') if isinstance(report, dict) else '?'})")
    facts = {"file": Path(path).name, "command": report.get("command", "?"),
             "device": report.get("device") or report.get("machine", "?")}
    return facts, {k: v.replace("|", "/") for k, v in cells(report).items()}


def gpu_cells(report: dict) -> dict[str, str]:
    """'agrees on GPU' from prism_sync_gpu.py's JSON: per program, the verdict of each
    sync mode's `gpusem exec --backend cuda` (or, for a program exec declines as not
    proven race-free, the comparison against sampled schedules; for B.5 against the
    big-step outcome), and B.3's scan against cupy.cumsum."""
    by: dict[str, list[dict]] = {}
    for r in report.get("exec", []):
        by.setdefault(r["program"], []).append(r)
    cells = {}
    for program, rows in by.items():
        kinds = {r["mode"]: r.get("sampled", {}).get("kind", r["kind"]) for r in rows}
        if set(kinds.values()) == {"agree"}:
            if any("sampled" in r for r in rows):
                how = "against the interpreter's sampled schedules: race freedom not "
                how += "proven, exec declines it"
            elif any("reference" in r for r in rows):
                how = f"against the {rows[0]['reference']}"
            else:
                how = "gpusem exec: = the interpreter"
            cell = f"agrees in {', '.join(kinds)} ({how})"
        else:
            cell = "DISAGREES: " + ", ".join(f"{m} {k}" for m, k in kinds.items())
        scans = [r for r in report.get("scan", []) if r["program"] == program]
        if scans:
            same = [r["mode"] for r in scans if r.get("agree")]
            cell += (f"; x = {scans[0].get('baseline', 'cumsum')} in {', '.join(same)}"
                     if len(same) == len(scans) else
                     "; x DIFFERS from cumsum in " + ", ".join(
                         r["mode"] for r in scans if not r.get("agree")))
        cells[program] = cell
    return cells


def speed_cells(report: dict) -> dict[str, str]:
    """'speed vs baseline' from prism_speed_gpu.py's JSON: ours / baseline (above 1:
    ours is slower), both medians, the size, and whether the outputs were equal."""
    cells = {}
    for r in report.get("rows", []):
        if r.get("failed"):
            cell = f"failed at {r['size']}: {str(r['failed'])[:160]}"
        elif not r.get("agree"):
            cell = (f"DISAGREES with {r['baseline']} at {r['size']}: "
                    f"{r['wrong_cells']} of {r['cells']} cells")
        else:
            cell = (f"{r['ratio']:.3g}x the time of {r['baseline']} ({r['ours_ms']:.3g}"
                    f" ms vs {r['baseline_ms']:.3g} ms, median of "
                    f"{r['launches_timed']}; {r['size']}; output = the baseline's")
            if "fp32_ms" in r:
                cell += f"; cuBLAS FP32 {r['fp32_ms']:.3g} ms"
            if "bf16_ms" in r:
                cell += f"; bf16 {r['bf16_ms']:.3g} ms"
            cell += ")"
        cells[r["program"]] = cell
    return cells


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "results" / "prism"))
    ap.add_argument("--only", default=None,
                    help="recompute this corrected program's row, keep the others")
    ap.add_argument("--reuse", action="store_true",
                    help="keep every row of the existing appendix_b.json")
    ap.add_argument("--modes", default="",
                    help="comma-separated sync modes (default: the compiler's)")
    ap.add_argument("--gpu", default=None,
                    help="prism_sync_gpu.json: fills 'agrees on GPU'")
    ap.add_argument("--speed", default=None,
                    help="prism_speed_gpu.json: fills 'speed vs baseline'")
    opts = ap.parse_args()
    try:
        gpu = gpu_source(opts.gpu, "prism_sync_gpu.py", gpu_cells)
        speed = gpu_source(opts.speed, "prism_speed_gpu.py", speed_cells)
    except ValueError as err:
        print(f"prism_appendix_b.py: {err}", file=sys.stderr)
        sys.exit(2)
    modes = tuple(opts.modes.split(",")) if opts.modes else ("",)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    old = {}
    if opts.only or opts.reuse:
        old = {r["corrected"]: r for r in json.loads(
            (out / "appendix_b.json").read_text())}
    rows = []
    for title, printed, corrected in PROGRAMS:
        if (opts.reuse or (opts.only and corrected != opts.only)) and corrected in old:
            rows.append({k: v for k, v in old[corrected].items()
                         if k not in ("gpu", "speed")})
            continue
        row: dict[str, object] = {"program": title,
                                  "printed": [printed_status(p) for p in printed],
                                  "corrected": corrected}
        if corrected:
            row["corrections"] = corrections(corrected)
            row.update(corrected_status(corrected, modes))
        rows.append(row)
        print(json.dumps(row), flush=True)
    for row in rows:  # the GPU cells, where a file was given
        for key, source in (("gpu", gpu), ("speed", speed)):
            if source is not None and row["corrected"]:
                row[key] = source[1].get(str(row["corrected"]),
                                         f"not in {source[0]['file']}")
    (out / "appendix_b.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / "appendix_b.md").write_text(render(rows, gpu and gpu[0],
                                              speed and speed[0]))


def render(rows: list[dict], gpu: dict | None = None,
           speed: dict | None = None) -> str:
    """The table; `gpu` / `speed`: the header facts of the files the GPU cells come
    from (None: that column is "not run", and the header says so as it always did)."""
    if gpu is None and speed is None:
        where = ("GPU columns: not run here (the lead runs `gpusem exec FILE --backend "
                 "cuda`).")
    else:
        where = " ".join(
            f"{column}: {('from ' + _describe(src)) if src else 'not run'}."
            for column, src in (("Agrees on GPU", gpu), ("Speed vs baseline", speed)))
    lines = ["# Appendix B of the Prism paper through gpusem", "",
             ("Generated by `PYTHONPATH=src python scripts/prism_appendix_b.py`; the "
              "corrections are listed in examples/prism/appendix_b/CORRECTIONS.md. "
              + where), "",
             ("| program | printed | corrections | runs on the machine | compiles | "
              "agrees on cpu | agrees on GPU | speed vs baseline |"),
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        printed = "<br>".join(str(p) for p in r["printed"])
        if r["corrected"]:
            lines.append(f"| {r['program']} | {printed} | {r['corrections']} | "
                         f"{r['runs']} | {r.get('compiles', '-')} | "
                         f"{r.get('cpu', '-')} | {r.get('gpu', 'not run')} | "
                         f"{r.get('speed', 'not run')} |")
        else:
            lines.append(f"| {r['program']} | {printed} | not corrected (see "
                         "CORRECTIONS.md) | - | - | - | - | - |")
    return "\n".join(lines) + "\n"


def _describe(src: dict) -> str:
    return (f"`{src['file']}` (command `{src['command']}`; device: {src['device']})")


if __name__ == "__main__":
    main()
