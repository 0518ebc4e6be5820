#!/usr/bin/env bash
# The toolchain property's rate on one H200 after the cuts of the toolchain branch, in
# ONE device call (about 8 minutes; device tool, kind nvidia-h200, carry .whl):
#   1. scripts/toolchain_cost.py on this host: CPU ms/program per configuration,
#      before and after, and how many nvcc-O3 launches share nvrtc's SASS here (NVRTC
#      and nvcc both 13.0 on the H200)                   -> $OUT/toolchain_cost_h200.json
#   2. `gpusem fuzz --target bundl --property toolchain --backend cuda --jobs 16`,
#      the default (after)      for AFTER_S  (default 200 s) -> $OUT/rate_after.json
#   3. the same with $RATE_BEFORE_ENV (default GPUSEM_TOOLCHAIN_EAGER=1
#      GPUSEM_TOOLCHAIN_SHARE=0: what every program cost before the cuts; nvcc-G on
#      every round: RATE_BEFORE_ENV=GPUSEM_TOOLCHAIN_G_EVERY=1)
#                               for BEFORE_S (default 120 s) -> $OUT/rate_before.json
# The rate is `throughput.programs_per_min` of each JSON (programs over the campaign's
# wall time, start and end included), and `by_configuration` how many programs each
# configuration compared; summary lines in $OUT/toolchain_rate.txt.
# Usage: [RATE_BEFORE_ENV="VAR=VALUE ..."] bash scripts/gpu.sh toolchain-rate [AFTER_S]
#        [BEFORE_S]   (the cost step takes up to 150 s: AFTER_S + BEFORE_S <= 360 keeps
#        the call under the device tool's 600 s)
set -uo pipefail
cd "$(dirname "$0")/../.."
AFTER_S=${1:-200} BEFORE_S=${2:-120}
read -r -a BEFORE_ENV <<<"${RATE_BEFORE_ENV:-GPUSEM_TOOLCHAIN_EAGER=1 GPUSEM_TOOLCHAIN_SHARE=0}"
source scripts/gpu/setup.sh
if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    [ -x "$d/nvcc" ] && export PATH="$PATH:$d" && break
  done
fi
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/toolchain_rate.txt"; }

say "toolchain_cost.py (2 rounds of 100)"
timeout 150 python3 scripts/toolchain_cost.py --seed 0 --rounds 2 \
  --h200 results/toolchain/toolchain_h200_2026-11-29/toolchain_cost_h200.json \
  --json "$OUT/toolchain_cost_h200.json" >"$OUT/toolchain_cost_h200.log" 2>&1
python3 - "$OUT/toolchain_cost_h200.json" <<'PY' | tee -a "$OUT/toolchain_rate.txt"
import json, sys
d = json.load(open(sys.argv[1]))
print("cpu ms/program before", d["cpu_ms_before"], "after", d["cpu_ms_after"],
      "launches/program", d["gpu_launches_per_program"])
g = d.get("g_every")
if g:
    print("nvcc-G on every K-th round: cpu ms/program", g["cpu_ms"],
          "estimated/min by K (here)", g["estimated_per_min_by_k"])
PY

run() {  # NAME SECONDS [ENV...]
  local name=$1 secs=$2; shift 2
  rm -rf "/tmp/rate_$name"
  env "$@" timeout $((secs + 150)) python3 -m gpusem fuzz --target bundl \
    --property toolchain --backend cuda --jobs 16 --budget "${secs}s" --seed 11 \
    --shrink-time 10 --out "/tmp/rate_$name" --json "$OUT/rate_$name.json" \
    >"$OUT/rate_$name.log" 2>&1
  echo "exit $?" >>"$OUT/rate_$name.log"
  python3 - "$OUT/rate_$name.json" "$name" <<'PY' | tee -a "$OUT/toolchain_rate.txt"
import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[2], d["counts"]["programs"], "programs in", d["seconds"], "s:",
      d["throughput"]["programs_per_min"], "/min; findings", d["counts"]["findings"],
      "; per configuration", d.get("by_configuration", {}).get("toolchain"))
PY
}
say "after: the default (${AFTER_S}s)"
run after "$AFTER_S" GPUSEM_TOOLCHAIN_EAGER=0
say "before: ${BEFORE_ENV[*]} (${BEFORE_S}s)"
run before "$BEFORE_S" "${BEFORE_ENV[@]}"
tar czf "$OUT/rate_bundles.tgz" -C /tmp rate_after rate_before 2>/dev/null
say "done"
