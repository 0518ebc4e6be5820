#!/usr/bin/env bash
# One batched call on nvidia-h100-x2 (two H100s, 32 cores), at most ~9.5 minutes:
#   GPU 0: Exo-GPU under test (issue 16): scripts/gpu_exo.sh pldi26 (the 5,000-program
#          verdict census against Exo's checker, then Exo-compiled kernels built for
#          sm_90a and run on the H100, compared with the sequential reading);
#   GPU 1: the APPy campaign of issue 17 (scripts/gpu_appy.sh SEED BUDGET SHARDS), then
#          the GPU tests (pytest -m gpu).
# Each part writes its own files under $OUT; logs: $OUT/{exo,appy,pytest_gpu}.log.
# Usage (device tool, kind nvidia-h100-x2, carry .whl and .exo_whl):
#   bash scripts/gpu_round.sh [APPY_BUDGET] [APPY_SHARDS]     (defaults 4m 12)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_setup.sh
BUDGET=${1:-4m} SHARDS=${2:-12}
(CUDA_VISIBLE_DEVICES=0 EXO_JOBS=${EXO_JOBS:-16} bash scripts/gpu_exo.sh pldi26 \
  >"$OUT/exo.log" 2>&1) &
(CUDA_VISIBLE_DEVICES=1 bash scripts/gpu_appy.sh 17 "$BUDGET" "$SHARDS" >"$OUT/appy.log" 2>&1
 { head -4 "$OUT/device.txt"
   echo "# CUDA_VISIBLE_DEVICES=1 python3 -m pytest -m gpu -q -p no:cacheprovider --benchmark-disable tests"
   CUDA_VISIBLE_DEVICES=1 timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider \
     --benchmark-disable tests 2>&1 | tail -25; } >"$OUT/pytest_gpu.log" 2>&1) &
wait
# the device tool brings back a bounded number of files: the campaign folder as one tgz
tar czf "$OUT/appy_h100.tgz" -C "$OUT" appy_h100 && rm -rf "$OUT/appy_h100" "$OUT/appy_h100_bundles.tgz"
ls -la "$OUT"
