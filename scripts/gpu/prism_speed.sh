#!/usr/bin/env bash
# Issue 28 on a GPU: the speed of every corrected Appendix B kernel against its outside
# baseline on the same data (B.1 cuBLAS TF32, B.2 cuBLAS FP32 through cupy.matmul, B.3
# cupy.cumsum, B.4 a device-to-device memcpy, B.5 an FP32 cupy.matmul), each output
# checked equal to the baseline's: $OUT/prism_speed_gpu.json (log
# $OUT/prism_speed_gpu.log). About a minute on an H200 (8 NVRTC builds, 28 timed
# launches each); exit 1 when a row disagrees, 2 when there is no GPU.
# Usage (device tool, carry [".whl"]): bash scripts/gpu.sh prism-speed [TIMEOUT_S]
set -uo pipefail
if [ -d .whl ]; then
  source "$(dirname "$0")/setup.sh"
fi
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
timeout "${1:-240}" python3 scripts/prism_speed_gpu.py --backend cuda \
  --out "$OUT/prism_speed_gpu.json" 2>&1 | tee "$OUT/prism_speed_gpu.log"
exit "${PIPESTATUS[0]}"
