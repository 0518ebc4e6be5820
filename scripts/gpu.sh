#!/usr/bin/env bash
# The one entry point for work on a GPU machine. The device tool runs it in a copy of
# the repository, with carry [".whl"] (the wheels the image lacks: lark, z3-solver, ...;
# the machine has no network) and, for exo, ".exo_whl". Results land under $OUT
# (default ./gpu-out); each part writes its own files there.
#
#   bash scripts/gpu.sh SUBCOMMAND [ARGS]
#
#   bench                          issue 4: the Bundl reduction and SGEMMs against
#                                  CuPy / cuBLAS (GPU_BENCH_ONLY, GPU_BENCH_VARIANTS)
#   faults BACKEND SECONDS PAR     issues 5, 14: the seeded-fault table (cpu | cuda)
#   appy [SEED BUDGET SHARDS]      issue 17: one APPy campaign in shards on the GPU
#   appy-shards SEED BUDGET N I..  issue 7: shards I.. of N of one APPy campaign
#   exo census | exo compile BRANCH  issue 26: both branches' verdict censuses (one H200,
#                                  resumable: carry .exo_census), the
#                                  per-feature code differential (exo pldi26|endgame: issue 16)
#   repro [BACKEND]                issue 18: standalone reproducers built and run
#                                  (packed as $OUT/repro.tgz, rows in gpu_repro.json)
#   scale                          issues 19, 20: profile, throughput, Dask scaling
#   scale2 PART [ARG]              issue 31: budget, gpuir, gpuir-local (one GPU),
#                                  profile, regress31 (one GPU), gendirect (one GPU),
#                                  scaling (1 2 4)
#   toolchain [SECONDS]            issue 23: the matrix and attribution probe (T1, a
#                                  seeded fault, cost), its GPU tests, a toolchain
#                                  campaign on cuda
#   toolchain-rate [AFTER BEFORE]  issue 23: the toolchain property's rate on one
#                                  H200, after and before the toolchain branch's
#                                  cuts (before: $RATE_BEFORE_ENV, e.g.
#                                  GPUSEM_TOOLCHAIN_G_EVERY=1 for nvcc-G on every
#                                  round), and its CPU cost per configuration there
#   toolchain-campaign T [BUDGET]  issue 23: a --resume-able toolchain campaign, T =
#                                  bundl or ckernel (t1,psel,t2 avoided); carry
#                                  `campaigns` back in to go on
#   toolchain-campaigns T [BUDGET] [JOBS]  the same on every GPU at once (GPU 0 the
#                                  folder above, GPU i seed 23+i), nvidia-h200-x2
#   ptx-confirm                    issue 23: the programs the static PTX check flags,
#                                  run on the GPU (exec --backend cuda; nvcc, -G)
#   prism-sync [TIMEOUT_S]         issue 28: corrected Appendix B with exec --backend
#                                  cuda under --sync naive|motion|prism, and B.3
#                                  against cupy.cumsum ($OUT/prism_sync_gpu.json)
#   prism-speed [TIMEOUT_S]        issue 28: each corrected Appendix B kernel timed
#                                  against cuBLAS / cupy.cumsum / memcpy on the same
#                                  data, outputs checked ($OUT/prism_speed_gpu.json)
#   ckernel [BUDGET JOBS]          issue 23: the ckernel target's compile, emi and
#                                  toolchain properties on cuda; the nvcc -ptx census
#   t1                             issue 23: toolchain finding T1's build matrix, the
#                                  NVRTC PTX through the driver, SASS; T1_CAMPAIGN=1
#                                  adds a cuda campaign (T1_SEED, T1_BUDGET)
#   t2                             issue 23: finding T2's build matrix and SASS, and the
#                                  matrix attribution of the earlier ckernel bundles
#   t3                             issue 23: finding T3 (the driver JIT's folding of
#                                  add.rn.f32 constants): build matrix and 600 cases
#   lambdacu [BUDGET JOBS FAULT_S]  issue 29: the lambda-cu compiler on cuda: the
#                                  examples through exec, a compile campaign, the
#                                  seeded-fault table, a standalone repro.cu by nvcc
#   lambdacu-mismatch [BUDGET JOBS SEED]  issue 29: the unattributed H200 mismatch:
#                                  fminf/fmaxf of ±0 on the GPU and numpy, the seed-3
#                                  campaign again, its bundles replayed on both
#   vcode [CHECKOUT [PATTERN]]     issue 29 item 6: NESL's VCODE interpreter (neslgpu,
#                                  carried in .neslgpu) with its serial and its CUDA
#                                  vector library on the pre-dumped benchmarks,
#                                  outputs compared ($OUT/vcode.json); no setup needed
#   cypress-ncu [MAPPING N]      issue 30: Nsight Compute over the fused GEMM and
#                                  cuBLAS FP32 at N (stalls, pipes, banks, per SASS
#                                  line); $OUT/ncu.tgz, $OUT/ncu_summary.txt
#   cypress [PROGRAMS BUDGET JOBS] issue 30: Fig. 5's GEMM compiled through the
#                                  lowering to GPU IR vs the reading and cuBLAS
#                                  ($OUT/cypress_gemm.json), the compiled-mapping
#                                  campaign on cuda ($OUT/cypress_fuzz.json), the
#                                  seeded lowering faults; packed as cypress.tgz
#                                  (CYPRESS_ONLY=gemm: the GEMM part alone, with
#                                  the sweep of other legal mappings, ~4 min)
#   pytest                         every test marked gpu ($OUT/pytest_gpu.log)
#   run CMD [ARGS]                 any command after the setup (gpusem fuzz ...)
#   round LANE [LANE ...]          several at once, lane i on GPU i: a LANE is
#                                  "SUB ARGS; SUB ARGS" run in order ($OUT/laneI.log)
#   wheels                         HERE, before the call: every wheel the parts need, in
#                                  .whl (gpusem's pins from pyproject.toml: hypothesis,
#                                  lark, z3-solver; and scale-wheels's)
#   scale-wheels                   HERE, before the call: the wheels scale needs, in .whl
#
# The batched calls of issue 16/17 were, as rounds:
#   bash scripts/gpu.sh round 'exo pldi26' 'appy 17 4m 12; pytest'
#   EXO_JOBS=24 EXO_CENSUS_S=60 EXO_CENSUS_TIMEOUT=170 EXO_COMPILE_S=150 \
#     EXO_COMPILE_TIMEOUT=320 EXO_BATCH=20 bash scripts/gpu.sh round 'exo pldi26' \
#     'pytest; repro cuda'
# The parts live in scripts/gpu/ (setup.sh installs the carried wheels and gpusem once
# per machine and writes $OUT/device.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/gpu-out}
PARTS=scripts/gpu
SUB=${1:-help}
[ $# -gt 0 ] && shift

case "$SUB" in
  bench) exec bash $PARTS/bench.sh "$@" ;;
  faults) exec bash $PARTS/faults.sh "$@" ;;
  appy) exec bash $PARTS/appy.sh "$@" ;;
  appy-shards) source $PARTS/setup.sh; exec bash $PARTS/appy_shards.sh "$@" ;;
  exo) exec bash $PARTS/exo.sh "$@" ;;
  scale) exec bash $PARTS/scale.sh "$@" ;;
  scale2) exec bash $PARTS/scale2.sh "$@" ;;
  scale-wheels) exec bash $PARTS/scale_wheels.sh "$@" ;;
  wheels) exec bash $PARTS/wheels.sh "$@" ;;
  t1) exec bash $PARTS/t1.sh "$@" ;;
  t2) exec bash $PARTS/t2.sh "$@" ;;
  t3) exec bash $PARTS/t3.sh "$@" ;;
  ckernel) exec bash $PARTS/ckernel.sh "$@" ;;
  lambdacu) exec bash $PARTS/lambdacu.sh "$@" ;;
  lambdacu-mismatch) exec bash $PARTS/lambdacu_mismatch.sh "$@" ;;
  vcode) exec bash $PARTS/vcode.sh "$@" ;;
  toolchain) exec bash $PARTS/toolchain.sh "$@" ;;
  toolchain-rate) exec bash $PARTS/toolchain_rate.sh "$@" ;;
  toolchain-campaign) exec bash $PARTS/toolchain_campaign.sh "$@" ;;
  toolchain-campaigns) exec bash $PARTS/toolchain_campaigns.sh "$@" ;;
  ptx-confirm) exec bash $PARTS/ptx_confirm.sh "$@" ;;
  prism-sync) exec bash $PARTS/prism_sync.sh "$@" ;;
  prism-speed) exec bash $PARTS/prism_speed.sh "$@" ;;
  cypress) exec bash $PARTS/cypress.sh "$@" ;;
  cypress-ncu) exec bash $PARTS/cypress_ncu.sh "$@" ;;
  repro)
    source $PARTS/setup.sh
    OUT="$OUT/repro" timeout "${REPRO_TIMEOUT:-330}" bash $PARTS/repro.sh "$@" \
      >"$OUT/repro.log" 2>&1
    status=$?
    cp "$OUT/repro/gpu_repro.json" "$OUT/" 2>/dev/null
    tar czf "$OUT/repro.tgz" -C "$OUT" repro && rm -rf "$OUT/repro"
    exit $status ;;
  pytest)
    source $PARTS/setup.sh
    { head -4 "$OUT/device.txt"
      echo "# CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-} python3 -m pytest -m gpu" \
        "-q -p no:cacheprovider --benchmark-disable tests"
      timeout "${PYTEST_TIMEOUT:-200}" python3 -m pytest -m gpu -q -p no:cacheprovider \
        --benchmark-disable tests 2>&1 | tail -25; } >"$OUT/pytest_gpu.log" 2>&1
    tail -3 "$OUT/pytest_gpu.log" ;;
  run)
    source $PARTS/setup.sh
    exec "$@" ;;
  round)
    source $PARTS/setup.sh  # once: the lanes' parts find it done
    i=0
    for lane in "$@"; do
      (export CUDA_VISIBLE_DEVICES=$i
       IFS=';' read -ra steps <<<"$lane"
       for step in "${steps[@]}"; do
         # shellcheck disable=SC2086  # a step is words: "exo pldi26"
         bash scripts/gpu.sh $step
       done) >"$OUT/lane$i.log" 2>&1 &
      i=$((i + 1))
    done
    wait
    ls -la "$OUT" ;;
  help|-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | cut -c3- ;;
  *) echo "scripts/gpu.sh: unknown subcommand '$SUB' (bash scripts/gpu.sh help)" >&2
     exit 2 ;;
esac
