// lambda-cu program, emitted by gpusem (compiler/lambdacu_cuda).
#define LC_BLOCK 256
#include "lambdacu_rt.cuh"

struct R_fadd {
  typedef float T;
  static constexpr bool tree = false;
  static LC_HDM float id() { return 0x0.0p+0f; }
  static LC_HDM float op(float a, float b) { return lc_add(a, b); }
};

__global__ void k_dot_1(int n, Arr<float> h7_ps, Arr<float> h1_xs, Arr<float> h2_ys) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  float r0_0;
  const int g4_i = gid;
  float g5_x;
  g5_x = lc_at(h1_xs, g4_i);
  float g6_y;
  g6_y = lc_at(h2_ys, g4_i);
  r0_0 = lc_mul(g5_x, g6_y);
  h7_ps.p[gid] = r0_0;
}

__global__ void k_dot_2(int n, Arr<float> t10_col, Arr<float> h7_ps) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  float r_0;
  const int g9_i = gid;
  r_0 = lc_at(h7_ps, g9_i);
  t10_col.p[gid] = r_0;
}

__global__ void k_muladd_1(int n, Arr<float> h9_res, float h1_a, Arr<float> h2_xs, Arr<float> h3_ys) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  float r0_0;
  const int g5_i = gid;
  float g6_x;
  g6_x = lc_at(h2_xs, g5_i);
  float g7_y;
  g7_y = lc_at(h3_ys, g5_i);
  float g8_ax;
  g8_ax = lc_mul(h1_a, g6_x);
  r0_0 = lc_add(g8_ax, g7_y);
  h9_res.p[gid] = r0_0;
}

static std::tuple<float, Arr<float>> fn_main();

static float run_dot(Arr<float> h1_xs, Arr<float> h2_ys) {
  const int t3_n = h1_xs.n;
  if (t3_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<float> h7_ps = lc_alloc<float>(t3_n);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_dot_1, t3_n, h7_ps, h1_xs, h2_ys);
  const int t8_n = h7_ps.n;
  if (t8_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<float> t10_col = lc_alloc<float>(t8_n);
  if (t8_n > 0) lc_launch(lc_blocks(t8_n), &k_dot_2, t8_n, t10_col, h7_ps);
  const float h11_d = lc_reduce<R_fadd>(t10_col);
  return h11_d;
}

static Arr<float> run_muladd(float h1_a, Arr<float> h2_xs, Arr<float> h3_ys) {
  const int t4_n = h2_xs.n;
  if (t4_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<float> h9_res = lc_alloc<float>(t4_n);
  if (t4_n > 0) lc_launch(lc_blocks(t4_n), &k_muladd_1, t4_n, h9_res, h1_a, h2_xs, h3_ys);
  return h9_res;
}

static std::tuple<float, Arr<float>> fn_main() {
  return [&]() { auto v1_xs = lc_lit<float>(0x1.8000000000000p+0f, 0x1.0000000000000p+1f, 0x1.8000000000000p+1f); return [&]() { auto v2_ys = lc_lit<float>(0x1.0000000000000p+2f, 0x1.4000000000000p+2f, 0x1.0000000000000p-1f); return [&]() { auto v3_d = run_dot(v1_xs, v2_ys); return [&]() { auto v4_m = run_muladd(0x1.0000000000000p+1f, v1_xs, v2_ys); return std::make_tuple(v3_d, v4_m); }(); }(); }(); }();
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
