#!/usr/bin/env bash
# One APPy campaign (issue 17), measured: shards side by side, their statistics merged
# into one discovery curve, the coverage table and the findings table.
#
#   bash scripts/appy_campaign.sh BACKEND BUDGET SHARDS SEED OUTDIR [NAME]
#
#   BACKEND  cpu (Triton's interpreter) or cuda (the GPU, with the interpreter beside it
#            for the differential)
#   BUDGET   each shard's campaign budget (gpusem fuzz --budget: 2h, 6m, 90s)
#   SHARDS   campaign processes side by side (`--shard I/SHARDS` of one seeded
#            campaign: disjoint rounds); 1 on the 2-core dev machine
#   OUTDIR   receives stats/ (one stats-<pid>.json per shard), bundles/ (shrunk
#            counterexamples), shard_I.log, and NAME.json (the result: programs,
#            compared_fraction, causes, new_causes_by_minute by *wall* minute, the
#            shard minutes they add up to), NAME_coverage.md, NAME_findings.md
#
# The 2-hour cpu campaign of issue 17, in the background on the dev machine:
#   nohup bash scripts/appy_campaign.sh cpu 2h 1 17 results/appy/cpu_2h campaign_cpu \
#     > /tmp/appy_cpu_2h.log 2>&1 &
set -uo pipefail
BACKEND=$1 BUDGET=$2 SHARDS=$3 SEED=$4 OUTDIR=$5 NAME=${6:-campaign_$1}
PY=${PYTHON:-python3}
NICE=${NICE:-nice -n 10}
mkdir -p "$OUTDIR/stats" "$OUTDIR/bundles"
START=$(date +%s)
PIDS=()
for ((I = 0; I < SHARDS; I++)); do
  GPUSEM_APPY_STATS="$OUTDIR/stats/shard_$I" $NICE $PY -m gpusem.cli.main fuzz \
    --target appy --backend "$BACKEND" --budget "$BUDGET" --seed "$SEED" \
    --shard "$I/$SHARDS" --round-size 25 --out "$OUTDIR/bundles" \
    >"$OUTDIR/shard_$I.log" 2>&1 &
  PIDS+=($!)
done
# Stopped early (a timeout around this script, Ctrl-C): stop the shards (each writes
# its summary and statistics on SIGTERM), then merge what they wrote.
trap 'kill -TERM "${PIDS[@]}" 2>/dev/null' TERM INT
wait "${PIDS[@]}"
wait "${PIDS[@]}" 2>/dev/null
END=$(date +%s)
MACHINE=${MACHINE:-$(uname -n), $(nproc) cores}
$PY -m gpusem.fuzz.appy.stats "$OUTDIR/stats" "$OUTDIR/$NAME.json" \
  --coverage "$OUTDIR/${NAME}_coverage.md" --meta \
  "command=bash scripts/appy_campaign.sh $BACKEND $BUDGET $SHARDS $SEED $OUTDIR $NAME" \
  "backend=$BACKEND" "budget_per_shard=$BUDGET" "seed=$SEED" "machine=$MACHINE" \
  "started=$(date -u -d @"$START" +%FT%TZ)" "wall_seconds=$((END - START))"
$PY -m gpusem.fuzz.appy.report --campaign "$OUTDIR/$NAME.json" "$OUTDIR/bundles" \
  "$OUTDIR/${NAME}_findings.md"
$PY - "$OUTDIR/$NAME.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
print({k: r[k] for k in ("programs", "compared_fraction", "causes", "wall_minutes",
                         "shard_minutes", "constructs_at_zero")})
print("new causes by wall minute:", r["new_causes_by_minute"])
PYEOF
