#!/usr/bin/env bash
# One batched H100 session (the device tool runs this in a copy of the repo):
#   the GPU tests, compiler-correctness campaigns on the cuda backend, and (if present)
#   the benchmarks and the APPy campaign. Everything lands in $OUT (<= 8 files).
# Usage (device tool, carry .whl):  bash scripts/gpu_session.sh [fuzz seconds]
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
FUZZ_S=${1:-90}
export PYTHONUNBUFFERED=1
LOG="$OUT/session.log"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }

say "install (no network: carried wheels in .whl)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl >>"$LOG" 2>&1 && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . >>"$LOG" 2>&1
GPUSEM="python3 -m gpusem"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  python3 -c "import cupy, sys; print('cupy', cupy.__version__, 'python', sys.version.split()[0])"
} >"$OUT/device.txt" 2>&1
cat "$OUT/device.txt" | tee -a "$LOG"

say "pytest -m gpu"
timeout 180 python3 -m pytest -m gpu -q -p no:cacheprovider --benchmark-disable \
  -o addopts="" tests >"$OUT/gpu_tests.log" 2>&1
tail -5 "$OUT/gpu_tests.log" | tee -a "$LOG"

say "bundl compile campaign on cuda (${FUZZ_S}s, 8 local jobs)"
timeout $((FUZZ_S + 90)) $GPUSEM fuzz --target bundl --property compile --backend cuda \
  --budget "${FUZZ_S}s" --jobs 8 --out /tmp/bundles/bundl >"$OUT/fuzz_bundl_cuda.log" 2>&1
tail -12 "$OUT/fuzz_bundl_cuda.log" | tee -a "$LOG"

say "gpuir seq = par on cuda (examples + 100 generated)"
timeout 150 python3 -m gpusem.fuzz.gpuir.seqpar --generated 100 --seed 11 --backend cuda \
  --json "$OUT/gpuir_seqpar_cuda.json" >>"$LOG" 2>&1
tail -8 "$LOG"

say "appy campaign on cuda (${FUZZ_S}s)"
timeout $((FUZZ_S + 90)) $GPUSEM fuzz --target appy --backend cuda --budget "${FUZZ_S}s" \
  --out /tmp/bundles/appy >"$OUT/fuzz_appy_cuda.log" 2>&1
tail -25 "$OUT/fuzz_appy_cuda.log" | tee -a "$LOG"

if [ -f scripts/gpu_bench.sh ]; then
  say "benchmarks"
  OUT=/tmp/extras/bench timeout 200 bash scripts/gpu_bench.sh >>"$LOG" 2>&1
  cp /tmp/extras/bench/bench/bench.json "$OUT/bench.json" 2>/dev/null
  cp /tmp/extras/bench/bench/summary.txt "$OUT/bench_summary.txt" 2>/dev/null \
    || tail -30 /tmp/extras/bench/harness.log >"$OUT/bench_summary.txt" 2>/dev/null
fi
mkdir -p /tmp/extras /tmp/bundles
cp -r /tmp/bundles /tmp/extras/ 2>/dev/null
tar czf "$OUT/extras.tgz" -C /tmp extras 2>/dev/null || true
say "done"
