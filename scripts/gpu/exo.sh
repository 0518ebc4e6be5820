#!/usr/bin/env bash
# bash scripts/gpu.sh exo: Exo-GPU under test on the GPU machine (issues 16 and 26), in
# two 10-minute calls:
#
#   bash scripts/gpu.sh exo census          # 1: the verdict census, both branches at once
#   bash scripts/gpu.sh exo compile pldi26  # 2: the per-feature code differential
#   bash scripts/gpu.sh exo compile endgame #    (optional: endgame cannot express
#                                           #     mbarrier rings, see below)
#   bash scripts/gpu.sh exo pldi26          # the old single-branch call (census + compile)
#
# run with carry [".whl", ".exo_whl"] (lark for gpusem; the Exo-GPU wheels, built by
# /work/main/.exo_whl/build_wheels.sh: .exo_whl/{pldi26,endgame,common}; ignored in
# the repository), on nvidia-h200-x4 for call 1 (64 CPUs: 32 jobs per branch) and
# nvidia-h200 for call 2. What each call does:
#   - installs each branch's wheels into /tmp/exo-BRANCH with a `python` wrapper
#     (Exo runs in its own worker process: GPUSEM_EXO_PYTHON). pldi26's wheel lacks
#     its checker's library (setup.cfg packages no data for exo.spork.camspork):
#     .exo_whl/pldi26/camspork.tgz carries the library built on the dev machine and its
#     sources; when that build does not load here it is rebuilt with ninja and c++.
#     endgame JIT-builds its checker on first use: it needs c++ and ninja on PATH;
#     without them endgame's checker cannot run here and its census is skipped with
#     one line saying so (install_endgame.txt);
#   - census: EXO_PROGRAMS (6000) generated programs per branch, both checkers,
#     -> $OUT/census_BRANCH.json (with the construct coverage of issue 26);
#   - compile BRANCH: EXO_KERNELS (1500) programs of the steered mix (mbarrier rings of
#     several stages, clusters, cp.async pipelines: --steer) both accept, compiled by
#     Exo, built for sm_90a, run on the GPU and compared with the sequential reading;
#     per async feature (tma, wgmma, mbarrier-stages, cp-async-stages, cluster) the
#     kernels and their outcomes -> $OUT/compile_BRANCH.json, bundles in the tgz.
#   (EXO_BACKEND=cpu only builds: a test of this script on a machine without a GPU.)
# Every step has its own time limit (installing and starting a checker <= 150 s, a
# census or compile census <= 380 or 400 s), so a call ends inside the device's 10 minutes
# and returns what finished. Results are committed under results/exo/.
set -uo pipefail
STEP=${1:?usage: bash scripts/gpu.sh exo census|compile BRANCH|pldi26|endgame}
cd "$(dirname "$0")/../.."
source scripts/gpu/setup.sh
NPROC=$(nproc)

install_exo() {  # $1 = branch; exit status 0 when its checker runs here
  local B=$1 WORK=/tmp/gpu_exo_$1
  mkdir -p "$WORK"
  if ! ls .exo_whl/"$B"/*.whl >/dev/null 2>&1; then
    echo "no .exo_whl/$B wheels: run /work/main/.exo_whl/build_wheels.sh, carry .exo_whl"
    return 2
  fi
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "/tmp/exo-$B" .exo_whl/"$B"/*.whl .exo_whl/common/*.whl \
    >"$WORK/pip-exo.log" 2>&1 || { tail -5 "$WORK/pip-exo.log"; return 3; }
  local CS=/tmp/exo-$B/exo/spork/camspork
  if [ -f .exo_whl/"$B"/camspork.tgz ]; then
    tar xzf .exo_whl/"$B"/camspork.tgz -C "$CS"
    if ! python3 -c "import ctypes; ctypes.CDLL('$CS/bin/libcamspork.so')" 2>/dev/null
    then
      echo "$B: the carried libcamspork.so does not load here; rebuilding with ninja"
      rm -rf "$CS/bin" && (cd "$CS" && ninja >"$WORK/ninja.log" 2>&1) \
        || { echo "$B: cannot build its checker here ($(command -v ninja c++ | wc -l)/2 of ninja, c++)"; return 4; }
    fi
  elif [ "$B" = endgame ] && ! { command -v c++ && command -v ninja; } >/dev/null; then
    echo "endgame: its checker is JIT-built on first use and needs c++ and ninja," \
         "which this image lacks: endgame's checker cannot run here"
    return 4
  fi
  cat >"/tmp/exo-$B/python" <<EOT
#!/bin/sh
export PYTHONPATH=/tmp/exo-$B\${PYTHONPATH:+:\$PYTHONPATH} CAMSPORK_JIT_DIR=/tmp/jit-$B
exec python3 "\$@"
EOT
  chmod +x "/tmp/exo-$B/python"
  # the checker's C++ (endgame builds it here, once) and what the worker found
  GPUSEM_EXO_PYTHON=/tmp/exo-$B/python timeout 150 python3 -c "
from gpusem.compiler.gpuir_exo.driver import ExoDriver
with ExoDriver() as d:
    print(d.install.describe())" 2>&1 | tee "$OUT/install_$B.txt"
  return "${PIPESTATUS[0]}"
}

census() {  # $1 = branch, $2 = jobs
  GPUSEM_EXO_PYTHON=/tmp/exo-$1/python timeout "${EXO_CENSUS_TIMEOUT:-380}" \
    python3 -m gpusem.fuzz.exo.census --programs "${EXO_PROGRAMS:-6000}" --jobs "$2" \
    --seconds "${EXO_CENSUS_S:-300}" --out "$OUT/census_$1.json" 2>&1 | tail -3 \
    | tee "/tmp/gpu_exo_$1/census.log"
}

compile_census() {  # $1 = branch, $2 = jobs, $3 = seconds, $4 = hard stop
  GPUSEM_EXO_PYTHON=/tmp/exo-$1/python timeout "$4" python3 -m \
    gpusem.fuzz.exo.compile_census --steer --kernels "${EXO_KERNELS:-1500}" \
    --jobs "$2" --seconds "$3" --batch "${EXO_BATCH:-40}" \
    --backend "${EXO_BACKEND:-cuda}" --bundles "/tmp/gpu_exo_$1/bundles_compile" \
    --out "$OUT/compile_$1.json" 2>&1 | tail -3 | tee "/tmp/gpu_exo_$1/compile.log"
}

case "$STEP" in
  census)  # both branches side by side, half the CPUs each
    for B in pldi26 endgame; do
      (install_exo "$B" && census "$B" $((NPROC / 2))) &
    done
    wait ;;
  compile)
    B=${2:?usage: bash scripts/gpu.sh exo compile pldi26|endgame}
    install_exo "$B" && compile_census "$B" "$NPROC" "${EXO_COMPILE_S:-330}" \
      "${EXO_COMPILE_TIMEOUT:-400}" ;;
  pldi26|endgame)  # the issue-16 call: a smaller census and compile census
    install_exo "$STEP" && {
      EXO_PROGRAMS=${EXO_PROGRAMS:-5000} EXO_CENSUS_S=${EXO_CENSUS_S:-150} \
        EXO_CENSUS_TIMEOUT=${EXO_CENSUS_TIMEOUT:-200} census "$STEP" "$NPROC"
      compile_census "$STEP" "$NPROC" "${EXO_COMPILE_S:-150}" \
        "${EXO_COMPILE_TIMEOUT:-260}"
    } ;;
  *) echo "unknown step $STEP"; exit 2 ;;
esac
for B in pldi26 endgame; do
  [ -d "/tmp/gpu_exo_$B" ] && tar czf "$OUT/exo_$B.tgz" -C /tmp "gpu_exo_$B" 2>/dev/null
done
ls -la "$OUT"
