#!/usr/bin/env bash
# Part of one APPy campaign on the H100 (issue 7), split with --shard so that the whole
# campaign runs across several device calls without overlap:
#   bash scripts/gpu.sh appy-shards SEED BUDGET N I [J ...]
# runs shards I, J, ... of N (each `gpusem fuzz --target appy --backend cuda --budget BUDGET
# --seed SEED --shard K/N`) side by side, then packs their logs and bundles into
# $OUT/appy_shards_<I..>.tgz. Expects scripts/gpu/setup.sh to have been sourced.
set -uo pipefail
SEED=$1 BUDGET=$2 N=$3; shift 3
OUT=${OUT:-$PWD/gpu-out}
WORK=/tmp/appy_shards; mkdir -p "$WORK"
for I in "$@"; do
  timeout 590 python3 -m gpusem fuzz --target appy --backend cuda --budget "$BUDGET" \
    --seed "$SEED" --shard "$I/$N" --out "$WORK/bundles_$I" >"$WORK/shard_$I.log" 2>&1 &
done
wait
TAG=$(echo "$@" | tr ' ' '_')
tar czf "$OUT/appy_shards_$TAG.tgz" -C /tmp appy_shards
