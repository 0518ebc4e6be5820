#!/usr/bin/env bash
# Issue 30 on a GPU with hardware counters (Firecracker machines: nvidia-h200-x2 was;
# KINDS.md): Nsight Compute over the fused GEMM (u128-hopper-fused, our leaf mma_fma, the
# 1.88x-cuBLAS kernel of results/cypress/gemm_h200_2026-11-29f) and cuBLAS's FP32 GEMM
# (cupy.matmul, CUPY_TF32=0) at N = 4096, in one process: where each kernel's warps stall,
# its pipes' utilisation, its shared-memory wavefronts and bank conflicts, and per SASS
# line the stall samples. Clocks left alone (--clock-control none, METHOD.md).
# Usage: bash scripts/gpu.sh cypress-ncu [MAPPING [N]]   (u128-hopper 4096: its fused variant; --fused takes the base name)
# MAPPING may be any fused row name cypress_gemm_gpu.py's --fused takes, e.g.
# u128-hopper-fused-blocked (the blocked accumulator layout, branch cyfrag),
# u128-v128-wgs2-p4-fused-blocked-prefetch (its nest software-pipelined, cyfrag2) or
# u128-hopper-fused-grouped-noacopy: one name a run (both rows' GEMM is fig5_gemm_1).
# Output: $OUT/ncu.tgz (the .ncu-rep, details/raw CSV per kernel, the SASS source page)
# and $OUT/ncu_summary.txt; scripts/ncu_summary.py's JSON of every kernel profiled
# (ours and cuBLAS's) in $OUT/ncu_summary.json. About 1 minute.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -d .whl ] && source scripts/gpu/setup.sh
OUT=${OUT:-$PWD/gpu-out}
MAPPING=${1:-u128-hopper} N=${2:-4096}
WORK=/tmp/cypress-ncu
rm -rf "$WORK" && mkdir -p "$WORK"
SUMMARY="$OUT/ncu_summary.txt"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU $($NCU --version | tail -1)" >"$SUMMARY"
base=${MAPPING%-fused*}
# our two kernels (fig5_gemm_0 transposes B, fig5_gemm_1 is the GEMM) and cuBLAS's
timeout 420 "$NCU" --clock-control none --target-processes all --set full \
  --import-source no -k 'regex:fig5_gemm_1|gemm|Kernel' --launch-count 6 \
  -o "$WORK/gemm" -f \
  python3 scripts/cypress_gemm_gpu.py --backend cuda --sizes "$N" --variants none \
    --mappings none --fused "$MAPPING" --ablate "" --warmup 0 --iters 1 \
    --check-upto 0 --out "$WORK/gemm.json" >"$WORK/run.log" 2>&1
echo "ncu run: exit $?" >>"$SUMMARY"
tail -5 "$WORK/run.log" >>"$SUMMARY"
"$NCU" --import "$WORK/gemm.ncu-rep" --page details --csv >"$WORK/details.csv" 2>&1
"$NCU" --import "$WORK/gemm.ncu-rep" --page raw --csv >"$WORK/raw.csv" 2>&1
"$NCU" --import "$WORK/gemm.ncu-rep" --page source --csv --print-source sass \
  -k fig5_gemm_1 >"$WORK/source_ours.csv" 2>&1 || true
"$NCU" --import "$WORK/gemm.ncu-rep" --page details >"$WORK/details.txt" 2>&1
grep -E "^  [a-zA-Z_].*\(|Duration|Issue Slots Busy|Warp Cycles Per Issued|Stall|Bank|Wavefronts|Registers|Achieved Occupancy|Executed Ipc|Theoretical Occ" \
  "$WORK/details.txt" | head -200 >>"$SUMMARY"
python3 scripts/ncu_summary.py "$WORK/raw.csv" --source "$WORK/source_ours.csv" \
  --json "$OUT/ncu_summary.json" >/dev/null 2>>"$SUMMARY"
tar czf "$OUT/ncu.tgz" -C "$WORK" .
cat "$SUMMARY"
