#!/usr/bin/env bash
# Issue 19 (and 20) on a GPU machine, in ONE command of at most 9 minutes:
#   1. the per-stage profile of the compile property (scripts/profile_stages.py) and
#      NVRTC's cost per kernel by batch size (scripts/nvrtc_probe.py);
#   2. the 1-GPU throughput, local engine, one process per core, several windows;
#   3. with 2+ GPUs: the same campaign through Dask on 1 GPU and on all GPUs of the
#      machine (the same cores per GPU in both), and the scaling efficiency
#      (throughput on G / G x throughput on 1); with 1 GPU: the Dask run on it.
# Each run is one JSON object under $OUT (gpus, programs_per_min, windows min/median/
# max, property, backend, command, device, cpu_utilisation, ...) and
# $OUT/scale_summary.json gathers them. Where CUDA cannot run (no GPU, no CuPy) it says
# so and measures the cpu backend instead (no GPU figures), so the script's logic runs
# anywhere.
#
# Usage (device tool; carry .whl holding the wheels bash scripts/gpu.sh scale-wheels fetches):
#   bash scripts/gpu.sh scale                 # nvidia-h100-x1: profile, 1 GPU, Dask 1 GPU
#   bash scripts/gpu.sh scale                 # nvidia-h100-x2: ... and Dask 1 vs 2 GPUs
# Environment: SCALE_SECONDS (the local run, default 100), DASK_SECONDS (each Dask run,
# default 90), GPUSEM_PER_GPU (processes per GPU, default cores / GPUs),
# SCALE_GPU_COUNTS (the Dask runs' GPU counts, default "1 N"; issue 20 on 4 or 8 GPUs:
# SKIP_PROFILE=1 SKIP_LOCAL=1 SCALE_GPU_COUNTS="1 4 8"), SKIP_SYNC_AB (no A/B of the
# CUDA host wait on a one-GPU machine), SCALE_INDEPENDENT=1 (with 2+ GPUs, after the
# local run: one local-engine campaign per GPU, all at once, seed g on GPU g, each
# independent_gpu<g>.json: the host's own scaling with no Dask in the way; the summary's
# `independent` sums them against G x the 1-GPU local run), SCALE_PIN=1 (the local
# campaigns each on its GPU's share of the cores: below).
set -uo pipefail
START=$(date +%s)
LIMIT_S=${SCALE_LIMIT_S:-530}  # the whole command, under the device tool's 600 s
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG="$OUT/scale.log"
say() { echo "== $(date -u +%H:%M:%S) +$(( $(date +%s) - START ))s $*" | tee -a "$LOG"; }
left() { echo $(( LIMIT_S - ($(date +%s) - START) )); }
# run SECONDS_NEEDED NAME CMD...: run CMD under a timeout if the time left allows it
run() {
  local need=$1 name=$2; shift 2
  if [ "$(left)" -lt "$need" ]; then
    say "SKIPPED $name: $(left) s left, it needs $need s"
    echo "{\"skipped\": \"$name: not enough time left in the command\"}" >"$OUT/$name.json"
    return 1
  fi
  say "$name: $*"
  timeout "$need" "$@" >>"$LOG" 2>&1
  local rc=$?
  say "$name: exit $rc"
  return $rc
}

if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  source "$(dirname "$0")/setup.sh"  # wheels into /tmp/site, gpusem, device.txt
else
  python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/pip.log 2>&1
fi
export PYTHONUNBUFFERED=1
CORES=$(nproc)
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
NGPU=${NGPU:-0}
BACKEND=cuda
WHY=""
if [ "$NGPU" -lt 1 ]; then
  WHY="no GPU (nvidia-smi lists none)"
elif ! python3 -c "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0" \
    >>"$LOG" 2>&1; then
  WHY="CuPy cannot reach a GPU (see scale.log)"
fi
if [ -n "$WHY" ]; then
  BACKEND=cpu
  say "the cuda backend is unavailable here: $WHY. Measuring the cpu backend instead:" \
      "the figures below are NOT GPU figures."
fi
if ! python3 -c "import distributed" >>"$LOG" 2>&1; then
  say "Dask is not installed (carry its wheels: bash scripts/gpu.sh scale-wheels); Dask runs skipped"
  NO_DASK=1
fi
GPUS_FOR_SPLIT=$(( NGPU > 0 ? NGPU : 1 ))
PER_GPU=${GPUSEM_PER_GPU:-$(( CORES / GPUS_FOR_SPLIT ))}
[ "$PER_GPU" -lt 1 ] && PER_GPU=1
GPU_LINE=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null \
  | head -1 | sed 's/, / (driver /; s/$/)/')
export GPUSEM_DEVICE="${GPU_LINE:-no GPU} x ${NGPU}, ${CORES} CPU cores; $(date -u +%Y-%m-%d) UTC"
say "device: $GPUSEM_DEVICE; backend $BACKEND; $PER_GPU processes per GPU"

# 1. where the time goes per program
[ -z "${SKIP_PROFILE:-}" ] && run 150 profile python3 scripts/profile_stages.py --backend "$BACKEND" --rounds 3 \
  --json "$OUT/profile_$BACKEND.json"

# 1b. NVRTC per kernel by batch size (the cuda backend's build stage): its floor
if [ "$BACKEND" = cuda ] && [ -z "${SKIP_PROFILE:-}" ]; then
  run 90 nvrtc_probe python3 scripts/nvrtc_probe.py --json "$OUT/nvrtc_probe.json"
fi

# 2. one GPU, the local engine (GPU 0 only, whatever the machine has); on a one-GPU
# machine also with CUDA's default host wait (auto: spins) instead of the blocking wait
# the cuda backend sets (cuda_worker.schedule_blocking_sync), the A/B of that choice
SCALE_S=${SCALE_SECONDS:-100}
# SCALE_PIN=1: each local campaign on its GPU's share of the cores (taskset), GPU g on
# cores g*PER_GPU .. (g+1)*PER_GPU-1, so the 1-GPU run has no more of the host than
# each GPU has when all of them run (issue 31.2: unpinned, one GPU's 16 processes and
# their 16 CUDA workers used 17.5 of 32 cores)
pin() { [ -n "${SCALE_PIN:-}" ] && echo "taskset -c $(( $1 * PER_GPU ))-$(( ($1 + 1) * PER_GPU - 1 ))"; }
[ -z "${SKIP_LOCAL:-}" ] && CUDA_VISIBLE_DEVICES=0 run $(( SCALE_S + 70 )) throughput_1gpu_local \
  $(pin 0) python3 scripts/throughput.py --backend "$BACKEND" --engine local --jobs "$PER_GPU" \
  --seconds "$SCALE_S" --window 20 --warmup 20 --json "$OUT/throughput_1gpu_local.json"
if [ "$BACKEND" = cuda ] && [ "$NGPU" -eq 1 ] && [ -z "${SKIP_SYNC_AB:-}${SKIP_LOCAL:-}" ]
then
  GPUSEM_CUDA_SYNC=auto CUDA_VISIBLE_DEVICES=0 run 130 throughput_1gpu_local_syncauto \
    python3 scripts/throughput.py --backend cuda --engine local --jobs "$PER_GPU" \
    --seconds 60 --window 20 --warmup 20 \
    --json "$OUT/throughput_1gpu_local_syncauto.json"
fi

# 3. Dask: 1 GPU, then all of them (same cores per GPU)
if [ "$BACKEND" = cuda ] && [ "$NGPU" -ge 2 ] && [ -n "${SCALE_INDEPENDENT:-}" ]; then
  NEED=$(( SCALE_S + 70 ))
  if [ "$(left)" -lt "$NEED" ]; then
    say "SKIPPED independent: $(left) s left, it needs $NEED s"
  else
    say "independent: $NGPU local campaigns at once, one per GPU"
    PIDS=""
    for (( G = 0; G < NGPU; G++ )); do
      CUDA_VISIBLE_DEVICES=$G timeout "$NEED" $(pin "$G") python3 scripts/throughput.py --backend cuda \
        --engine local --jobs "$PER_GPU" --seconds "$SCALE_S" --window 20 --warmup 20 \
        --seed "$G" --json "$OUT/independent_gpu$G.json" >>"$LOG" 2>&1 &
      PIDS="$PIDS $!"
    done
    for P in $PIDS; do wait "$P"; say "independent: a campaign exited $?"; done
  fi
fi

DASK_S=${DASK_SECONDS:-90}
if [ -z "${NO_DASK:-}" ]; then
  if [ "$BACKEND" = cuda ]; then
    COUNTS="1"
    [ "$NGPU" -ge 2 ] && COUNTS="1 $NGPU"
    COUNTS=${SCALE_GPU_COUNTS:-$COUNTS}  # issue 20: e.g. "1 4 8"
    for G in $COUNTS; do
      run $(( DASK_S + 80 )) "throughput_dask_${G}gpu" \
        python3 scripts/throughput.py --backend cuda --engine dask --gpus "$G" \
        --jobs "$PER_GPU" --seconds "$DASK_S" --window 20 --warmup 25 \
        --json "$OUT/throughput_dask_${G}gpu.json"
    done
  else  # the engine's logic on cpu workers: half the cores, then all of them
    for W in $(( CORES / 2 > 0 ? CORES / 2 : 1 )) "$CORES"; do
      run $(( DASK_S + 90 )) "throughput_dask_cpu_${W}workers" \
        python3 scripts/throughput.py --backend cpu --engine dask --jobs "$W" \
        --seconds "$DASK_S" --window 20 --warmup 25 \
        --json "$OUT/throughput_dask_cpu_${W}workers.json"
    done
  fi
fi

say "summary"
python3 - "$OUT" "$BACKEND" "$WHY" <<'EOF' 2>&1 | tee -a "$LOG"
import glob, json, os, sys
out, backend, why = sys.argv[1:4]
runs = {}
for path in sorted(glob.glob(os.path.join(out, "throughput_*.json"))):
    with open(path) as f:
        runs[os.path.basename(path)[:-5]] = json.load(f)
summary = {"backend": backend, "note": why and f"cuda unavailable ({why}): cpu figures",
           "device": os.environ.get("GPUSEM_DEVICE", ""), "runs": runs}
dask = {r["gpus"]: r for r in runs.values() if r.get("engine") == "dask" and r.get("gpus")}
one = dask.get(1, {}).get("programs_per_min")
if one:
    summary["efficiency"] = {str(g): round(r["programs_per_min"] / (g * one), 3)
                             for g, r in dask.items()
                             if g > 1 and r.get("programs_per_min")}
indep = []
for path in sorted(glob.glob(os.path.join(out, "independent_gpu*.json"))):
    with open(path) as f:
        indep.append(json.load(f))
local = runs.get("throughput_1gpu_local", {})
if indep:
    both = {k: sum(r.get(k) or 0 for r in indep)
            for k in ("programs_per_min", "overall_per_min")}
    summary["independent"] = {"gpus": len(indep), **both, "runs": indep}
    for k in both:
        if local.get(k):
            summary["independent"][f"{k}_efficiency"] = round(
                both[k] / (len(indep) * local[k]), 3)
probe = os.path.join(out, "nvrtc_probe.json")
if os.path.exists(probe):
    with open(probe) as f:
        summary["nvrtc"] = json.load(f).get("fit_ms")
prof = os.path.join(out, f"profile_{backend}.json")
if os.path.exists(prof):
    with open(prof) as f:
        p = json.load(f)
    summary["profile"] = {"ms_per_program": p.get("ms_per_program"),
                          "campaign_ms_per_program": p.get("campaign_ms_per_program")}
with open(os.path.join(out, "scale_summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
for name, r in runs.items():
    w = r.get("windows", {})
    print(f"{name}: {r.get('programs_per_min')}/min (windows min {w.get('min')} median "
          f"{w.get('median')} max {w.get('max')}), gpus {r.get('gpus')}, cpu "
          f"{r.get('cpu_utilisation')}" if "skipped" not in r else f"{name}: {r}")
print("efficiency:", summary.get("efficiency"))
if "independent" in summary:
    print("independent:", {k: v for k, v in summary["independent"].items() if k != "runs"})
EOF
# a run's findings come back as one archive (the device tool returns few files)
if ls -d "$OUT"/*_bundles >/dev/null 2>&1; then
  tar czf "$OUT/scale_bundles.tgz" -C "$OUT" $(cd "$OUT" && ls -d *_bundles) \
    && rm -rf "$OUT"/*_bundles
fi
say "done"
