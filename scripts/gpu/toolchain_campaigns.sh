#!/usr/bin/env bash
# Issue 23's toolchain campaign on every GPU of one machine at once: GPU 0 resumes the
# target's own campaign folder (seed 23 for bundl), GPU i > 0 the folder of seed
# SEED0 + i (toolchain_<target>_seed<N>), each a scripts/gpu/toolchain_campaign.sh run
# with CUDA_VISIBLE_DEVICES=i and JOBS processes. The device tool brings back at most 8
# files, so each campaign writes into $OUT/gpu<i>/ and this script leaves, besides
# device.txt, one JSON per campaign and one archive of everything else
# ($OUT/toolchain_gpus.tgz: logs, SARIF, triage, the campaign folders).
#   bash scripts/gpu.sh toolchain-campaigns bundl [BUDGET] [JOBS]   (nvidia-h200-x2)
# The lead unpacks each gpu<i>/toolchain_*.tgz into campaigns/ for the next call.
set -uo pipefail
cd "$(dirname "$0")/../.."
TARGET=${1:?bundl or ckernel} BUDGET=${2:-8m} JOBS=${3:-16}
case "$TARGET" in
  bundl) SEED0=23 ;;
  ckernel) SEED0=29 ;;
  *) echo "toolchain-campaigns: bundl or ckernel, not '$TARGET'" >&2; exit 2 ;;
esac
OUT=${OUT:-$PWD/gpu-out}
source scripts/gpu/setup.sh  # once, before the campaigns start in parallel
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$NGPU" -ge 1 ] || { echo "toolchain-campaigns: no GPU" >&2; exit 2; }
pids=()
for ((i = 0; i < NGPU; i++)); do
  mkdir -p "$OUT/gpu$i"
  CUDA_VISIBLE_DEVICES=$i OUT="$OUT/gpu$i" TOOLCHAIN_SEED=$((SEED0 + i)) \
    bash scripts/gpu/toolchain_campaign.sh "$TARGET" "$BUDGET" "$JOBS" \
    >"$OUT/gpu$i/stdout.txt" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for ((i = 0; i < NGPU; i++)); do
  for j in "$OUT/gpu$i"/toolchain_*.json; do cp "$j" "$OUT/gpu${i}_$(basename "$j")"; done
  tail -6 "$OUT/gpu$i/stdout.txt"
done
tar czf "$OUT/toolchain_gpus.tgz" -C "$OUT" $(cd "$OUT" && ls -d gpu*/) && rm -rf "$OUT"/gpu*/
