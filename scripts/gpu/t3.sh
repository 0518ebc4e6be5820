#!/usr/bin/env bash
# Toolchain finding T3 on a GPU machine (issue 23): the driver's PTX JIT folding
# add.rn.f32 of two constants. Builds results/toolchain/T3/t3_min.cu offline (ptxas
# SASS) and as PTX only (the driver JITs it), plus CUDA_FORCE_PTX_JIT=1 on a fatbin
# holding both; then scripts/t3_cases.py's 600 cases (add/sub/mul, ties and random,
# folded and at run time) both ways. Writes $OUT/t3_matrix.jsonl, $OUT/t3_cases_*.txt.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
source "$(dirname "$0")/setup.sh"
T3=results/toolchain/T3; W=/tmp/t3; mkdir -p $W; N=${T3_RUNS:-10}
source "$(dirname "$0")/build_matrix.sh"
{
build sass-sm90a $T3/t3_min.cu "" -arch=sm_90a
build sass-sm90a-O0 $T3/t3_min.cu "" -arch=sm_90a -Xptxas -O0
build jit-compute90 $T3/t3_min.cu "" -gencode arch=compute_90,code=compute_90
build jit-compute80 $T3/t3_min.cu "" -gencode arch=compute_80,code=compute_80
build jit-forced $T3/t3_min.cu "CUDA_FORCE_PTX_JIT=1" -gencode arch=compute_90a,code=[sm_90a,compute_90a]
build sass-forced-off $T3/t3_min.cu "" -gencode arch=compute_90a,code=[sm_90a,compute_90a]
} >"$OUT/t3_matrix.jsonl"
cat "$OUT/t3_matrix.jsonl"
python3 scripts/t3_cases.py $W/cases.cu --cases 100 --seed 0
nvcc -arch=sm_90a $W/cases.cu -o $W/cases_sass && $W/cases_sass >"$OUT/t3_cases_sass.txt" 2>&1
echo "sass exit $?" >>"$OUT/t3_cases_sass.txt"
nvcc -gencode arch=compute_90,code=compute_90 $W/cases.cu -o $W/cases_jit && $W/cases_jit >"$OUT/t3_cases_jit.txt" 2>&1
echo "jit exit $?" >>"$OUT/t3_cases_jit.txt"
tail -8 "$OUT/t3_cases_sass.txt" "$OUT/t3_cases_jit.txt"
nvcc --version | tail -1 >>"$OUT/device.txt"
