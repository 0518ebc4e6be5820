#!/usr/bin/env bash
# Issue 23 item 5 on one H200 (device tool, kind nvidia-h200, carry .whl): the ckernel
# target's `compile` and `emi` properties on the cuda backend (NVRTC, the GPU), then,
# where this tree has the toolchain matrix (branch attribution merged), `toolchain`;
# then the nvcc -ptx census of 2000 generated kernels on the GPU machine's nvcc.
# Each writes under $OUT; bundles come back as one tgz.
# Usage: bash scripts/gpu.sh ckernel [BUDGET] [JOBS]        (defaults 3m 16)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/setup.sh
BUDGET=${1:-3m} JOBS=${2:-16}
for prop in compile emi; do
  gpusem fuzz --target ckernel --property "$prop" --backend cuda --jobs "$JOBS" \
    --budget "$BUDGET" --seed 1 --coverage --round-size 100 --out "$OUT/ck_$prop" \
    --json "$OUT/ckernel_cuda_$prop.json" >"$OUT/ck_$prop.log" 2>&1
  echo "$prop: exit $?" >>"$OUT/ck_exit.txt"
done
if python3 -c "import gpusem.compiler.backends.toolchain" 2>/dev/null; then
  gpusem fuzz --target ckernel --property toolchain --backend cuda --jobs 4 \
    --budget "$BUDGET" --seed 3 --coverage --out "$OUT/ck_toolchain" \
    --json "$OUT/ckernel_cuda_toolchain.json" >"$OUT/ck_toolchain.log" 2>&1
  echo "toolchain: exit $?" >>"$OUT/ck_exit.txt"
fi
python3 scripts/ckernel_ptx_census.py --programs 2000 --seed 1 \
  --json "$OUT/ckernel_ptx_census_h200.json" >"$OUT/ck_census.log" 2>&1
tar czf "$OUT/ck_bundles.tgz" -C "$OUT" $(cd "$OUT" && ls -d ck_compile ck_emi \
  ck_toolchain 2>/dev/null) && rm -rf "$OUT"/ck_compile "$OUT"/ck_emi "$OUT"/ck_toolchain
ls -la "$OUT"
