// lambda-cu program, emitted by gpusem (compiler/lambdacu_cuda).
#define LC_BLOCK 256
#include "lambdacu_rt.cuh"

__global__ void k_permute_1(int n, Arr<int> claim, Arr<int> h6_res, Arr<int> h1_xs, Arr<int> h2_ix) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  const int g4_i = gid;
  r_0 = lc_at(h1_xs, g4_i);
  int d;
  const int g5_i = gid;
  d = lc_at(h2_ix, g5_i);
  if (d < 0 || d >= n) { lc_trap(LC_PERMUTE_BOUNDS); return; }
  if (atomicExch(&claim.p[d], 1) != 0) { lc_trap(LC_PERMUTE_1TO1); return; }
  h6_res.p[d] = r_0;
}

__global__ void k_bpermute_1(int n, Arr<int> h6_res, Arr<int> h1_xs, Arr<int> h2_ix) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r0_0;
  const int g4_i = gid;
  int g5_j;
  g5_j = lc_at(h2_ix, g4_i);
  r0_0 = lc_at(h1_xs, g5_j);
  h6_res.p[gid] = r0_0;
}

__global__ void k_bfpermute_1(int n, Arr<int> h8_res, Arr<bool> h3_flgs, Arr<int> h1_xs, Arr<int> h2_ix) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r0_0;
  const int g5_i = gid;
  bool g6_f;
  g6_f = lc_at(h3_flgs, g5_i);
  if (g6_f) {
    int g7_j;
    g7_j = lc_at(h2_ix, g5_i);
    r0_0 = lc_at(h1_xs, g7_j);
  } else {
    r0_0 = 0;
  }
  h8_res.p[gid] = r0_0;
}

__global__ void k_fused1_1(int n, Arr<int> h8_b, Arr<int> h1_xs, Arr<int> h2_fused1m1_lit1) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r0_0;
  const int g6_i = gid;
  int g7_j;
  g7_j = lc_at(h2_fused1m1_lit1, g6_i);
  r0_0 = lc_at(h1_xs, g7_j);
  h8_b.p[gid] = r0_0;
}

__global__ void k_fused1_2(int n, Arr<int> h13_f, Arr<bool> h4_fused1m2_lit2, Arr<int> h1_xs, Arr<int> h3_fused1m2_lit1) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r0_0;
  const int g10_i = gid;
  bool g11_f;
  g11_f = lc_at(h4_fused1m2_lit2, g10_i);
  if (g11_f) {
    int g12_j;
    g12_j = lc_at(h3_fused1m2_lit1, g10_i);
    r0_0 = lc_at(h1_xs, g12_j);
  } else {
    r0_0 = 0;
  }
  h13_f.p[gid] = r0_0;
}

static std::tuple<Arr<int>, Arr<int>, Arr<int>> fn_main();

static Arr<int> run_permute(Arr<int> h1_xs, Arr<int> h2_ix) {
  const int t3_n = h1_xs.n;
  if (t3_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h6_res = lc_alloc<int>(t3_n);
  Arr<int> t7_claim = lc_alloc<int>(t3_n);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_permute_1, t3_n, t7_claim, h6_res, h1_xs, h2_ix);
  return h6_res;
}

static Arr<int> run_bpermute(Arr<int> h1_xs, Arr<int> h2_ix) {
  const int t3_n = h2_ix.n;
  if (t3_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h6_res = lc_alloc<int>(t3_n);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_bpermute_1, t3_n, h6_res, h1_xs, h2_ix);
  return h6_res;
}

static Arr<int> run_bfpermute(Arr<int> h1_xs, Arr<int> h2_ix, Arr<bool> h3_flgs) {
  const int t4_n = h2_ix.n;
  if (t4_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h8_res = lc_alloc<int>(t4_n);
  if (t4_n > 0) lc_launch(lc_blocks(t4_n), &k_bfpermute_1, t4_n, h8_res, h3_flgs, h1_xs, h2_ix);
  return h8_res;
}

static std::tuple<Arr<int>, Arr<int>> run_fused1(Arr<int> h1_xs, Arr<int> h2_fused1m1_lit1, Arr<int> h3_fused1m2_lit1, Arr<bool> h4_fused1m2_lit2) {
  const int t5_n = h2_fused1m1_lit1.n;
  if (t5_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h8_b = lc_alloc<int>(t5_n);
  if (t5_n > 0) lc_launch(lc_blocks(t5_n), &k_fused1_1, t5_n, h8_b, h1_xs, h2_fused1m1_lit1);
  const int t9_n = h3_fused1m2_lit1.n;
  if (t9_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h13_f = lc_alloc<int>(t9_n);
  if (t9_n > 0) lc_launch(lc_blocks(t9_n), &k_fused1_2, t9_n, h13_f, h4_fused1m2_lit2, h1_xs, h3_fused1m2_lit1);
  return std::make_tuple(h8_b, h13_f);
}

static std::tuple<Arr<int>, Arr<int>, Arr<int>> fn_main() {
  return [&]() { auto v1_xs = lc_lit<int>(10, 20, 30, 40); return [&]() { auto v2_p = run_permute(v1_xs, lc_lit<int>(3, 0, 2, 1)); return [&]() { auto t = run_fused1(v1_xs, lc_lit<int>(3, 3, 0, 1), lc_lit<int>(3, 3, 0, 1), lc_lit<bool>(true, false, true, false)); auto v3_b = std::get<0>(t); auto v4_f = std::get<1>(t); return std::make_tuple(v2_p, v3_b, v4_f); }(); }(); }();
}

int main(int argc, char** argv) {
#if !GS_CUDA
  lc_seed = argc > 1 ? strtoull(argv[1], nullptr, 10) : 0ull;
#endif
  (void)argc;
  (void)argv;
  auto value = fn_main();
  lc_main_at = lc_len_out;
  lc_out("main");
  lc_show(value);
  lc_out("\n");
  lc_finish();
}
