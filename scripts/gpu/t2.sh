#!/usr/bin/env bash
# Toolchain finding T2 on a GPU machine (issue 23): the build matrix of the minimal
# kernel (results/toolchain/T2/t2_min.cu) under the machine's nvcc and the SASS of each
# build, then the toolchain matrix's attribution of the ckernel bundles the campaign
# wrote before attribution existed (scripts/attribute_bundles.py).
# Writes $OUT/t2_matrix.jsonl, $OUT/t2_sass_*.txt, $OUT/t2_attribution.txt and
# $OUT/attribution/<bundle>/attribution.json.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
source "$(dirname "$0")/setup.sh"
T2=results/toolchain/T2; W=/tmp/t2; mkdir -p $W; N=${T2_RUNS:-20}
source "$(dirname "$0")/build_matrix.sh"
{
build nvcc-sm90a $T2/t2_min.cu "" -arch=sm_90a
build nvcc-O3 $T2/t2_min.cu "" -arch=sm_90a -O3
build nvcc-sm90 $T2/t2_min.cu "" -arch=sm_90
build nvcc-sm80 $T2/t2_min.cu "" -arch=sm_80
build nvcc-ptx-jit $T2/t2_min.cu "" -gencode arch=compute_90,code=compute_90
build nvcc-G $T2/t2_min.cu "" -arch=sm_90a -G
build nvcc-ptxas-O0 $T2/t2_min.cu "" -arch=sm_90a -Xptxas -O0
build nvcc-ptxas-O1 $T2/t2_min.cu "" -arch=sm_90a -Xptxas -O1
build nvcc-ptxas-O2 $T2/t2_min.cu "" -arch=sm_90a -Xptxas -O2
} >"$OUT/t2_matrix.jsonl"
for a in sm_90a sm_80; do
  nvcc -arch=$a -cubin -o $W/t2_$a.cubin $T2/t2_min.cu && cuobjdump -sass $W/t2_$a.cubin >"$OUT/t2_sass_$a.txt" 2>&1
done
nvcc --version | tail -2 >>"$OUT/device.txt"
cat "$OUT/t2_matrix.jsonl"
timeout 300 python3 scripts/attribute_bundles.py "$OUT/attribution" \
  results/toolchain/ckernel_cuda_avoid_t1/*-ckernel-mismatch-* \
  results/toolchain/ckernel_cuda_bundles/ckernel-* >"$OUT/t2_attribution.txt" 2>&1
echo "attribution exit $?"; cat "$OUT/t2_attribution.txt"
