#!/usr/bin/env bash
# The H100 APPy campaign of issue 17 in ONE device command of at most 9 minutes wall:
#
#   bash scripts/gpu.sh appy [SEED] [BUDGET] [SHARDS]      (defaults 17 5m 12)
#
# Installs the carried wheels (.whl: appyc 0.2.0, torch, triton; the device has no
# network) through scripts/gpu/setup.sh, then runs SHARDS campaign processes side by
# side (`gpusem fuzz --target appy --backend cuda --shard I/SHARDS`, one seeded
# campaign split into disjoint rounds) over the 16 CPU cores and the GPU. Each failing
# kernel's generated module is also run by Triton's interpreter (the differential:
# appyc or Triton at fault). Results in $OUT/appy_h100.tgz, the folder appy_h100/:
# campaign_h100.json (one discovery curve by WALL minute; `shard_minutes` is SHARDS x
# the wall minutes), campaign_h100_coverage.md, campaign_h100_findings.md, bundles/,
# stats/, logs.
# Wall: setup ~1 min + each shard's hard stop (1.1 x 5 min + 30 s = 6 min) + tables,
# under a 460 s timeout: < 9 min.
set -uo pipefail
SEED=${1:-17} BUDGET=${2:-5m} SHARDS=${3:-12}
source scripts/gpu/setup.sh
OUT=${OUT:-$PWD/gpu-out}
python3 -c "import appy, torch, triton; print('appyc ok', torch.cuda.get_device_name(0))" \
  >>"$OUT/device.txt" 2>&1
MACHINE="$(head -1 "$OUT/device.txt"), $(nproc) cores" NICE="" PYTHON=python3 \
  timeout 460 bash scripts/appy_campaign.sh cuda "$BUDGET" "$SHARDS" "$SEED" \
  "$OUT/appy_h100" campaign_h100
# the device tool brings back a bounded number of files: the campaign folder as one tgz
tar czf "$OUT/appy_h100.tgz" -C "$OUT" appy_h100 && rm -rf "$OUT/appy_h100"
