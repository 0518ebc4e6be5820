#!/usr/bin/env bash
# bash scripts/gpu.sh exo: Exo-GPU under test on the GPU machine (issues 16 and 26):
#
#   bash scripts/gpu.sh exo census          # the verdict census of both branches, in
#                                           # one 10-minute call on nvidia-h200; again
#                                           # (carrying .exo_census) to add to it
#   bash scripts/gpu.sh exo compile pldi26  # the per-feature code differential
#   bash scripts/gpu.sh exo compile endgame #    (optional: endgame cannot express
#                                           #     mbarrier rings, see below)
#   bash scripts/gpu.sh exo pldi26          # the old single-branch call (census + compile)
#
# run with carry [".exo_whl", ".whl/lark-1.3.1-py3-none-any.whl", ".exo_census"]
# (the Exo-GPU wheels, built by /work/main/.exo_whl/build_wheels.sh:
# .exo_whl/{pldi26,endgame,common}; lark for gpusem, the only wheel of .whl the
# census needs: .whl with z3-solver and .exo_whl together pass the 64 MiB a call
# carries; .exo_census: the census so far, absent on the first call; all three
# ignored in the repository) on nvidia-h200 (16 CPUs). What each call does:
#   - installs each branch's wheels into /tmp/exo-BRANCH with a `python` wrapper
#     (Exo runs in its own worker process: GPUSEM_EXO_PYTHON) and compiles them and
#     gpusem to bytecode once (else every job's first import compiles them again).
#     pldi26's wheel lacks its checker's library (setup.cfg packages no data for
#     exo.spork.camspork): .exo_whl/pldi26/camspork.tgz carries the library built on
#     the dev machine and its sources; when that build does not load here it is
#     rebuilt with ninja and c++. endgame JIT-builds its checker on first use: it
#     needs c++ and ninja on PATH; without them endgame's checker cannot run here and
#     its census is skipped with one line saying so (install_endgame.txt);
#   - census: one census process for both branches (python -m gpusem.fuzz.exo.census
#     --branch pldi26=.. --branch endgame=..): every CPU a job, each job takes the
#     next (branch, round) of 100 programs, the branches interleaved, so both grow
#     by the same rounds at the pace of the two checkers together; no round starts
#     after the call's budget less a round's time, every finished round is kept in
#     the census folder .exo_census/BRANCH/rounds/ (census_folder.py), and a next
#     call carrying .exo_census goes on from there. EXO_PROGRAMS (30000: more than
#     fit, the budget decides) caps each branch. -> $OUT/exo_census.tgz, the one
#     file: .exo_census/ (each branch's rounds, meta.json, census.json with the
#     construct coverage of issue 26) and .exo_census/logs/ (installs, the census
#     log); unpack it at the repository root to update .exo_census, then
#     `python -m gpusem.fuzz.exo.census --merge .exo_census/BRANCH --out FILE`;
#   - compile BRANCH: EXO_KERNELS (1500) programs of the steered mix (mbarrier rings of
#     several stages, clusters, cp.async pipelines: --steer) both accept, compiled by
#     Exo, built for sm_90a, run on the GPU and compared with the sequential reading;
#     per async feature (tma, wgmma, mbarrier-stages, cp-async-stages, cluster) the
#     kernels and their outcomes -> $OUT/compile_BRANCH.json, bundles in the tgz.
#   (EXO_BACKEND=cpu only builds: a test of this script on a machine without a GPU.
#   A test of the census step on the dev machine: EXO_LOCAL=1 (no setup.sh: gpusem
#   on PYTHONPATH, EXO_PY its Python) and EXO_TMP=DIR (installs and census there,
#   not /tmp); GPUSEM_EXO_PYTHON_pldi26 / _endgame: an installed Exo, not installed.)
# Time: the census step keeps within EXO_CALL_S (510) seconds from its start: the
# installs (in parallel, each <= 150 s to start its checker), then rounds until
# EXO_CALL_S - EXO_ROUND_S (100) - the time spent, a hard stop 10 s before
# EXO_CALL_S (the census keeps its finished rounds), the archive. Results are
# committed under results/exo/. EXO_ROUND_S was 60 at stop 29's H200 census: a
# round begun before the last start (~36 s a round a job there, slow programs 5 s
# each) was still running at the hard stop, and the process died there without
# writing its run into meta.json (the 157 finished rounds were kept; "runs": []).
set -uo pipefail
STEP=${1:?usage: bash scripts/gpu.sh exo census|compile BRANCH|pldi26|endgame}
cd "$(dirname "$0")/../.."
if [ -n "${EXO_LOCAL:-}" ]; then  # the dev machine: gpusem importable already
  OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
else
  source scripts/gpu/setup.sh
  python3 -m compileall -q -j 0 src >/dev/null 2>&1  # once, not in every job
fi
NPROC=$(nproc)
T=${EXO_TMP:-/tmp}  # where the Exos are installed and the census is made
CENSUS=$T/gpu_exo_census/.exo_census
PYTHON=${EXO_PY:-python3}

exo_python() {  # $1 = branch: the interpreter its Exo worker runs under
  local V="GPUSEM_EXO_PYTHON_$1"
  echo "${!V:-$T/exo-$1/python}"
}

install_exo() {  # $1 = branch; exit status 0 when its checker runs here
  local B=$1 WORK=$T/gpu_exo_$1
  mkdir -p "$WORK"
  if ! ls .exo_whl/"$B"/*.whl >/dev/null 2>&1; then
    echo "no .exo_whl/$B wheels: run /work/main/.exo_whl/build_wheels.sh, carry .exo_whl"
    return 2
  fi
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$T/exo-$B" .exo_whl/"$B"/*.whl .exo_whl/common/*.whl \
    >"$WORK/pip-exo.log" 2>&1 || { tail -5 "$WORK/pip-exo.log"; return 3; }
  "$PYTHON" -m compileall -q -j 0 "$T/exo-$B" >/dev/null 2>&1  # once, not per worker
  local CS=$T/exo-$B/exo/spork/camspork
  if [ -f .exo_whl/"$B"/camspork.tgz ]; then
    tar xzf .exo_whl/"$B"/camspork.tgz -C "$CS"
    if ! "$PYTHON" -c "import ctypes; ctypes.CDLL('$CS/bin/libcamspork.so')" 2>/dev/null
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
  exo_wrapper "$B" ""
  # the checker's C++ (endgame builds it here, once) and what the worker found
  start_checker "$B" && return 0
  # Stop 29 on the H200: endgame's checker, JIT-built by the image's CXX
  # (/opt/gcc/bin/g++), segfaulted in its first sync_check (camspork.py __repr__;
  # results/exo/census_h200/endgame_diag.txt). Suspected: a libstdc++ other than the
  # one the process loads. Once more with the system compiler, in a fresh JIT folder.
  local SYS=/usr/bin/g++
  if [ "$B" = endgame ] && [ -x "$SYS" ] && [ "${CXX:-c++}" != "$SYS" ]; then
    echo "endgame: its checker did not start built by ${CXX:-c++}; again with $SYS" \
      | tee -a "${INSTALL_OUT:-$OUT}/install_$B.retry.txt"
    cp "${INSTALL_OUT:-$OUT}/install_$B.txt" "${INSTALL_OUT:-$OUT}/install_$B.first.txt"
    rm -rf "$T/jit-$B" && exo_wrapper "$B" "$SYS"
    start_checker "$B" && return 0
  fi
  return 5
}

exo_wrapper() {  # $1 = branch, $2 = the C++ compiler its checker's JIT uses ("": CXX)
  cat >"$T/exo-$1/python" <<EOT
#!/bin/sh
export PYTHONPATH=$T/exo-$1\${PYTHONPATH:+:\$PYTHONPATH} CAMSPORK_JIT_DIR=$T/jit-$1
${2:+export EXO_CXX=$2}
exec $(command -v "$PYTHON") "\$@"
EOT
  chmod +x "$T/exo-$1/python"
}

start_checker() {  # $1 = branch: start its worker once; what it found -> install_B.txt
  GPUSEM_EXO_PYTHON=$T/exo-$1/python timeout 150 "$PYTHON" -c "
from gpusem.compiler.gpuir_exo.driver import ExoDriver
with ExoDriver() as d:
    print(d.install.describe())" 2>&1 | tee "${INSTALL_OUT:-$OUT}/install_$1.txt"
  return "${PIPESTATUS[0]}"
}

census() {  # $@ = the branches whose checker runs here; one process for all
  local args=() B left
  for B in "$@"; do args+=(--branch "$B=$(exo_python "$B")"); done
  left=$((${EXO_CALL_S:-510} - SECONDS))
  mkdir -p "$CENSUS/logs"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    timeout "$((left - 10))" "$PYTHON" -m gpusem.fuzz.exo.census \
    --programs "${EXO_PROGRAMS:-30000}" --jobs "${EXO_JOBS:-$NPROC}" \
    --seconds "$((left - ${EXO_ROUND_S:-100}))" --dir "$CENSUS" "${args[@]}" 2>&1 \
    | tee -a "$CENSUS/logs/census.log" | grep -v '^census .*: round [0-9]* ('
}

compile_census() {  # $1 = branch, $2 = jobs, $3 = seconds, $4 = hard stop
  GPUSEM_EXO_PYTHON=$T/exo-$1/python timeout "$4" "$PYTHON" -m \
    gpusem.fuzz.exo.compile_census --steer --kernels "${EXO_KERNELS:-1500}" \
    --jobs "$2" --seconds "$3" --batch "${EXO_BATCH:-40}" \
    --backend "${EXO_BACKEND:-cuda}" --bundles "$T/gpu_exo_$1/bundles_compile" \
    --out "$OUT/compile_$1.json" 2>&1 | tail -3 | tee "$T/gpu_exo_$1/compile.log"
}

case "$STEP" in
  census)  # both branches in one census process sharing every CPU
    rm -rf "$(dirname "$CENSUS")" && mkdir -p "$CENSUS/logs"
    [ -d .exo_census ] && cp -r .exo_census/. "$CENSUS/"  # carried: go on from there
    for B in pldi26 endgame; do
      V="GPUSEM_EXO_PYTHON_$B"
      [ -n "${!V:-}" ] && continue  # an installed Exo (EXO_LOCAL)
      INSTALL_OUT="$CENSUS/logs" install_exo "$B" >"$T/gpu_exo_$B.out" 2>&1 &
    done
    wait
    RUN=()
    for B in pldi26 endgame; do
      V="GPUSEM_EXO_PYTHON_$B"
      if [ -n "${!V:-}" ]; then RUN+=("$B"); continue; fi
      cat "$T/gpu_exo_$B.out"
      if grep -q "^Exo-GPU" "$CENSUS/logs/install_$B.txt" 2>/dev/null; then
        RUN+=("$B")
      else
        echo "$B: its checker does not run here: no census (install_$B.txt)"
      fi
      cp "$T/gpu_exo_$B.out" "$CENSUS/logs/install_$B.out"
      for f in "$T"/gpu_exo_"$B"/*.log; do
        [ -f "$f" ] && cp "$f" "$CENSUS/logs/${B}_$(basename "$f")"
      done
    done
    echo "census of ${RUN[*]:-no branch} from $SECONDS s of the call"
    [ ${#RUN[@]} -gt 0 ] && census "${RUN[@]}"
    tar czf "$OUT/exo_census.tgz" -C "$(dirname "$CENSUS")" .exo_census
    ls -la "$OUT"
    exit 0 ;;
  compile)
    B=${2:?usage: bash scripts/gpu.sh exo compile pldi26|endgame}
    install_exo "$B" && compile_census "$B" "$NPROC" "${EXO_COMPILE_S:-330}" \
      "${EXO_COMPILE_TIMEOUT:-400}" ;;
  pldi26|endgame)  # the issue-16 call: a smaller census and compile census
    install_exo "$STEP" && {
      EXO_PROGRAMS=${EXO_PROGRAMS:-5000} EXO_CALL_S=${EXO_CALL_S:-250} census "$STEP"
      tar czf "$OUT/exo_census.tgz" -C "$(dirname "$CENSUS")" .exo_census
      compile_census "$STEP" "$NPROC" "${EXO_COMPILE_S:-150}" \
        "${EXO_COMPILE_TIMEOUT:-260}"
    } ;;
  *) echo "unknown step $STEP"; exit 2 ;;
esac
for B in pldi26 endgame; do
  [ -d "$T/gpu_exo_$B" ] && tar czf "$OUT/exo_$B.tgz" -C "$T" "gpu_exo_$B" 2>/dev/null
done
ls -la "$OUT"
