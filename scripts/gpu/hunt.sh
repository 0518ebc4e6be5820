#!/usr/bin/env bash
# Re-run single campaign rounds (deterministic from seed and round) in parallel and
# keep their bundles: to recover a finding a long campaign reported.
# Usage: bash scripts/gpu.sh hunt FIRST LAST [SEED] [BACKEND]
set -uo pipefail
OUT=${OUT:-$PWD/hunt-out}
mkdir -p "$OUT"
FIRST=$1; LAST=$2; SEED=${3:-0}; BACKEND=${4:-cpu}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
python3 -c "import hypothesis, sys; print('hypothesis', hypothesis.__version__, sys.version)" >"$OUT/versions.txt"
seq "$FIRST" "$LAST" | xargs -P 16 -I{} python3 -c "
from gpusem.fuzz.campaign import Campaign
c = Campaign('bundl', backend='$BACKEND', prop='compile', budget_s=900, seed=$SEED,
             out_dir='/tmp/hunt/r{}', round_size=40, shard=({}, 100000), max_programs=40)
s = c.run()
print({}, s.programs, [f.signature for f in s.findings], flush=True)
" >"$OUT/rounds.log" 2>&1
tar czf "$OUT/hunt.tgz" -C /tmp hunt 2>/dev/null
grep -v "\[\]" "$OUT/rounds.log" | head -20
