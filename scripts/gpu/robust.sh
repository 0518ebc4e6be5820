#!/usr/bin/env bash
# The robustness campaign of issue 15 on the device machine's CPUs (no GPU is used:
# the host has 16 cores, the dev machine 2 shared ones). One call runs INPUTS inputs
# (default 100,000) over every core within the device's 10-minute command limit; if the
# time limit cuts it short, run it again with another SEED and merge the parts:
#   python scripts/robust_campaign.py --merge a.json b.json --out results/robust/robustness_campaign.json
# Usage (device tool, carry .whl):  bash scripts/gpu.sh robust [INPUTS] [SEED]
set -uo pipefail
source scripts/gpu/setup.sh   # wheels, gpusem itself, $OUT/device.txt
INPUTS=${1:-100000}
SEED=${2:-1}
python3 -c "import hypothesis, lark, z3, numpy, click, rich" || exit 1
timeout 570 python3 scripts/robust_campaign.py --inputs "$INPUTS" --jobs "$(nproc)" \
  --seed "$SEED" --time-limit 540 --out "$OUT/robustness_campaign_seed$SEED.json" \
  2>&1 | tee "$OUT/robustness_campaign_seed$SEED.log"
