#!/usr/bin/env bash
# Issue 28 item 4 on a GPU: every corrected Appendix B program with
# `gpusem exec --backend cuda` under --sync naive, motion and prism (Prism Sec. 5), and
# B.3's scan against cupy.cumsum, as one JSON table: $OUT/prism_sync_gpu.json (and the
# log $OUT/prism_sync_gpu.log). Exit 1 when a row disagrees.
# Usage (device tool, carry [".whl"]): bash scripts/gpu.sh prism-sync [TIMEOUT_S]
set -uo pipefail
if [ -d .whl ]; then
  source "$(dirname "$0")/setup.sh"
fi
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
python3 scripts/prism_sync_gpu.py --backend cuda --timeout "${1:-300}" \
  --out "$OUT/prism_sync_gpu.json" 2>&1 | tee "$OUT/prism_sync_gpu.log"
exit "${PIPESTATUS[0]}"
