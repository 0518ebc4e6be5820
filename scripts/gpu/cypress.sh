#!/usr/bin/env bash
# Issue 30 (Cypress, seed 001) on one H200 (device tool, kind nvidia-h200, carry
# [".whl"]): (a) Fig. 5's GEMM through our Cypress compiler and the lowering to GPU
# IR, compiled by gpuir_cuda at N = 256 .. 4096, checked against the Cypress reading
# (to N = 512) and the exact product, timed against cupy.matmul (cuBLAS FP32):
# $OUT/cypress_gemm.json; (b) the mapping campaign on the GPU, `gpusem fuzz --target
# cypress --property compiled --backend cuda --max-programs 1000`:
# $OUT/cypress_fuzz.json; (c) each seeded lowering fault (GPUSEM_FAULT) under the
# same property, which must find it. Logs and bundles come back as one
# $OUT/cypress.tgz; $OUT/cypress_summary.txt has every exit code and count.
# About 6 minutes; at most 9: the parts have their own timeouts (GEMM 150 s, a
# partial cypress_gemm.json kept; campaign 270 s; each fault 60 s).
# Usage: bash scripts/gpu.sh cypress [PROGRAMS [BUDGET [JOBS]]]  (1000 210s 8)
# CYPRESS_ONLY=gemm: part (a) alone, with the other legal mappings of the same
# program beside Fig. 5's (cypress_gemm_gpu.py --mappings all: per N the best exact
# one and Fig. 5's own ratio, "best" in the JSON; about 4 minutes, at most 7:
# results/cypress/gemm_speed.md). CYPRESS_MAPPINGS=none|all|NAME,.. sets them.
# With it, at N = 4096, the timing-only rows of --ablate (the GEMM with its copies,
# then its arithmetic, left out: which part bounds it) for fig5-hopper, u128-hopper
# and u256-v128-wgs4-p3; CYPRESS_ABLATE=NAME,.. or empty sets them. And, beside
# each of five of them (Fig. 5's, u128 and the three best of cyperf2), our fused
# variant NAME-fused (the leaf mma_fma: one FFMA a multiply-add, errata "Extension:
# fused mma"), checked as the rest, per N its best in "best" (leaf mma_fma);
# CYPRESS_FUSED=all|none|NAME,.. sets them (about 2 minutes more: at most 9).
# A name there may carry the fused nest's two choices (gpuir_cuda instr.FusedNest:
# branch cyperf4's grouped nest, cyperf5's copy of A), NAME-fused-[no]grouped-
# [no]acopy, to time each combination (cyknob), or the blocked accumulator layout,
# NAME-fused-blocked (cyfrag), NAME-fused-blocked-prefetch (its nest software-
# pipelined) and a chunk, -k1|-k2|-k4 (cyfrag2), and any fused name -dma4 (a
# stage's copies over the DMA warpgroup's 4 warps, cydma), then -regs (the warp
# config's setmaxnreg emitted: compute warps 232 registers, cyreg; u256-v128-wgs2-p3
# and -p4 are names for it too); CYPRESS_VARIANTS=none|NAME,.. sets
# the plain variants (default fig5-hopper,fig5-fma,u128-hopper). The cyknob run
# (about 3 minutes on one H200; results/cypress/gemm_speed.md, cyknob):
#   CYPRESS_ONLY=gemm CYPRESS_SIZES="2048 4096" CYPRESS_MAPPINGS=none CYPRESS_ABLATE=
#   CYPRESS_VARIANTS=u128-hopper CYPRESS_FUSED=<the 12 names there>
# Testing here without a GPU: CYPRESS_BACKEND=cpu CYPRESS_SIZES=256 PY=... GPUSEM=...
# (run so here at 40 programs: 1.5 min on 2 shared cores, every part as on the GPU).
set -uo pipefail
cd "$(dirname "$0")/../.."
BACKEND=${CYPRESS_BACKEND:-cuda}
if [ -d .whl ]; then
  source scripts/gpu/setup.sh
fi
OUT=${OUT:-$PWD/gpu-out}
PY=${PY:-python3} GPUSEM=${GPUSEM:-gpusem}
PROGRAMS=${1:-1000} BUDGET=${2:-210s} JOBS=${3:-8}
FAULT_PROGRAMS=${CYPRESS_FAULT_PROGRAMS:-60}
WORK="$OUT/cypress"
rm -rf "$WORK" && mkdir -p "$WORK"
SUMMARY="$OUT/cypress_summary.txt"
echo "backend $BACKEND programs $PROGRAMS budget $BUDGET jobs $JOBS" >"$SUMMARY"

sizes=()
[ -n "${CYPRESS_SIZES:-}" ] && sizes=(--sizes "$CYPRESS_SIZES")
if [ "${CYPRESS_ONLY:-}" = gemm ]; then
  MAPPINGS=${CYPRESS_MAPPINGS:-all} GEMM_TIMEOUT=${CYPRESS_GEMM_TIMEOUT:-540}
  ABLATE=${CYPRESS_ABLATE-fig5-hopper,u128-hopper,u256-v128-wgs4-p3}
  FUSED=${CYPRESS_FUSED-fig5-hopper,u128-hopper,u256-v128-wgs4-p3,u128-v128-wgs2-p4,u64-v64-wgs1-p4}
else
  MAPPINGS=${CYPRESS_MAPPINGS:-none} GEMM_TIMEOUT=${CYPRESS_GEMM_TIMEOUT:-150}
  ABLATE=${CYPRESS_ABLATE-} FUSED=${CYPRESS_FUSED-none}
fi
timeout "$GEMM_TIMEOUT" "$PY" scripts/cypress_gemm_gpu.py \
  --backend "$BACKEND" "${sizes[@]}" --check-upto 256 --warmup 2 --iters 10 \
  --mappings "$MAPPINGS" --ablate "$ABLATE" --fused "${FUSED:-none}" \
  --variants "${CYPRESS_VARIANTS:-fig5-hopper,fig5-fma,u128-hopper}" \
  --out "$OUT/cypress_gemm.json" \
  >"$WORK/gemm.log" 2>&1
echo "gemm: exit $?" >>"$SUMMARY"

if [ "${CYPRESS_ONLY:-}" = gemm ]; then
  cat "$WORK/gemm.log" >>"$SUMMARY"
  tar czf "$OUT/cypress.tgz" -C "$OUT" cypress && rm -rf "$WORK"
  cat "$SUMMARY"
  exit 0
fi

timeout "${CYPRESS_FUZZ_TIMEOUT:-270}" "$GPUSEM" fuzz --target cypress \
  --property compiled --backend "$BACKEND" --max-programs "$PROGRAMS" \
  --budget "$BUDGET" --jobs "$JOBS" --seed 1 --round-size 50 --out "$WORK/fuzz" \
  --json "$OUT/cypress_fuzz.json" >"$WORK/fuzz.log" 2>&1
echo "campaign: exit $? (0: no finding)" >>"$SUMMARY"

for fault in cypress-lower-no-full-wait cypress-lower-stage; do
  GPUSEM_FAULT=$fault timeout 60 "$GPUSEM" fuzz --target cypress \
    --property compiled --backend "$BACKEND" --max-programs "$FAULT_PROGRAMS" \
    --budget 45s --jobs "$JOBS" --seed 2 --shrink-time 5 --out "$WORK/$fault" \
    --json "$WORK/$fault.json" >"$WORK/$fault.log" 2>&1
  echo "fault $fault: exit $? (1: found)" >>"$SUMMARY"
done

"$PY" - "$OUT" >>"$SUMMARY" 2>&1 <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
for name in ["cypress_fuzz.json", *sorted(p.relative_to(out).as_posix()
             for p in (out / "cypress").glob("cypress-lower-*.json"))]:
    try:
        d = json.loads((out / name).read_text())
    except (OSError, ValueError) as err:
        print(name, "unreadable:", err)
        continue
    c = d["counts"]
    print(name, {k: c[k] for k in ("programs", "compared", "invalid", "findings")},
          sorted({f["signature"] for f in d["findings"]}))
gemm = out / "cypress_gemm.json"
if gemm.exists():
    report = json.loads(gemm.read_text())
    for r in report["rows"]:
        keys = ("n", "variant", "lowered", "agree_reading", "agree_exact",
                "ours_ms", "cublas_ms", "ratio", "failed")
        print("gemm", {k: r.get(k) for k in keys})
    for b in report.get("best", []):
        print("gemm best", b)
EOF
tar czf "$OUT/cypress.tgz" -C "$OUT" cypress && rm -rf "$WORK"
cat "$SUMMARY"
