// lambda-cu program, emitted by gpusem (compiler/lambdacu_cuda).
#define LC_BLOCK 256
#include "lambdacu_rt.cuh"

struct R_iadd {
  typedef int T;
  static constexpr bool tree = true;
  static LC_HDM int id() { return 0; }
  static LC_HDM int op(int a, int b) { return lc_add(a, b); }
};

struct R_imax {
  typedef int T;
  static constexpr bool tree = true;
  static LC_HDM int id() { return (-2147483647 - 1); }
  static LC_HDM int op(int a, int b) { return lc_max(a, b); }
};

__global__ void k_plus_scan_1(int n, Arr<int> t4_col, Arr<int> h1_xs) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  const int g3_i = gid;
  r_0 = lc_at(h1_xs, g3_i);
  t4_col.p[gid] = r_0;
}

__global__ void k_plus_scan_2(int n, Arr<int> h10_res, Arr<int> h5_inc) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r0_0;
  const int g7_i = gid;
  bool g8_first;
  g8_first = lc_eq(g7_i, 0);
  if (g8_first) {
    r0_0 = 0;
  } else {
    int g9_j;
    g9_j = lc_sub(g7_i, 1);
    r0_0 = lc_at(h5_inc, g9_j);
  }
  h10_res.p[gid] = r0_0;
}

__global__ void k_max_scan_1(int n, Arr<int> t4_col, Arr<int> h1_xs) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  const int g3_i = gid;
  r_0 = lc_at(h1_xs, g3_i);
  t4_col.p[gid] = r_0;
}

__global__ void k_max_scan_2(int n, Arr<int> h10_res, Arr<int> h5_inc) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r0_0;
  const int g7_i = gid;
  bool g8_first;
  g8_first = lc_eq(g7_i, 0);
  if (g8_first) {
    r0_0 = (-2147483647 - 1);
  } else {
    int g9_j;
    g9_j = lc_sub(g7_i, 1);
    r0_0 = lc_at(h5_inc, g9_j);
  }
  h10_res.p[gid] = r0_0;
}

__global__ void k_reductions_1(int n, Arr<int> t5_col, Arr<int> t6_col, Arr<int> h1_xs) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  int r_1;
  const int g3_i = gid;
  int g4_x;
  g4_x = lc_at(h1_xs, g3_i);
  r_0 = g4_x;
  r_1 = g4_x;
  t5_col.p[gid] = r_0;
  t6_col.p[gid] = r_1;
}

static std::tuple<Arr<int>, Arr<int>, int, int> fn_main();

static Arr<int> run_plus_scan(Arr<int> h1_xs) {
  const int t2_n = h1_xs.n;
  if (t2_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> t4_col = lc_alloc<int>(t2_n);
  if (t2_n > 0) lc_launch(lc_blocks(t2_n), &k_plus_scan_1, t2_n, t4_col, h1_xs);
  Arr<int> h5_inc = lc_alloc<int>(t2_n);
  lc_scan<R_iadd>(t4_col, h5_inc);
  const int t6_n = h1_xs.n;
  if (t6_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h10_res = lc_alloc<int>(t6_n);
  if (t6_n > 0) lc_launch(lc_blocks(t6_n), &k_plus_scan_2, t6_n, h10_res, h5_inc);
  return h10_res;
}

static Arr<int> run_max_scan(Arr<int> h1_xs) {
  const int t2_n = h1_xs.n;
  if (t2_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> t4_col = lc_alloc<int>(t2_n);
  if (t2_n > 0) lc_launch(lc_blocks(t2_n), &k_max_scan_1, t2_n, t4_col, h1_xs);
  Arr<int> h5_inc = lc_alloc<int>(t2_n);
  lc_scan<R_imax>(t4_col, h5_inc);
  const int t6_n = h1_xs.n;
  if (t6_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h10_res = lc_alloc<int>(t6_n);
  if (t6_n > 0) lc_launch(lc_blocks(t6_n), &k_max_scan_2, t6_n, h10_res, h5_inc);
  return h10_res;
}

static std::tuple<int, int> run_reductions(Arr<int> h1_xs) {
  const int t2_n = h1_xs.n;
  if (t2_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> t5_col = lc_alloc<int>(t2_n);
  Arr<int> t6_col = lc_alloc<int>(t2_n);
  if (t2_n > 0) lc_launch(lc_blocks(t2_n), &k_reductions_1, t2_n, t5_col, t6_col, h1_xs);
  const int h7_s = lc_reduce<R_iadd>(t5_col);
  const int h8_m = lc_reduce<R_imax>(t6_col);
  return std::make_tuple(h7_s, h8_m);
}

static std::tuple<Arr<int>, Arr<int>, int, int> fn_main() {
  return [&]() { auto v1_xs = lc_lit<int>(3, 1, 4, 1, 5, 9, 2, 6); return [&]() { auto v2_ps = run_plus_scan(v1_xs); return [&]() { auto v3_ms = run_max_scan(v1_xs); return [&]() { auto t = run_reductions(v1_xs); auto v4_s = std::get<0>(t); auto v5_m = std::get<1>(t); return std::make_tuple(v2_ps, v3_ms, v4_s, v5_m); }(); }(); }(); }();
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
