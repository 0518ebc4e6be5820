#!/usr/bin/env bash
# Issue 29 item 5 on one H200 (device tool, kind nvidia-h200, carry .whl): the
# lambda-cu -> CUDA compiler on the GPU. (1) every example through `gpusem exec
# --backend cuda` (block 4 and 256); (2) a `lambdacu` compile campaign on cuda; (3)
# the seeded-fault table on cuda (scripts/lambdacu_faults.py); (4) one standalone
# repro.cu built with nvcc alone and run. Bundles come back as one tgz.
# Usage: bash scripts/gpu.sh lambdacu [BUDGET] [JOBS] [FAULT_BUDGET_S]
#        (defaults 8m 12 120)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/setup.sh
BUDGET=${1:-8m} JOBS=${2:-12} FAULT_S=${3:-120}
{ for f in examples/lambdacu/*.lcu; do
    for b in 4 256; do
      echo "== $f block $b"
      gpusem exec "$f" --backend cuda -D LC_BLOCK=$b
      echo "exit $?"
    done
  done; } >"$OUT/lcu_exec_cuda.txt" 2>&1
grep -c "^agree" "$OUT/lcu_exec_cuda.txt" >"$OUT/lcu_exec_agree_count.txt"
gpusem fuzz --target lambdacu --property compile --backend cuda --jobs "$JOBS" \
  --budget "$BUDGET" --seed 1 --round-size 24 --out "$OUT/lcu_cuda" \
  --json "$OUT/lambdacu_cuda_compile.json" >"$OUT/lcu_cuda.log" 2>&1
echo "campaign: exit $?" >>"$OUT/lcu_exit.txt"
python3 scripts/lambdacu_faults.py --backend cuda --budget "$FAULT_S" \
  --out "$OUT/lambdacu_faults_cuda.json" >"$OUT/lcu_faults.log" 2>&1
echo "faults: exit $?" >>"$OUT/lcu_exit.txt"
mkdir -p "$OUT/lcu_repro"
gpusem compile examples/lambdacu/nesl_radix_step.lcu --standalone -D LC_BLOCK=4 \
  -o "$OUT/lcu_repro/repro.cu" >"$OUT/lcu_repro/compile.txt" 2>&1
(cd "$OUT/lcu_repro" && nvcc -std=c++17 -O3 -arch=sm_90a -fmad=false -w -o repro \
  repro.cu && ./repro; echo "repro exit $?") >"$OUT/lcu_repro/run.txt" 2>&1
rm -f "$OUT/lcu_repro/repro"
tar czf "$OUT/lcu_bundles.tgz" -C "$OUT" lcu_cuda && rm -rf "$OUT/lcu_cuda"
ls -la "$OUT"
