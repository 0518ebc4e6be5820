#!/usr/bin/env bash
# One batched call on nvidia-h100-x2 (two H100s, 32 cores), at most ~9.5 minutes:
#   GPU 0: Exo-GPU under test (issue 16): scripts/gpu_exo.sh pldi26 with EXO_JOBS jobs
#          (default 24): the 5,000-program verdict census against Exo's checker, then
#          1,000 Exo-compiled kernels built for sm_90a (batches of EXO_BATCH), run on the
#          H100 and compared with the sequential reading;
#   GPU 1: the GPU tests (pytest -m gpu), then the standalone reproducers on the GPU
#          (scripts/gpu_repro.sh cuda, issue 18).
# Logs: $OUT/{exo,pytest_gpu,repro}.log; the reproducers' folder as $OUT/repro.tgz.
# Usage (device tool, kind nvidia-h100-x2, carry .whl and .exo_whl):
#   bash scripts/gpu_round2.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device_setup.sh
(CUDA_VISIBLE_DEVICES=0 EXO_JOBS=${EXO_JOBS:-24} EXO_CENSUS_S=${EXO_CENSUS_S:-60} \
  EXO_CENSUS_TIMEOUT=${EXO_CENSUS_TIMEOUT:-170} EXO_COMPILE_S=${EXO_COMPILE_S:-150} \
  EXO_COMPILE_TIMEOUT=${EXO_COMPILE_TIMEOUT:-320} EXO_BATCH=${EXO_BATCH:-20} \
  bash scripts/gpu_exo.sh pldi26 >"$OUT/exo.log" 2>&1) &
({ head -4 "$OUT/device.txt"
   echo "# CUDA_VISIBLE_DEVICES=1 python3 -m pytest -m gpu -q -p no:cacheprovider --benchmark-disable tests"
   CUDA_VISIBLE_DEVICES=1 timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
     --benchmark-disable tests 2>&1 | tail -25; } >"$OUT/pytest_gpu.log" 2>&1
 CUDA_VISIBLE_DEVICES=1 OUT="$OUT/repro" timeout 330 bash scripts/gpu_repro.sh cuda \
   >"$OUT/repro.log" 2>&1
 cp "$OUT/repro/gpu_repro.json" "$OUT/" 2>/dev/null
 tar czf "$OUT/repro.tgz" -C "$OUT" repro && rm -rf "$OUT/repro") &
wait
ls -la "$OUT"
