#!/usr/bin/env bash
# Issue 29 item 6: NESL 3.1's VCODE interpreter (Nessie-Compiler/neslgpu, a third-party
# compiler under test) with its serial vector library against its CUDA one, on the
# pre-dumped benchmarks (bench/NESL/*.vcode). One H200 (device tool, kind nvidia-h200).
# No network there: the checkout travels in the gitignored .neslgpu/ (carry
# [".neslgpu"]), copied there beforehand from a clone of the repository on which
# `bash scripts/neslgpu_build.sh prepare CLONE` has run (it adds the generated lexer
# and parser, for a machine without flex and bison). No gpusem and no wheels needed.
#   (1) scripts/neslgpu_build.sh builds both interpreters (serial: gcc; cuda: nvcc
#       sm_90a) at once, each log into $OUT/vcode_build_KIND.log;
#   (2) scripts/vcode_diff.py runs every benchmark under both and compares the CUDA
#       run's output with the serial one's: $OUT/vcode.json (the one result).
# Usage: bash scripts/gpu.sh vcode [CHECKOUT [PATTERN]]   (defaults .neslgpu, *.vcode)
# Env: VCODE_BUDGET (s for the whole part, default 225: the builds get at most 120,
#      the runs what is left, none past it), VCODE_TIMEOUT (s a run, default 100),
#      VCODE_MEM (the interpreters' -m, default 250000000), VCODE_JOBS_SERIAL (default
#      10), VCODE_JOBS_CUDA (default 4). Short programs start first.
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
CHECKOUT=${1:-.neslgpu}
PATTERN=${2:-*.vcode}
BUILD=${VCODE_BUILD:-/tmp/vcode-build}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  gcc --version | head -1
  make --version | head -1
  echo "flex: $(command -v flex || echo none), bison: $(command -v bison || echo none)"
  nproc
} >"$OUT/vcode_device.txt" 2>&1
if [ ! -d "$CHECKOUT/bench/NESL" ]; then
  echo "vcode: no $CHECKOUT/bench/NESL: copy the neslgpu clone into .neslgpu and carry it" \
    | tee "$OUT/vcode_error.txt" >&2
  exit 2
fi
start=$(date +%s)
for kind in serial cuda; do
  JOBS=8 timeout 120 bash scripts/neslgpu_build.sh build "$CHECKOUT" "$BUILD" "$kind" \
    >"$OUT/vcode_build_$kind.path" 2>"$OUT/vcode_build_$kind.err" &
done
wait
for kind in serial cuda; do cp "$BUILD/$kind.log" "$OUT/vcode_build_$kind.log" 2>/dev/null; done
built=$(( $(date +%s) - start ))
left=$(( ${VCODE_BUDGET:-225} - built ))
echo "vcode: builds $built s, $left s left for the runs" | tee -a "$OUT/vcode_device.txt"
timeout $(( left + 20 )) python3 scripts/vcode_diff.py --bench "$CHECKOUT/bench/NESL" \
  --pattern "$PATTERN" \
  --interp serial="$BUILD/serial/bin/vinterp.serial" \
  --interp cuda="$BUILD/cuda/bin/vinterp.cuda" \
  --jobs serial="${VCODE_JOBS_SERIAL:-10}" --jobs cuda="${VCODE_JOBS_CUDA:-4}" \
  --build-log serial="$BUILD/serial.log" --build-log cuda="$BUILD/cuda.log" \
  -m "${VCODE_MEM:-250000000}" --timeout "${VCODE_TIMEOUT:-100}" \
  --deadline "$left" --out "$OUT/vcode.json" 2>"$OUT/vcode_runs.log"
status=$?
tail -1 "$OUT/vcode_runs.log"
echo "vcode: total $(( $(date +%s) - start )) s, exit $status" | tee -a "$OUT/vcode_device.txt"
exit $status
