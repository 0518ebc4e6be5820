#!/usr/bin/env bash
# bash scripts/gpu.sh bench: issue 4 "Speed of what it emits", in one command on a bare H100.
#
# Compiles the Bundl reduction (2^26 floats) and the Prism B.2 2D-tiled SGEMM (4096^3)
# with our compiler, runs them through the cuda backend next to cupy.sum / cupy.matmul
# (cuBLAS FP32, CUPY_TF32=0) in one process, checks the results (bit for bit against
# same-order references, and within tolerance of CuPy), and writes everything under
# $OUT: bench.json (all numbers), harness.log, nvidia-smi.txt, and summary.txt (the
# table printed last); the .bundl and .cu texts stay in $GPU_BENCH_WORK/programs
# (default /tmp/gpu_bench) on the GPU machine.
#
# Needs: python3 with CuPy and numpy (the image has them) and lark (not in the image:
# carry the wheel, `python3 -m pip download --no-deps lark==1.3.1 -d .whl`, and name
# .whl in carry; installed below into /tmp/site). Runs in about 1.5-2 minutes.
# $OUT holds 5 files (7 with GPU_BENCH_PYTEST=1; pip and import logs stay in $GPU_BENCH_WORK):
# clocks.csv is the SM clock / power / throttle reasons sampled during the harness.
# Optional: GPU_BENCH_ONLY=sgemm (or reduce) runs one benchmark; GPU_BENCH_VARIANTS=REGEX
# only the SGEMM variants whose labels match.
# Optional: GPU_BENCH_PYTEST=1 also runs `pytest -m gpu tests/compiler/test_bench_programs.py`.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/bench_out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPY_TF32=0
PY="${PYTHON:-python3}"

WORK="${GPU_BENCH_WORK:-/tmp/gpu_bench}"
mkdir -p "$WORK"
if ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >"$WORK/pip-wheels.log" 2>&1 && export PYTHONPATH=/tmp/site
fi
if [ "${GPU_BENCH_SKIP_INSTALL:-0}" != 1 ]; then
  "$PY" -m pip install -q -e . --no-deps --no-build-isolation >"$WORK/pip.log" 2>&1 \
    || { echo "note: editable install failed:"; tail -5 "$WORK/pip.log"; }
fi
"$PY" -c 'import gpusem.compiler.bundl_cuda.bench.harness' 2>"$WORK/import.log" || {
  echo "cannot import the harness (lark missing?):"; cat "$WORK/import.log"; exit 3; }
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true

# ~27 kernels compiled by NVRTC (1-3 s each: fully unrolled 8 x 8 tiles) plus the
# timings (SGEMM: 5 interleaved cuBLAS/variant rounds per variant): 47 s for the
# whole script with 16 variants and one timing each (2026-11-22 13:29); expect
# about 1.5-2 minutes with 23 variants and the rounds.
# SM clock, power and throttle reasons every 200 ms during the run (nvidia-smi's
# sampler, killed by its pid): tells a power-capped clock from a slow kernel.
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 200 >"$OUT/clocks.csv" 2>&1 &
smi_pid=$!
only=()
[ -n "${GPU_BENCH_ONLY:-}" ] && only=(--only "$GPU_BENCH_ONLY")  # reduce | sgemm
# e.g. GPU_BENCH_VARIANTS='^strict_pf' (a regex over SGEMM_VARIANTS labels)
[ -n "${GPU_BENCH_VARIANTS:-}" ] && only+=(--variants "$GPU_BENCH_VARIANTS")
timeout "${GPU_BENCH_TIMEOUT:-230}" "$PY" -m gpusem.compiler.bundl_cuda.bench.harness --out "$WORK" \
  "${only[@]}" 2>&1 | tail -n 400 > "$OUT/harness.log"
rc=${PIPESTATUS[0]}
kill "$smi_pid" 2>/dev/null
cp "$WORK/bench.json" "$OUT/bench.json" 2>/dev/null || echo "no bench.json (see harness.log)"
# clocks right after the run (the FP32 issue ceiling is 128 lanes x SMs x SM clock)
nvidia-smi -q -d CLOCK,PERFORMANCE >>"$OUT/nvidia-smi.txt" 2>&1 || true

if [ "${GPU_BENCH_PYTEST:-0}" = 1 ]; then
  timeout 120 "$PY" -m pytest -m gpu tests/compiler/test_bench_programs.py -q -p no:cacheprovider \
    --benchmark-json="$OUT/pytest-benchmark.json" 2>&1 | tee "$OUT/pytest.log"
fi

"$PY" - "$OUT/bench.json" <<'PYEOF' | tee "$OUT/summary.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print("device:", r.get("device", {}).get("name"), "| warmup/iters:", r.get("warmup"),
      r.get("iters"))
red = r.get("reduce", {})
if "GBps" in red:
    print(f"reduce 2^26 f32: cupy.sum {red['GBps']['cupy_sum']:.0f} GB/s "
          f"(accelerators {red.get('cupy_accelerators')}); target 0.80 of it")
    for label, v in red.get("variants", {}).items():
        if "GBps" not in v:
            print(f"  {label}: {v}")
            continue
        g, q, c = v["GBps"], v["ratio_vs_cupy"], v["check"]
        print(f"  {label}{' (best)' if red.get('best') == label else ''}: block reduce "
              f"{g['block_reduce']:.0f} GB/s = {q['block_reduce']:.2f} x cupy; with the "
              f"final pass {g['total']:.0f} GB/s = {q['total']:.2f}; exact "
              f"{c['partials_bit_exact_vs_same_order_reference']}/"
              f"{c['total_bit_exact_vs_same_order_reference']}, within tol of cupy "
              f"{c['within_tolerance_of_cupy']}")
else:
    print("reduce:", red)
sg = r.get("sgemm", {})
if "TFLOPs" in sg:
    t, q = sg["TFLOPs"], sg["ratio_vs_cublas"]
    cs = sg.get("cublas_spread_TFLOPs", {})
    print(f"sgemm 4096^3: cuBLAS FP32 {t['cublas']:.1f} TFLOP/s; target 0.50 of it; over "
          f"{cs.get('rounds')} interleaved rounds cuBLAS min/median/max "
          f"{cs.get('min', 0):.1f}/{cs.get('median', 0):.1f}/{cs.get('max', 0):.1f}")
    print("  ratio = median over rounds of (cuBLAS ms / variant ms), each round timing "
          "both back to back; [min..max] over rounds")
    for v, c in sg["check"].items():
        if v not in t:
            print(f"  {v}: {str(c)[:300]}")
            continue
        rr = sg.get("rounds", {}).get(v, {})
        print(f"  {v:26s} {t[v]:5.1f} TFLOP/s = {q[v]:.4f} x cuBLAS "
              f"[{rr.get('ratio_min', 0):.4f}..{rr.get('ratio_max', 0):.4f}] (with untile "
              f"{q[v + '+untile']:.3f}); exact {c['bit_exact_vs_same_order_reference']}, "
              f"within tol {c['within_tolerance_of_cublas']}")
    bs = sg.get("best_strict")
    if bs in sg.get("rounds", {}):
        lo = sg["rounds"][bs]["ratio_min"]
        print(f"  best strict {bs}: median {q[bs]:.4f} x cuBLAS, worst round {lo:.4f}: "
              f"target 0.50 {'met in every round' if lo >= 0.5 else 'NOT met in every round'}")
    print(f"  best strict (the oracle's no-FMA semantics): {sg.get('best_strict')}; "
          f"best fast_fma (opt-in, not the reference semantics): {sg.get('best_fast_fma')}")
    bf = sg.get("best_fma")  # the explicit fma(m, n, c): exact, checked bit for bit
    if bf in sg.get("rounds", {}):
        lo = sg["rounds"][bf]["ratio_min"]
        print(f"  best fma (explicit fma, exact) {bf}: median {q[bf]:.4f} x cuBLAS, worst "
              f"round {lo:.4f}: target 0.50 "
              f"{'met in every round' if lo >= 0.5 else 'NOT met in every round'}")
    if "fast_fma_speedup_over_strict" in sg:
        print(f"  cost of the no-FMA exactness rule: fast_fma is "
              f"{sg['fast_fma_speedup_over_strict']:.2f}x the strict kernel")
else:
    print("sgemm:", sg)
PYEOF
exit "$rc"
