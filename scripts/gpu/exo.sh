#!/usr/bin/env bash
# bash scripts/gpu.sh exo: issue 16 (Exo-GPU under test) on the H100, one branch of Exo per call:
#
#   bash scripts/gpu.sh exo pldi26      # then, in a second call:
#   bash scripts/gpu.sh exo endgame
#
# run with carry [".whl", ".exo_whl"] (lark for gpusem; the Exo-GPU wheels of both
# branches and their dependencies, /work/exo/REPORT.md section 5; both folders are
# ignored in the repository). Each call, in at most about 9.5 minutes (the steps have
# time limits: 90 + 200 + 260 s, each writing what finished) on 16 CPUs:
#   1. installs that branch's wheels into /tmp/exo-BRANCH and writes a `python` wrapper
#      for it (Exo runs in its own worker process: GPUSEM_EXO_PYTHON);
#   2. the verdict census: EXO_PROGRAMS (5000) generated programs checked by Exo-GPU's
#      checker and by gpusem's AMIR checker (--rules paper and fixed), 16 jobs ->
#      $OUT/census_BRANCH.json;
#   3. the compile census: EXO_KERNELS (1000) programs both accept, compiled by Exo to
#      CUDA, built with nvcc for sm_90a (batches of 40), run on the GPU with random
#      inputs and compared bit for bit with the sequential reading, 16 jobs ->
#      $OUT/compile_BRANCH.json; the first program of every finding is a bundle;
#   (EXO_BACKEND=cpu only builds: a test of this script on a machine without a GPU.)
#   4. packs the bundles and logs into $OUT/exo_BRANCH.tgz.
# Every step has its own time limit, so the call ends inside the device's 10 minutes
# and returns what finished. Results are committed under results/exo/ (see there).
set -uo pipefail
B=${1:?usage: bash scripts/gpu.sh exo pldi26|endgame}
cd "$(dirname "$0")/../.."
source scripts/gpu/setup.sh
WORK=/tmp/gpu_exo_$B
mkdir -p "$WORK"
JOBS=${EXO_JOBS:-$(nproc)}

if ! ls .exo_whl/"$B"/*.whl >/dev/null 2>&1; then
  echo "no .exo_whl/$B wheels: carry .exo_whl (see /work/exo/REPORT.md section 5)"; exit 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --target "/tmp/exo-$B" .exo_whl/"$B"/*.whl .exo_whl/common/*.whl >"$WORK/pip-exo.log" 2>&1 \
  || { tail -5 "$WORK/pip-exo.log"; exit 3; }
cat >"/tmp/exo-$B/python" <<EOF
#!/bin/sh
export PYTHONPATH=/tmp/exo-$B\${PYTHONPATH:+:\$PYTHONPATH} CAMSPORK_JIT_DIR=/tmp/jit-$B
exec python3 "\$@"
EOF
chmod +x "/tmp/exo-$B/python"
export GPUSEM_EXO_PYTHON=/tmp/exo-$B/python
# The checker's C++ (endgame JIT-builds it on first use; pldi26 ships it built), and
# what the worker reports it found (branch, commit, source fingerprint):
timeout 90 python3 -c "
from gpusem.compiler.gpuir_exo.driver import ExoDriver
with ExoDriver() as d:
    print(d.install.describe())" 2>&1 | tee "$OUT/install_$B.txt"

# (a round is 100 programs, ~65 s for one job on a loaded host: --seconds is when the
# last round may start, the timeout the hard stop that loses the JSON)
timeout "${EXO_CENSUS_TIMEOUT:-200}" python3 -m gpusem.fuzz.exo.census \
  --programs "${EXO_PROGRAMS:-5000}" --jobs "$JOBS" --seconds "${EXO_CENSUS_S:-150}" --out "$OUT/census_$B.json" 2>&1 | tail -5 | tee "$WORK/census.log"

timeout "${EXO_COMPILE_TIMEOUT:-260}" python3 -m gpusem.fuzz.exo.compile_census \
  --kernels "${EXO_KERNELS:-1000}" --jobs "$JOBS" --seconds "${EXO_COMPILE_S:-150}" \
  --batch "${EXO_BATCH:-40}" --backend "${EXO_BACKEND:-cuda}" --bundles "$WORK/bundles_compile" \
  --out "$OUT/compile_$B.json" 2>&1 | tail -5 | tee "$WORK/compile.log"

tar czf "$OUT/exo_$B.tgz" -C /tmp "gpu_exo_$B" 2>/dev/null
ls -la "$OUT"
