#!/usr/bin/env bash
# A long `toolchain` campaign on one H200 that goes on across device calls (issue 23:
# 1,000,000 programs of the toolchain property in all), for the bundl or the ckernel
# target (ckernel with T1's and T2's shapes steered away: GPUSEM_CKERNEL_AVOID=
# t1,psel,t2). Each call runs BUDGET (default 8m; the device tool stops a command
# at 10 min) with --resume on the campaign folder CAMPAIGNS/<target> and packs it into
# $OUT/toolchain_<target>.tgz; the lead unpacks it here (tar xzf ... -C campaigns)
# and names `campaigns` in the next call's carry, so the next call resumes from the
# rounds this one finished (same seed: the campaign goes on, it does not start over).
#   bash scripts/gpu.sh toolchain-campaign bundl|ckernel [BUDGET] [JOBS]
# Findings are bundles with attribution.json; `gpusem triage` groups them by cause
# ($OUT/toolchain_<target>_triage.txt). Needs CuPy, CUDA 13.0 (nvcc, ptxas, cuobjdump).
# The campaign's preflight checks z3, CuPy (a device, NVRTC) and nvcc before its first
# program: "exit 2" and one "preflight: ..." line in the log mean the setup is
# incomplete (nothing was checked); "stopped: internal error ..." and exit 3 mean one
# internal error filled a fifth of the programs (docs/reports.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
TARGET=${1:?bundl or ckernel} BUDGET=${2:-8m} JOBS=${3:-16}
CAMPAIGNS=${CAMPAIGNS:-campaigns}
case "$TARGET" in  # before the setup: a wrong name installs nothing
  bundl) SEED=23 ;;
  ckernel) SEED=29; export GPUSEM_CKERNEL_AVOID=t1,psel,t2 ;;
  *) echo "toolchain-campaign: bundl or ckernel, not '$TARGET'" >&2; exit 2 ;;
esac
# TOOLCHAIN_SEED: another campaign of the same target (its own folder, toolchain_<target>
# _seed<N>), e.g. one per GPU of a 2-GPU machine (scripts/gpu/toolchain_campaigns.sh).
NAME=toolchain_$TARGET
if [ -n "${TOOLCHAIN_SEED:-}" ] && [ "$TOOLCHAIN_SEED" != "$SEED" ]; then
  SEED=$TOOLCHAIN_SEED NAME=toolchain_${TARGET}_seed$TOOLCHAIN_SEED
fi
source scripts/gpu/setup.sh
if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    [ -x "$d/nvcc" ] && export PATH="$PATH:$d" && break
  done
fi
DIR="$CAMPAIGNS/$NAME"
mkdir -p "$CAMPAIGNS"
RESUME=()
[ -d "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ] && RESUME=(--resume)
python3 -m gpusem fuzz --target "$TARGET" --property toolchain --backend cuda \
  --jobs "$JOBS" --budget "$BUDGET" --seed "$SEED" --shrink-time 30 --out "$DIR" \
  "${RESUME[@]}" --json "$OUT/${NAME}.json" \
  --sarif "$OUT/${NAME}.sarif" >"$OUT/${NAME}.log" 2>&1
echo "exit $? (resumed: ${#RESUME[@]})" >>"$OUT/${NAME}.log"
tail -15 "$OUT/${NAME}.log"
python3 -m gpusem triage "$DIR" >"$OUT/${NAME}_triage.txt" 2>&1
tar czf "$OUT/${NAME}.tgz" -C "$CAMPAIGNS" "$NAME"
