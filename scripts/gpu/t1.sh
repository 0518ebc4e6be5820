#!/usr/bin/env bash
# Toolchain finding T1 on a GPU machine (issue 23): the build matrix of the minimal
# kernel (results/toolchain/T1/t1_min.cu) under the machine's nvcc, the PTX of three
# NVRTC versions (made off the GPU, results/toolchain/T1/nvrtc_*.ptx) JIT-compiled by the
# driver, the SASS of the default build, then the campaign that found it.
# Writes $OUT/t1_matrix.jsonl, $OUT/t1_sass.txt, $OUT/t1_campaign.json, bundles tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
source "$(dirname "$0")/setup.sh"
T1=results/toolchain/T1; W=/tmp/t1; mkdir -p $W; N=${T1_RUNS:-20}
sed 's/ __restrict__//' $T1/t1_min.cu > $W/t1_norestrict.cu
source "$(dirname "$0")/build_matrix.sh"
{
build nvcc-sm90a $T1/t1_min.cu "" -arch=sm_90a
build nvcc-O3 $T1/t1_min.cu "" -arch=sm_90a -O3
build nvcc-sm80 $T1/t1_min.cu "" -arch=sm_80
build nvcc-sm90 $T1/t1_min.cu "" -arch=sm_90
build nvcc-ptx-jit $T1/t1_min.cu "" -gencode arch=compute_90,code=compute_90
build nvcc-G $T1/t1_min.cu "" -arch=sm_90a -G
build nvcc-ptxas-O0 $T1/t1_min.cu "" -arch=sm_90a -Xptxas -O0
build nvcc-ptxas-O1 $T1/t1_min.cu "" -arch=sm_90a -Xptxas -O1
build nvcc-no-restrict $W/t1_norestrict.cu "" -arch=sm_90a
build nvcc-fmad-false $T1/t1_min.cu "" -arch=sm_90a --fmad=false
} >"$OUT/t1_matrix.jsonl"
nvcc -arch=sm_90a -cubin -o $W/t1.cubin $T1/t1_min.cu && cuobjdump -sass $W/t1.cubin >"$OUT/t1_sass.txt" 2>&1
python3 scripts/t1_jit_run.py $N $T1/nvrtc_*.ptx $T1/*.cubin >>"$OUT/t1_matrix.jsonl" 2>>"$OUT/t1_jit.err"
nvcc --version | tail -2 >>"$OUT/device.txt"
cat "$OUT/t1_matrix.jsonl"
if [ -n "${T1_CAMPAIGN:-}" ]; then
  timeout 420 gpusem fuzz --target bundl --backend cuda --jobs 16 --budget ${T1_BUDGET:-90s} \
    --seed ${T1_SEED:-0} --out /tmp/t1camp --json "$OUT/t1_campaign.json" >"$OUT/t1_campaign.log" 2>&1
  echo "campaign exit $?"; tail -30 "$OUT/t1_campaign.log"
  tar czf "$OUT/t1_campaign_bundles.tgz" -C /tmp t1camp
fi
