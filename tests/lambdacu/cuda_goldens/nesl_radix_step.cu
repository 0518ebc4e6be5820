// lambda-cu program, emitted by gpusem (compiler/lambdacu_cuda).
#define LC_BLOCK 256
#include "lambdacu_rt.cuh"

struct R_iadd {
  typedef int T;
  static constexpr bool tree = true;
  static LC_HDM int id() { return 0; }
  static LC_HDM int op(int a, int b) { return lc_add(a, b); }
};

__global__ void k_split_scan_1(int n, Arr<int> h7_bits, Arr<int> h1_keys, int h2_b) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r0_0;
  const int g4_i = gid;
  int g5_k;
  g5_k = lc_at(h1_keys, g4_i);
  int g6_s;
  g6_s = lc_shr(g5_k, h2_b);
  r0_0 = lc_and(g6_s, 1);
  h7_bits.p[gid] = r0_0;
}

__global__ void k_split_scan_2(int n, Arr<int> t12_col, Arr<int> h7_bits) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  const int g9_i = gid;
  int g10_t;
  g10_t = lc_at(h7_bits, g9_i);
  bool g11_z;
  g11_z = lc_eq(g10_t, 0);
  if (g11_z) {
    r_0 = 1;
  } else {
    r_0 = 0;
  }
  t12_col.p[gid] = r_0;
}

__global__ void k_split_scan_3(int n, Arr<int> t18_col, Arr<int> h7_bits) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  const int g15_i = gid;
  int g16_t;
  g16_t = lc_at(h7_bits, g15_i);
  bool g17_z;
  g17_z = lc_eq(g16_t, 0);
  if (g17_z) {
    r_0 = 1;
  } else {
    r_0 = 0;
  }
  t18_col.p[gid] = r_0;
}

__global__ void k_split_scan_4(int n, Arr<int> claim, Arr<int> h27_res, Arr<int> h1_keys, Arr<int> h7_bits, Arr<int> h13_zs, int h19_nz) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  const int g21_i = gid;
  r_0 = lc_at(h1_keys, g21_i);
  int d;
  const int g22_i = gid;
  int g23_t;
  g23_t = lc_at(h7_bits, g22_i);
  int g24_c;
  g24_c = lc_at(h13_zs, g22_i);
  bool g25_z;
  g25_z = lc_eq(g23_t, 0);
  if (g25_z) {
    d = lc_sub(g24_c, 1);
  } else {
    int g26_o;
    g26_o = lc_sub(g22_i, g24_c);
    d = lc_add(h19_nz, g26_o);
  }
  if (d < 0 || d >= n) { lc_trap(LC_PERMUTE_BOUNDS); return; }
  if (atomicExch(&claim.p[d], 1) != 0) { lc_trap(LC_PERMUTE_1TO1); return; }
  h27_res.p[d] = r_0;
}

__global__ void k_split_partition_1(int n, Arr<int> t5_col, Arr<int> t6_keep, Arr<int> h1_keys, int h2_b) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  const int g4_i = gid;
  r_0 = lc_at(h1_keys, g4_i);
  t5_col.p[gid] = r_0;
  bool p;
  const int g7_k = r_0;
  int g8_s;
  g8_s = lc_shr(g7_k, h2_b);
  int g9_t;
  g9_t = lc_and(g8_s, 1);
  p = lc_eq(g9_t, 0);
  t6_keep.p[gid] = p ? 1 : 0;
}

__global__ void k_split_partition_2(int n, int count, Arr<int> keep, Arr<int> u, Arr<int> col0, Arr<int> out0, Arr<int> false0) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  if (keep.p[gid]) {
    const int to = u.p[gid] - 1;
    if (to < 0 || to >= count) return;
    out0.p[to] = col0.p[gid];
  } else {
    false0.p[gid - u.p[gid]] = col0.p[gid];
  }
}

__global__ void k_split_partition_3(int n, Arr<int> h19_res, Arr<int> h12_zs, Arr<int> h13_os) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r0_0;
  const int g15_i = gid;
  int g16_nz;
  g16_nz = lc_len(h12_zs);
  bool g17_low;
  g17_low = lc_lt(g15_i, g16_nz);
  if (g17_low) {
    r0_0 = lc_at(h12_zs, g15_i);
  } else {
    int g18_j;
    g18_j = lc_sub(g15_i, g16_nz);
    r0_0 = lc_at(h13_os, g18_j);
  }
  h19_res.p[gid] = r0_0;
}

static std::tuple<Arr<int>, Arr<int>, Arr<int>> fn_main();

static Arr<int> run_split_scan(Arr<int> h1_keys, int h2_b) {
  const int t3_n = h1_keys.n;
  if (t3_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h7_bits = lc_alloc<int>(t3_n);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_split_scan_1, t3_n, h7_bits, h1_keys, h2_b);
  const int t8_n = h7_bits.n;
  if (t8_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> t12_col = lc_alloc<int>(t8_n);
  if (t8_n > 0) lc_launch(lc_blocks(t8_n), &k_split_scan_2, t8_n, t12_col, h7_bits);
  Arr<int> h13_zs = lc_alloc<int>(t8_n);
  lc_scan<R_iadd>(t12_col, h13_zs);
  const int t14_n = h7_bits.n;
  if (t14_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> t18_col = lc_alloc<int>(t14_n);
  if (t14_n > 0) lc_launch(lc_blocks(t14_n), &k_split_scan_3, t14_n, t18_col, h7_bits);
  const int h19_nz = lc_reduce<R_iadd>(t18_col);
  const int t20_n = h1_keys.n;
  if (t20_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h27_res = lc_alloc<int>(t20_n);
  Arr<int> t28_claim = lc_alloc<int>(t20_n);
  if (t20_n > 0) lc_launch(lc_blocks(t20_n), &k_split_scan_4, t20_n, t28_claim, h27_res, h1_keys, h7_bits, h13_zs, h19_nz);
  return h27_res;
}

static Arr<int> run_split_partition(Arr<int> h1_keys, int h2_b) {
  const int t3_n = h1_keys.n;
  if (t3_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> t5_col = lc_alloc<int>(t3_n);
  Arr<int> t6_keep = lc_alloc<int>(t3_n);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_split_partition_1, t3_n, t5_col, t6_keep, h1_keys, h2_b);
  Arr<int> t10_u = lc_alloc<int>(t3_n);
  lc_scan<R_iadd>(t6_keep, t10_u);
  const int t11_count = t3_n > 0 ? t10_u.p[t3_n - 1] : 0;
  Arr<int> h12_zs = lc_alloc<int>(t11_count);
  Arr<int> h13_os = lc_alloc<int>(t3_n - t11_count);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_split_partition_2, t3_n, t11_count, t6_keep, t10_u, t5_col, h12_zs, h13_os);
  const int t14_n = h1_keys.n;
  if (t14_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> h19_res = lc_alloc<int>(t14_n);
  if (t14_n > 0) lc_launch(lc_blocks(t14_n), &k_split_partition_3, t14_n, h19_res, h12_zs, h13_os);
  return h19_res;
}

static std::tuple<Arr<int>, Arr<int>, Arr<int>> fn_main() {
  return [&]() { auto v1_keys = lc_lit<int>(5, 2, 7, 0, 3, 6); return [&]() { auto v2_a = run_split_scan(v1_keys, 0); return [&]() { auto v3_b = run_split_partition(v1_keys, 0); return [&]() { auto v4_c = run_split_scan(v2_a, 1); return std::make_tuple(v2_a, v3_b, v4_c); }(); }(); }(); }();
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
