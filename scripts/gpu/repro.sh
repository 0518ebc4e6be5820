#!/usr/bin/env bash
# Standalone reproducers on a GPU (issue 18), in one command (about 5 minutes):
#   1. `gpusem compile --standalone` for clean examples: nvcc builds each, it runs on the
#      GPU and must exit 0 (its output is the interpreter's);
#   2. a short cuda-backend campaign per seeded fault: every bundle's repro.cu, built
#      with the exact nvcc command the bundle records, must exit 1 (the miscompiled
#      kernel disagrees on the GPU, without gpusem);
#   3. the campaign's reports (JSON, SARIF) and exit code on the cuda backend.
# Writes $OUT/gpu_repro.json (one object per reproducer: file, expected, exit, stdout).
# Usage (device tool, carry .whl): bash scripts/gpu.sh repro [BACKEND]
#   BACKEND defaults to cuda; with cpu (no GPU) the logic runs and each repro exits 2.
set -uo pipefail
BACKEND=${1:-cuda}
GPUSEM=${GPUSEM:-python3 -m gpusem}  # the installed gpusem (setup.sh installs it)
if [ -f "$(dirname "$0")/setup.sh" ] && [ -d .whl ]; then
  source "$(dirname "$0")/setup.sh"
fi
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/clean" "$OUT/faults"
ROWS="$OUT/rows.jsonl"
: >"$ROWS"
: >"$OUT/faults/exits.txt"
row() {  # file expected exit stdout
  python3 - "$@" >>"$ROWS" <<'PY'
import json, sys
print(json.dumps({"file": sys.argv[1], "expected": int(sys.argv[2]),
                  "exit": int(sys.argv[3]), "stdout": sys.argv[4][-400:]}))
PY
}
build_run() {  # dir expected
  local dir=$1 want=$2 out rc
  (cd "$dir" && nvcc -arch=sm_90a -std=c++17 --fmad=false -w -o repro repro.cu) \
    >"$dir/nvcc.log" 2>&1 || { row "$dir/repro.cu" "$want" 99 "nvcc failed"; return; }
  out=$(cd "$dir" && timeout 60 ./repro 2>&1); rc=$?
  row "$dir/repro.cu" "$want" "$rc" "$out"
}
for ex in block_reduce_shared map_double float_affine async_copy claim_mask \
          producer_consumer_split while_triangle split_arms; do
  mkdir -p "$OUT/clean/$ex"
  $GPUSEM compile "examples/bundl/$ex.bundl" --standalone -o "$OUT/clean/$ex/repro.cu" \
    >/dev/null && build_run "$OUT/clean/$ex" 0
done
for fault in floor-division drop-partition-barrier syncwarp-for-block; do
  GPUSEM_FAULT=$fault GPUSEM_SHRINK_S=20 timeout 300 $GPUSEM fuzz --target bundl \
    --backend "$BACKEND" --seed 11 --budget 60s --max-programs 400 --shrink-time 20 \
    --out "$OUT/faults/$fault" --json "$OUT/faults/$fault.json" \
    --sarif "$OUT/faults/$fault.sarif" >"$OUT/faults/$fault.log" 2>&1
  echo "$fault: gpusem fuzz exit $?" >>"$OUT/faults/exits.txt"
  for b in "$OUT/faults/$fault"/bundl-*/; do
    [ -f "$b/repro.cu" ] && build_run "${b%/}" 1
  done
done
python3 - "$ROWS" "$OUT/gpu_repro.json" "$BACKEND" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = sum(r["exit"] == r["expected"] for r in rows)
json.dump({"backend": sys.argv[3], "reproducers": len(rows), "as_expected": ok,
           "command": "bash scripts/gpu.sh repro " + sys.argv[3], "rows": rows},
          open(sys.argv[2], "w"), indent=1)
print(f"{ok} of {len(rows)} reproducers exited as expected")
PY
