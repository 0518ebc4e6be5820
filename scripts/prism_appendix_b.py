"""The Appendix B table of Prism (issue 28): for every program of Appendix B, whether
the printed listing is parsed (or the rule that rejects it), the corrections it needed,
and for the corrected program: does it run on the Bundl machine and end where NumPy
says, does it compile, does the compiled kernel agree with the interpreter on the cpu
backend. Writes results/prism/appendix_b.md and appendix_b.json.

    PYTHONPATH=src python scripts/prism_appendix_b.py [--out results/prism]
        [--only b5_h100_gemm] [--modes naive,motion,prism]

`--only NAME` recomputes the row of that corrected program and keeps the others from
the existing appendix_b.json (the whole table takes minutes on a shared machine);
`--modes` the barrier placements compiled and compared (default: motion alone).

The GPU columns (agrees on the H200, speed against the outside baseline) are the
lead's: `gpusem exec FILE --backend cuda` per corrected program.
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "results" / "prism"))
    ap.add_argument("--only", default=None,
                    help="recompute this corrected program's row, keep the others")
    ap.add_argument("--modes", default="",
                    help="comma-separated sync modes (default: the compiler's)")
    opts = ap.parse_args()
    modes = tuple(opts.modes.split(",")) if opts.modes else ("",)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    old = {}
    if opts.only:
        old = {r["corrected"]: r for r in json.loads(
            (out / "appendix_b.json").read_text())}
    rows = []
    for title, printed, corrected in PROGRAMS:
        if opts.only and corrected != opts.only and corrected in old:
            rows.append(old[corrected])
            continue
        row: dict[str, object] = {"program": title,
                                  "printed": [printed_status(p) for p in printed],
                                  "corrected": corrected}
        if corrected:
            row["corrections"] = corrections(corrected)
            row.update(corrected_status(corrected, modes))
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out / "appendix_b.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = ["# Appendix B of the Prism paper through gpusem", "",
             "Generated by `PYTHONPATH=src python scripts/prism_appendix_b.py`; the "
             "corrections are listed in examples/prism/appendix_b/CORRECTIONS.md. "
             "GPU columns: not run here (the lead runs `gpusem exec FILE --backend "
             "cuda`).", "",
             "| program | printed | corrections | runs on the machine | compiles | "
             "agrees on cpu | agrees on GPU | speed vs baseline |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        printed = "<br>".join(str(p) for p in r["printed"])  # type: ignore[union-attr]
        if r["corrected"]:
            lines.append(f"| {r['program']} | {printed} | {r['corrections']} | "
                         f"{r['runs']} | {r.get('compiles', '-')} | "
                         f"{r.get('cpu', '-')} | not run | not run |")
        else:
            lines.append(f"| {r['program']} | {printed} | not corrected (see "
                         "CORRECTIONS.md) | - | - | - | - | - |")
    (out / "appendix_b.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
