#!/usr/bin/env bash
# Issue 23 item 3 on a GPU: do the programs the static PTX oracle flags really compute
# the wrong result? For the T1 program and each committed ptx bundle's program:
#   1. `gpusem exec FILE --backend cuda` (CuPy's NVRTC; exit 1 = disagrees with the
#      interpreter, i.e. the .nc miscompilation shows);
#   2. the standalone reproducer (`gpusem compile --standalone`) built by nvcc with the
#      cuda backend's flags, and again with -G (exit 1 = wrong result; -G is expected
#      to exit 0).
# Writes $OUT/ptx_confirm.txt (one line per run: file, how, exit code).
# Usage (device tool): bash scripts/gpu.sh ptx-confirm
set -uo pipefail
GPUSEM=${GPUSEM:-python3 -m gpusem}
if [ -d .whl ]; then
  source "$(dirname "$0")/setup.sh"
fi
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/ptx"
REPORT="$OUT/ptx_confirm.txt"
: >"$REPORT"
FILES=(tests/compiler/ptx/t1_scratch_nc.bundl results/toolchain/ptx_bundles/*/program.bundl)
for f in "${FILES[@]}"; do
  name=$(basename "$(dirname "$f")")_$(basename "$f" .bundl)
  $GPUSEM exec "$f" --backend cuda >"$OUT/ptx/$name.exec.txt" 2>&1
  echo "$f exec-cuda exit $?" >>"$REPORT"
  $GPUSEM compile "$f" --standalone -o "$OUT/ptx/$name.cu" >/dev/null 2>&1
  for how in default G; do
    flags=(-arch=sm_90a -std=c++17 --fmad=false)
    [ "$how" = G ] && flags+=(-G)
    if nvcc "${flags[@]}" "$OUT/ptx/$name.cu" -o "$OUT/ptx/$name.$how" \
        2>"$OUT/ptx/$name.$how.nvcc"; then
      "$OUT/ptx/$name.$how" >"$OUT/ptx/$name.$how.txt" 2>&1
      echo "$f nvcc-$how exit $?" >>"$REPORT"
    else
      echo "$f nvcc-$how build-failed" >>"$REPORT"
    fi
  done
done
cat "$REPORT"
tar czf "$OUT/ptx_confirm.tgz" -C "$OUT" ptx && rm -rf "$OUT/ptx"  # 8 files come back
