#!/usr/bin/env bash
# NVIDIA's toolchain under test on an H200 (issue 23, items 2 and 5), in one command
# (at most about 9 minutes, the device tool's limit being 10; typically 5):
#   1. scripts/toolchain_probe.py: the T1 kernel's matrix and attribution (nvvm once
#      the static PTX check is wired), a seeded fault's attribution on cuda (ours), the
#      per-program cost of the matrix over 50 generated programs
#      -> $OUT/toolchain_probe.json
#   2. the GPU tests of the matrix: pytest -m gpu tests/backends/test_toolchain_gpu.py
#      -> $OUT/toolchain_gpu_tests.log
#   3. a short `toolchain` campaign on the cuda backend (90 s by default), 16 jobs
#      -> $OUT/toolchain_campaign.json, $OUT/toolchain_bundles.tgz
# Usage (device tool, carry .whl): bash scripts/gpu.sh toolchain [CAMPAIGN_SECONDS]
# Needs CuPy and CUDA 13.0 (nvcc, ptxas; cuobjdump for SASS evidence where present);
# nvcc is looked for on the PATH, then in /usr/local/cuda/bin and /usr/local/cuda-*/bin.
set -uo pipefail
CAMPAIGN_S=${1:-90}
source "$(dirname "$0")/setup.sh"  # wheels, gpusem, $OUT/device.txt
if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    [ -x "$d/nvcc" ] && export PATH="$PATH:$d" && break
  done
fi
{ command -v nvcc ptxas cuobjdump; nvcc --version | tail -1; } >>"$OUT/device.txt" 2>&1
GPUSEM="python3 -m gpusem"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/toolchain.log"; }

say "probe: T1, a seeded fault, the cost of the matrix"
timeout 180 python3 scripts/toolchain_probe.py "$OUT/toolchain_probe.json" \
  --programs 50 2>&1 | tee -a "$OUT/toolchain.log"

say "pytest -m gpu tests/backends/test_toolchain_gpu.py"
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" \
  tests/backends/test_toolchain_gpu.py >"$OUT/toolchain_gpu_tests.log" 2>&1
tail -5 "$OUT/toolchain_gpu_tests.log" | tee -a "$OUT/toolchain.log"

say "toolchain campaign on cuda (${CAMPAIGN_S}s, 16 jobs)"
rm -rf /tmp/toolchain_bundles
timeout $((CAMPAIGN_S + 100)) $GPUSEM fuzz --target bundl --property toolchain \
  --backend cuda --budget "${CAMPAIGN_S}s" --jobs 16 --shrink-time 20 \
  --out /tmp/toolchain_bundles --json "$OUT/toolchain_campaign.json" \
  >"$OUT/toolchain_campaign.log" 2>&1
echo "exit $?" >>"$OUT/toolchain_campaign.log"
tail -12 "$OUT/toolchain_campaign.log" | tee -a "$OUT/toolchain.log"
$GPUSEM triage /tmp/toolchain_bundles >>"$OUT/toolchain_campaign.log" 2>&1
tar czf "$OUT/toolchain_bundles.tgz" -C /tmp toolchain_bundles 2>/dev/null
say "done"
