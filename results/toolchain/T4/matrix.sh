#!/usr/bin/env bash
# T4's matrix (no GPU needed, only NVRTC and nvcc): t4_min.cpp built
# against each NVRTC found (the toolkit's, beside nvcc, and the pip wheels'), each mode
# run three times in a fresh folder; one JSON line a run.
#   bash results/toolchain/T4/matrix.sh OUTDIR
set -u
out=${1:?OUTDIR}; mkdir -p "$out"
src=$(cd "$(dirname "$0")" && pwd)/t4_min.cpp
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
libs=$( (ls "$cuda"/lib64/libnvrtc.so.* "$cuda"/targets/*/lib/libnvrtc.so.* 2>/dev/null
         ${PYTHON:-python3} -c 'import glob, site, sys
for d in site.getsitepackages() + sys.path:
    print("\n".join(glob.glob(d + "/nvidia/*/lib/libnvrtc.so.*")))' 2>/dev/null) \
       | grep -v builtins | grep -E 'libnvrtc\.so\.[0-9]+(\.[0-9]+)*$' | sort -u)
echo "$libs" > "$out/libraries.txt"
n=0
for lib in $libs; do
  n=$((n + 1)); dir=$(dirname "$lib"); inc=$(dirname "$dir")/include
  [ -f "$inc/nvrtc.h" ] || inc="$cuda/include"
  exe="$out/t4_$n"
  nvcc -o "$exe" "$src" -I"$inc" -L"$dir" -Xlinker=-l:"$(basename "$lib")" \
    -Xlinker=-rpath="$dir" >"$out/build_$n.log" 2>&1 || { echo "{\"library\": \"$lib\", \"build\": \"failed\"}" >>"$out/matrix.jsonl"; continue; }
  for mode in both first second last other; do
    for run in 1 2 3; do
      w=$(mktemp -d); ( cd "$w" && "$exe" "$mode" >out.txt 2>&1; echo $? >rc )
      rc=$(cat "$w/rc"); ver=$(head -1 "$w/out.txt")
      tail_=$(tail -3 "$w/out.txt" | tr '\n"\\' ' ' | cut -c1-300)
      echo "{\"library\": \"$lib\", \"nvrtc\": \"$ver\", \"mode\": \"$mode\", \"run\": $run, \"exit\": $rc, \"tail\": \"$tail_\"}" >>"$out/matrix.jsonl"
      rm -rf "$w"
    done
  done
done
cat "$out/matrix.jsonl"
