#!/usr/bin/env bash
# Issue 29: attribute the H200's unattributed `lambdacu:compile:mismatch` (seed 3,
# 45 s, 12 jobs; results/lambdacu/campaign_cuda_h200.json). One H200 (device tool,
# kind nvidia-h200, carry .whl). (1) what the GPU's fminf/fmaxf and this host's
# numpy answer for +0.0/-0.0 in both orders (the old runtime's lc_min/lc_max were
# fminf/fmaxf, the old interpreter numpy's fmin/fmax: errata L13); (2) the same
# campaign again, on this tree; (3) every bundle it writes replayed on cuda and cpu,
# its program run through `exec` on both backends (block 4, the campaign's), and
# which of min/max/exp/log it calls; bundles packed as lcu_mismatch.tgz; (0) first,
# the seed's 55-line programs of round 3 (drawn as the campaign draws them) through
# exec on cuda and cpu ($OUT/lcu_seed3.txt).
# Usage: bash scripts/gpu.sh lambdacu-mismatch [BUDGET] [JOBS] [SEED]
#        (defaults 45s 12 3, the finding's campaign)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/setup.sh
BUDGET=${1:-45s} JOBS=${2:-12} SEED=${3:-3}
mkdir -p "$OUT/zeros"
cat >"$OUT/zeros/zeros.cu" <<'CU'
#include <cstdio>
#include <cstring>
__global__ void k(float* o, float p, float n) {
  o[0] = fminf(p, n); o[1] = fminf(n, p); o[2] = fmaxf(p, n); o[3] = fmaxf(n, p);
}
int main() {
  float* d; float h[4]; cudaMalloc(&d, sizeof h);
  k<<<1, 1>>>(d, 0.0f, -0.0f); cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  const char* what[] = {"fmin(+0,-0)", "fmin(-0,+0)", "fmax(+0,-0)", "fmax(-0,+0)"};
  for (int i = 0; i < 4; ++i) { unsigned u; memcpy(&u, &h[i], 4);
    printf("gpu %s = %08x\n", what[i], u); }
}
CU
{ (cd "$OUT/zeros" && nvcc -std=c++17 -O3 -arch=sm_90a -fmad=false -w -o zeros \
     zeros.cu && ./zeros && rm -f zeros)
  python3 -c "
import numpy as np
f = np.float32
for name, op in (('fmin', np.fmin), ('fmax', np.fmax)):
    for a, b in ((0.0, -0.0), (-0.0, 0.0)):
        print('numpy', np.__version__, f'{name}({a:+},{b:+}) =',
              format(int(op(f(a), f(b)).view(np.uint32)), '08x'))"
} >"$OUT/lcu_zeros.txt" 2>&1
# the 55-line programs the seed-3 campaign draws within its first 30 programs a shard:
# round 3, programs 21-24 (three distinct; scripts/gpu.sh's campaign reached ~18-25
# a shard in 45 s), each through exec on both backends
mkdir -p "$OUT/zeros/seed3"
python3 -c "
from gpusem.fuzz.bundl.sample import draw_round
from gpusem.fuzz.lambdacu.target import LambdacuTarget
from gpusem.calculus.lambdacu.printer import print_program
t = LambdacuTarget('cuda')
for k, p in enumerate(draw_round(t.strategy('compile'), $SEED, 3, 100)[:30]):
    if t.size(p) == 55:
        open('$OUT/zeros/seed3/r3_%d.lcu' % k, 'w').write(print_program(p))
" >"$OUT/lcu_seed3.txt" 2>&1
for f in "$OUT"/zeros/seed3/*.lcu; do
  for backend in cuda cpu; do
    { echo "== $f $backend"; gpusem exec "$f" --backend $backend -D LC_BLOCK=4
      echo "exit $?"; } >>"$OUT/lcu_seed3.txt" 2>&1
  done
done
rm -rf ~/.cache/gpusem/lambdacu
gpusem fuzz --target lambdacu --backend cuda --budget "$BUDGET" --jobs "$JOBS" \
  --seed "$SEED" --out "$OUT/lcu_mm" --json "$OUT/lcu_mismatch.json" \
  >"$OUT/lcu_mm.log" 2>&1
echo "campaign: exit $?" >"$OUT/lcu_mismatch.txt"
for b in "$OUT"/lcu_mm/*/; do
  [ -f "$b/program.lcu" ] || continue
  { echo "== $b"
    grep -oE '\b(min|max|exp|log)\b|\((fmin|fmax)\)' "$b/program.lcu" | sort | uniq -c
    for backend in cuda cpu; do
      gpusem replay "$b" --backend $backend; echo "replay $backend: exit $?"
      gpusem exec "$b/program.lcu" --backend $backend -D LC_BLOCK=4
      echo "exec $backend: exit $?"
    done; } >>"$OUT/lcu_mismatch.txt" 2>&1
done
tar czf "$OUT/lcu_mismatch.tgz" -C "$OUT" lcu_mm zeros && rm -rf "$OUT/lcu_mm"
ls -la "$OUT"
