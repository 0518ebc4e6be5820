#!/usr/bin/env bash
# Seeded-fault table on the H100 machine (issue 5): every fault of the Bundl compiler
# in its own campaign, many at once (the machine has 16 cores).
# Usage (device tool, carry .whl): bash scripts/gpu.sh faults BACKEND SECONDS PARALLEL
#   cpu  300 16   the SIMT harness, 5-minute campaigns (what the issue asks for)
#   cuda 300 16   the same campaigns with kernels on the H100 (GPUSEM_SHRINK_S=30 keeps
#                 the call under the device tool's 600 s; rows come as campaigns end)
set -uo pipefail
BACKEND=${1:-cpu}
SECONDS_EACH=${2:-300}
PARALLEL=${3:-16}
source "$(dirname "$0")/setup.sh"  # wheels, gpusem, $OUT/device.txt
rm -rf /tmp/fault_bundles
python3 scripts/fault_table.py --backend "$BACKEND" --budget "$SECONDS_EACH" \
  --parallel "$PARALLEL" --out "$OUT/faults_$BACKEND.json" --keep /tmp/fault_bundles \
  2>&1 | tee "$OUT/faults_$BACKEND.log"
tar czf "$OUT/fault_bundles_$BACKEND.tgz" -C /tmp fault_bundles
