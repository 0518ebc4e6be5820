#!/usr/bin/env bash
# Issue 31 (Scale II) on a GPU machine: one PART per device call (each under 10 min).
#   budget  [GPUS]   a --budget 90s campaign that meets and shrinks a finding (the
#                    floor-division fault), Dask on GPUS GPUs (default all) and the
#                    local engine on one: wall time against 90 s, fuzz_s, shrink_s
#   gpuir   [GPUS]   `gpusem fuzz --target gpuir --backend cuda --engine dask` as the
#                    issue ran it (16 jobs a GPU, 120 s, seed 5): wall time, programs,
#                    internal worker-died findings, failed pieces; then the same on the
#                    local engine, 60 s
#   gpuir-local      issue 31.6 on ONE GPU (nvidia-h200): the issue's local-engine run
#                    (16 jobs, 60 s, seed 5: programs/min, the budget kept), then
#                    the GPU IR per-stage profile on cuda with its programs not
#                    compared, by reason (scripts/profile_gpuir.py, 4 rounds of 100)
#   profile          the per-stage profile on cuda (bundl), and the GPU IR one
#   scaling [COUNTS] Dask throughput on 1, 2 and 4 GPUs (scale.sh with
#                    SCALE_GPU_COUNTS="1 2 4", no profile, no local run)
#   regress31        issue 31.3 on ONE GPU (nvidia-h200): the bundl compile property's
#                    throughput, 16 jobs, 50 s (the line the regression was measured
#                    with), then the per-stage profile on cuda (one process)
#   progsize [throughput|profile]  issue 31.3 on ONE GPU (nvidia-h200): the kernel
#                    generator's size bound A/B (GPUSEM_BUNDL_MAX_CELLS=4096, before
#                    the bound, against the default), each twice in turns
#   nvrtcbuild       issue 31.3 on ONE GPU (nvidia-h200): the cuda worker's NVRTC build
#                    per call and kernel, plain options against the worker's
#                    (BUILD_SPEEDUPS) and --pch, cubins compared, through CuPy's binding
#                    as the worker calls it (scripts/nvrtc_probe.py, 300 programs of
#                    seed 0), what a CUDA worker's start costs (cuda_worker_start.py),
#                    then regress31 (throughput 16 jobs 50 s, the profile)
#   gendirect        issue 31.3 on ONE GPU (nvidia-h200): the generation modes (engine,
#                    direct: fuzz/direct.py) in one call: throughput 16 jobs 50 s in
#                    each, then the per-stage profile on cuda of both in turns
# Each run leaves a JSON report, its output and a line in $OUT/scale2.log; a campaign's
# own folder (bundles, shard records) goes to $RUNS (/tmp/scale2), not $OUT, so that a
# part brings back at most 8 files (the device tool's limit).
# Usage (device tool, carry .whl from `bash scripts/gpu.sh scale-wheels`):
#   bash scripts/gpu.sh scale2 budget 4      # nvidia-h200-x4
#   bash scripts/gpu.sh scale2 gpuir 4
#   bash scripts/gpu.sh scale2 gpuir-local   # nvidia-h200: 5 files
#   bash scripts/gpu.sh scale2 scaling "1 2 4"
set -uo pipefail
PART=${1:-budget}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG="$OUT/scale2.log"
RUNS=${RUNS:-/tmp/scale2}
mkdir -p "$RUNS"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  source "$(dirname "$0")/setup.sh"
else
  python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/pip.log 2>&1
fi
export PYTHONUNBUFFERED=1
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
CORES=$(nproc)
PER_GPU=${GPUSEM_PER_GPU:-$(( CORES / (NGPU > 0 ? NGPU : 1) ))}
# campaign NAME TIMEOUT ENV... -- ARGS...: one `gpusem fuzz`, timed, its report kept
campaign() {
  local name=$1 limit=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  say "$name: ${envs[*]} gpusem fuzz $*"
  local t0 t1
  t0=$(date +%s.%N)
  env "${envs[@]}" timeout -s TERM "$limit" gpusem fuzz "$@" --out "$RUNS/$name" \
    --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  say "$name: exit $rc, wall $(python3 -c "print(round($t1 - $t0, 1))") s"
  tail -4 "$OUT/$name.txt" | tee -a "$LOG"
}

case "$PART" in
  budget)
    G=${2:-$NGPU}
    campaign budget_dask_${G}gpu 300 GPUSEM_FAULT=floor-division -- --target bundl \
      --backend cuda --engine dask --gpus "$G" --jobs "$PER_GPU" --budget 90s --seed 0
    campaign budget_local_1gpu 300 GPUSEM_FAULT=floor-division -- --target bundl \
      --backend cuda --jobs "$PER_GPU" --budget 90s --seed 0 ;;
  gpuir)
    G=${2:-$NGPU}
    campaign gpuir_dask_${G}gpu 300 GPUSEM_FAULT= -- --target gpuir --backend cuda \
      --engine dask --gpus "$G" --jobs 16 --budget 120s --seed 5
    campaign gpuir_local_1gpu 200 GPUSEM_FAULT= -- --target gpuir --backend cuda \
      --jobs 16 --budget 60s --seed 5 ;;
  gpuir-local)
    campaign gpuir_local_1gpu 200 GPUSEM_FAULT= -- --target gpuir --backend cuda \
      --jobs 16 --budget 60s --seed 5
    say "profile gpuir cuda (4 rounds of 100, seed 5)"
    timeout 240 python3 scripts/profile_gpuir.py --backend cuda --rounds 4 \
      --round-size 100 --seed 5 --json "$OUT/profile_gpuir_cuda.json" 2>&1 \
      | tail -30 | tee -a "$LOG" ;;
  profile)
    say "profile bundl cuda"
    timeout 250 python3 scripts/profile_stages.py --backend cuda --rounds 3 \
      --json "$OUT/profile_bundl_cuda.json" 2>&1 | tail -30 | tee -a "$LOG"
    say "profile gpuir cuda"
    timeout 250 python3 scripts/profile_gpuir.py --backend cuda --rounds 8 \
      --json "$OUT/profile_gpuir_cuda.json" 2>&1 | tail -30 | tee -a "$LOG" ;;
  regress31|nvrtcbuild)
    if [ "$PART" = nvrtcbuild ]; then
      say "nvrtcbuild: NVRTC per call and kernel, plain vs worker vs pch (CuPy's binding)"
      timeout 150 python3 scripts/nvrtc_probe.py --nvrtc cupy --rounds 3 --repeat 3 \
        --json "$OUT/nvrtc_probe.json" 2>&1 | tail -12 | tee -a "$LOG"
      say "nvrtcbuild: what a CUDA worker's start costs (5 starts)"
      timeout 120 python3 scripts/cuda_worker_start.py --starts 5 \
        --json "$OUT/cuda_worker_start.json" 2>&1 | tail -12 | tee -a "$LOG"
    fi
    say "regress31: throughput bundl compile cuda, 16 jobs, 50 s"
    timeout 240 python3 scripts/throughput.py --backend cuda --engine local --jobs 16 \
      --seconds 50 --window 20 --warmup 20 --json "$OUT/throughput_1gpu_local.json" \
      2>&1 | tail -45 | tee -a "$LOG"
    say "regress31: profile bundl cuda (3 rounds of 100)"
    timeout 250 python3 scripts/profile_stages.py --backend cuda --rounds 3 \
      --json "$OUT/profile_bundl_cuda.json" 2>&1 | tail -30 | tee -a "$LOG" ;;
  gendirect)
    for mode in engine direct; do
      say "gendirect: throughput bundl compile cuda, 16 jobs, 50 s, --generation $mode"
      timeout 200 python3 scripts/throughput.py --backend cuda --engine local --jobs 16 \
        --seconds 50 --window 20 --warmup 20 --generation $mode \
        --json "$OUT/throughput_1gpu_local_$mode.json" 2>&1 | tail -8 | tee -a "$LOG"
    done
    say "gendirect: profile bundl cuda, engine and direct in turns (2 x 2 rounds of 100)"
    timeout 240 python3 scripts/profile_stages.py --backend cuda --rounds 2 --turns 2 \
      --generation engine --generation direct \
      --json "$OUT/profile_bundl_cuda_modes.json" 2>&1 | tail -30 | tee -a "$LOG" ;;
  progsize)
    # issue 31.3, cheaper programs, on ONE GPU (nvidia-h200): the kernel generator's
    # size bound A/B in one tree. GPUSEM_BUNDL_MAX_CELLS=4096 draws exactly the programs
    # of before the bound (the same draw hashes as 66a671f); the default (8) is the
    # bound. ARG throughput (default): 16 jobs, 50 s each, in turns; ARG profile: the
    # per-stage profile on cuda, 3 rounds of 100 each, in turns.
    WHAT=${2:-throughput}
    n=0
    for cells in 4096 8 4096 8; do
      if [ "$WHAT" = profile ]; then
        say "progsize: profile bundl cuda, GPUSEM_BUNDL_MAX_CELLS=$cells"
        GPUSEM_BUNDL_MAX_CELLS=$cells timeout 140 python3 scripts/profile_stages.py \
          --backend cuda --rounds 3 --json "$OUT/profile_cells${cells}_$((++n)).json" \
          2>&1 | tail -22 | tee -a "$LOG"
      else
        say "progsize: throughput bundl compile cuda, 16 jobs, GPUSEM_BUNDL_MAX_CELLS=$cells"
        GPUSEM_BUNDL_MAX_CELLS=$cells timeout 130 python3 scripts/throughput.py \
          --backend cuda --engine local --jobs 16 --seconds 50 --window 20 --warmup 20 \
          --json "$OUT/throughput_cells${cells}_$((++n)).json" 2>&1 | tail -12 \
          | tee -a "$LOG"
      fi
    done ;;
  scaling)
    SKIP_PROFILE=1 SKIP_LOCAL=1 SCALE_GPU_COUNTS="${2:-1 2 4}" \
      exec bash "$(dirname "$0")/scale.sh" ;;
  *) echo "scale2: unknown part $PART (budget, gpuir, gpuir-local, profile, regress31, gendirect,"
     echo "  nvrtcbuild, progsize, scaling)"
     exit 2 ;;
esac
