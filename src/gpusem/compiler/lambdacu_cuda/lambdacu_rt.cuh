// lambdacu_rt.cuh: the runtime that lambda-cu programs compiled by gpusem call
// (compiler/lambdacu_cuda). One text for both backends: under nvcc the kernels launch
// on the GPU over managed memory; under g++ they run on the SIMT harness
// (gpusem_rt.cuh pulls it in), blocks one after another.
//
// Exactness (the interpreter's prims.py): ints wrap at 32 bits; `div`/`mod` truncate;
// every case C leaves undefined (zero divisor, INT_MIN / -1, shifts outside 0..31,
// f2i of NaN or out of range, chr outside ASCII, a subscript or PERMUTE index out of
// bounds, PERMUTE not 1:1, a negative size) is a trap, as the interpreter's. A trap in
// a kernel records the first code in an error flag the host reads after the launch; a
// trap in host code stops at once. Either way the program prints `trap <why>`.
#ifndef LAMBDACU_RT_CUH
#define LAMBDACU_RT_CUH

#include "gpusem_rt.cuh"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <utility>

#ifndef LC_BLOCK
#define LC_BLOCK 256
#endif
static_assert((LC_BLOCK & (LC_BLOCK - 1)) == 0 && LC_BLOCK <= 1024,
              "LC_BLOCK: a power of two up to 1024 (the tree reductions halve it)");

#if GS_CUDA
#define LC_HD __host__ __device__ __forceinline__
#define LC_HDM __host__ __device__ __forceinline__
#else
#define LC_HD static inline
#define LC_HDM inline
#endif

// ------------------------------------------------------------------------- traps
enum LcTrap {
  LC_OK, LC_DIV_ZERO, LC_DIV_OVERFLOW, LC_SHIFT, LC_F2I, LC_CHR, LC_SUBSCRIPT,
  LC_PERMUTE_BOUNDS, LC_PERMUTE_1TO1, LC_NEG_SIZE
};
static const char* const kLcTrap[] = {
  "ok", "division by zero", "division overflow", "shift out of range",
  "conversion out of range", "char out of range", "index out of bounds",
  "permute index out of bounds", "permute not 1:1", "negative size"};

#if GS_CUDA
__device__ int lc_err_dev;
#else
static int lc_err_dev;
static bool lc_in_kernel;
#endif

// Everything the program prints goes through lc_out, so that a standalone
// reproducer (LC_EXPECT defined: the interpreter's output) can compare it.
static char lc_buf[1 << 20];
static size_t lc_len_out, lc_main_at;
static void lc_out(const char* text) {
  size_t n = strlen(text);
  if (lc_len_out + n < sizeof lc_buf) {
    memcpy(lc_buf + lc_len_out, text, n);
    lc_len_out += n;
  }
  fputs(text, stdout);
}
[[noreturn]] static void lc_finish() {
#ifdef LC_EXPECT
  lc_buf[lc_len_out] = 0;
  const char* mine = lc_buf + lc_main_at;
  bool trapped = strncmp(mine, "trap ", 5) == 0;
  bool ok = strcmp(LC_EXPECT, "trap") == 0 ? trapped : strcmp(mine, LC_EXPECT) == 0;
  if (!ok) {
    printf("mismatch: the interpreter (--rules fixed) prints\n%s", LC_EXPECT);
    exit(1);
  }
  printf("agree: the output is the interpreter's\n");
#endif
  exit(0);
}

static void lc_host_trap(int code) {
  lc_main_at = lc_len_out;
  lc_out("trap ");
  lc_out(kLcTrap[code]);
  lc_out("\n");
  lc_finish();
}

LC_HD void lc_trap(int code) {
#if GS_CUDA
#ifdef __CUDA_ARCH__
  atomicCAS(&lc_err_dev, 0, code);
#else
  lc_host_trap(code);
#endif
#else
  if (!lc_in_kernel) lc_host_trap(code);
  if (lc_err_dev == 0) lc_err_dev = code;  // fibres never run in parallel
#endif
}

// ---------------------------------------------------------------------- values
template <class T> struct Arr {
  T* p;
  int n;
};

LC_HD float lc_f(unsigned bits) {
  union { unsigned u; float f; } x;
  x.u = bits;
  return x.f;
}
LC_HD unsigned lc_bits(float f) {
  union { unsigned u; float f; } x;
  x.f = f;
  return x.u;
}

template <class T> static Arr<T> lc_alloc(int n) {
  if (n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<T> a = {nullptr, n};
  if (n == 0) return a;
#if GS_CUDA
  if (cudaMallocManaged(&a.p, sizeof(T) * (size_t)n) != cudaSuccess) {
    printf("error cudaMallocManaged\n");
    exit(3);
  }
  memset(a.p, 0, sizeof(T) * (size_t)n);
#else
  a.p = (T*)calloc((size_t)n, sizeof(T));
#endif
  return a;
}

template <class T, class... V> static Arr<T> lc_lit(V... v) {
  const T items[] = {(T)v...};
  Arr<T> a = lc_alloc<T>((int)sizeof...(V));
  for (int i = 0; i < a.n; ++i) a.p[i] = items[i];
  return a;
}

template <class T> static Arr<T> lc_empty() { return Arr<T>{nullptr, 0}; }

template <class T> LC_HD T lc_at(Arr<T> a, int i) {
  if (i < 0 || i >= a.n) {
    lc_trap(LC_SUBSCRIPT);
    return T();
  }
  return a.p[i];
}

// ------------------------------------------------------------------- primitives
LC_HD int lc_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
LC_HD int lc_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
LC_HD int lc_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
LC_HD int lc_div(int a, int b) {
  if (b == 0) { lc_trap(LC_DIV_ZERO); return 0; }
  if (a == GS_INT_MIN && b == -1) { lc_trap(LC_DIV_OVERFLOW); return 0; }
  return a / b;
}
LC_HD int lc_mod(int a, int b) {
  if (b == 0) { lc_trap(LC_DIV_ZERO); return 0; }
  if (a == GS_INT_MIN && b == -1) { lc_trap(LC_DIV_OVERFLOW); return 0; }
  return a % b;
}
LC_HD int lc_min(int a, int b) { return a < b ? a : b; }
LC_HD int lc_max(int a, int b) { return a > b ? a : b; }
LC_HD int lc_and(int a, int b) { return a & b; }
LC_HD int lc_or(int a, int b) { return a | b; }
LC_HD int lc_xor(int a, int b) { return a ^ b; }
LC_HD int lc_shl(int a, int b) {
  if (b < 0 || b > 31) { lc_trap(LC_SHIFT); return 0; }
  return (int)((unsigned)a << b);
}
LC_HD int lc_shr(int a, int b) {
  if (b < 0 || b > 31) { lc_trap(LC_SHIFT); return 0; }
  return a >> b;
}
LC_HD int lc_neg(int a) { return (int)(0u - (unsigned)a); }
LC_HD int lc_abs(int a) { return a < 0 ? lc_neg(a) : a; }
LC_HD int lc_not(int a) { return ~a; }
LC_HD float lc_i2f(int a) { return (float)a; }  // round to nearest even, both sides

#ifdef __CUDA_ARCH__
LC_HD float lc_add(float a, float b) { return __fadd_rn(a, b); }
LC_HD float lc_sub(float a, float b) { return __fsub_rn(a, b); }
LC_HD float lc_mul(float a, float b) { return __fmul_rn(a, b); }
LC_HD float lc_div(float a, float b) { return __fdiv_rn(a, b); }
LC_HD float lc_sqrt(float a) { return __fsqrt_rn(a); }
#else
// Note: one rounding per operation (volatile keeps the host compiler from fusing or
// widening; the builds pass -ffp-contract=off as well).
LC_HD float lc_add(float a, float b) { volatile float r = a + b; return r; }
LC_HD float lc_sub(float a, float b) { volatile float r = a - b; return r; }
LC_HD float lc_mul(float a, float b) { volatile float r = a * b; return r; }
LC_HD float lc_div(float a, float b) { volatile float r = a / b; return r; }
LC_HD float lc_sqrt(float a) { return sqrtf(a); }
#endif
// fminf/fmaxf (a NaN operand loses) with -0.0 < +0.0, as the interpreter's
// prims.py: written out, since C leaves the sign of fminf(+0.0, -0.0) open and glibc
// (the first operand), x86's minss (the second) and the GPU's min.f32 each choose.
LC_HD float lc_min(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a == b) return (lc_bits(a) & 0x80000000u) ? a : b;
  return a < b ? a : b;
}
LC_HD float lc_max(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a == b) return (lc_bits(a) & 0x80000000u) ? b : a;
  return a > b ? a : b;
}
LC_HD float lc_neg(float a) { return lc_f(lc_bits(a) ^ 0x80000000u); }
LC_HD float lc_abs(float a) { return lc_f(lc_bits(a) & 0x7fffffffu); }
LC_HD float lc_exp(float a) { return expf(a); }
LC_HD float lc_log(float a) { return logf(a); }
LC_HD int lc_f2i(float a) {
  if (!(a >= -2147483648.0f && a < 2147483648.0f)) { lc_trap(LC_F2I); return 0; }
  return (int)a;
}

LC_HD bool lc_and(bool a, bool b) { return a && b; }
LC_HD bool lc_or(bool a, bool b) { return a || b; }
LC_HD bool lc_xor(bool a, bool b) { return a != b; }
LC_HD bool lc_not(bool a) { return !a; }
LC_HD int lc_ord(char c) { return (int)c; }
LC_HD char lc_chr(int a) {
  if (a < 0 || a > 127) { lc_trap(LC_CHR); return 0; }
  return (char)a;
}

#define LC_CMP(name, op)                                         \
  LC_HD bool lc_##name(int a, int b) { return a op b; }          \
  LC_HD bool lc_##name(float a, float b) { return a op b; }      \
  LC_HD bool lc_##name(char a, char b) { return a op b; }
LC_CMP(lt, <)
LC_CMP(le, <=)
LC_CMP(gt, >)
LC_CMP(ge, >=)
LC_CMP(eq, ==)
LC_CMP(ne, !=)
#undef LC_CMP
LC_HD bool lc_eq(bool a, bool b) { return a == b; }
LC_HD bool lc_ne(bool a, bool b) { return a != b; }

template <class T> LC_HD int lc_len(Arr<T> a) { return a.n; }

// ---------------------------------------------------------------------- launches
#if GS_CUDA
template <class... P, class... A>
static void lc_launch(int grid, void (*k)(P...), A... a) {
  k<<<grid, LC_BLOCK>>>(a...);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    printf("error launch: %s\n", cudaGetErrorString(e));
    exit(3);
  }
  int code = 0;
  cudaMemcpyFromSymbol(&code, lc_err_dev, sizeof code);
  if (code != 0) lc_host_trap(code);
}
#else
template <class... P> struct LcPack {
  void (*k)(P...);
  std::tuple<P...> a;
};
template <class... P> static void lc_call(void** av) {
  LcPack<P...>* pk = (LcPack<P...>*)av[0];
  std::apply(pk->k, pk->a);
}
static unsigned long long lc_seed;
template <class... P, class... A>
static void lc_launch(int grid, void (*k)(P...), A... a) {
  LcPack<P...> pk = {k, std::tuple<P...>(a...)};
  void* av[] = {&pk};
  ::gs::LaunchCfg cfg = {{(unsigned)grid, 1u, 1u}, {LC_BLOCK, 1u, 1u}, 0u, lc_seed,
                         50000000ull, 60.0, 64u * 1024u, 0xFFu};
  char msg[1024];
  lc_in_kernel = true;
#ifdef LC_PREBUILT_RUNTIME  // the cached cpu build links the runtime's object
  int st = ::gs_rt_launch(&cfg, &lc_call<P...>, av, msg, (int)sizeof msg);  // (prelude.py)
#else
  int st = ::gs::launch(&cfg, &lc_call<P...>, av, msg, (int)sizeof msg);
#endif
  lc_in_kernel = false;
  if (st != 0) {
    printf("error launch: %s\n", msg);
    exit(3);
  }
  if (lc_err_dev != 0) lc_host_trap(lc_err_dev);
}
#endif

static int lc_blocks(int n) { return n <= 0 ? 1 : (n + LC_BLOCK - 1) / LC_BLOCK; }

// ------------------------------------------------- folds (REDUCE and SCAN, 5.3)
// R: a reduction operator (T, id(), op(a, b)), emitted per program. Int and bool
// operators are associative, so a tree in shared memory computes the left fold;
// float ones are not, and fold in one thread in index order (the interpreter's R).
template <class R> __global__ void lc_reduce_block(Arr<typename R::T> in,
                                                   Arr<typename R::T> out) {
  typedef typename R::T T;
  __shared__ T buf[LC_BLOCK];
  int t = (int)threadIdx.x, i = (int)blockIdx.x * LC_BLOCK + t;
  buf[t] = i < in.n ? in.p[i] : R::id();
  __syncthreads();
  for (int s = LC_BLOCK / 2; s > 0; s /= 2) {
    if (t < s) buf[t] = R::op(buf[t], buf[t + s]);
    __syncthreads();
  }
  if (t == 0) out.p[blockIdx.x] = buf[0];
}

template <class R> __global__ void lc_reduce_seq(Arr<typename R::T> in,
                                                 Arr<typename R::T> out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  typename R::T acc = in.n > 0 ? in.p[0] : R::id();
  for (int i = 1; i < in.n; ++i) acc = R::op(acc, in.p[i]);
  out.p[0] = acc;
}

// Multi-pass: one partial per block, then the partials, until one block is left.
template <class R> static typename R::T lc_reduce(Arr<typename R::T> in) {
  typedef typename R::T T;
  if (!R::tree) {
    Arr<T> out = lc_alloc<T>(1);
    lc_launch(1, &lc_reduce_seq<R>, in, out);
    return out.p[0];
  }
  for (;;) {
    int g = lc_blocks(in.n);
    Arr<T> out = lc_alloc<T>(g);
    lc_launch(g, &lc_reduce_block<R>, in, out);
    if (g == 1) return out.p[0];
    in = out;
  }
}

template <class R> __global__ void lc_scan_block(Arr<typename R::T> in,
                                                 Arr<typename R::T> out,
                                                 Arr<typename R::T> sums) {
  typedef typename R::T T;
  __shared__ T buf[LC_BLOCK];
  int t = (int)threadIdx.x, i = (int)blockIdx.x * LC_BLOCK + t;
  buf[t] = i < in.n ? in.p[i] : R::id();
  __syncthreads();
  for (int d = 1; d < LC_BLOCK; d *= 2) {  // Hillis-Steele, inclusive
    T left = t >= d ? buf[t - d] : R::id();
    __syncthreads();
    if (t >= d) buf[t] = R::op(left, buf[t]);
    __syncthreads();
  }
  if (i < in.n) out.p[i] = buf[t];
  if (t == LC_BLOCK - 1) sums.p[blockIdx.x] = buf[t];
}

template <class R> __global__ void lc_scan_add(Arr<typename R::T> out,
                                               Arr<typename R::T> sums) {
  int i = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (blockIdx.x > 0 && i < out.n) out.p[i] = R::op(sums.p[blockIdx.x - 1], out.p[i]);
}

template <class R> __global__ void lc_scan_seq(Arr<typename R::T> in,
                                               Arr<typename R::T> out) {
  if (threadIdx.x != 0 || blockIdx.x != 0 || in.n == 0) return;
  typename R::T acc = in.p[0];
  out.p[0] = acc;
  for (int i = 1; i < in.n; ++i) out.p[i] = acc = R::op(acc, in.p[i]);
}

// Inclusive scan of `in` into `out` (same length): per block, then the block sums
// scanned (recursively) and added to the blocks after the first.
template <class R> static void lc_scan(Arr<typename R::T> in,
                                       Arr<typename R::T> out) {
  typedef typename R::T T;
  if (in.n == 0) return;
  if (!R::tree) {
    lc_launch(1, &lc_scan_seq<R>, in, out);
    return;
  }
  int g = lc_blocks(in.n);
  Arr<T> sums = lc_alloc<T>(g);
  lc_launch(g, &lc_scan_block<R>, in, out, sums);
  if (g == 1) return;
  Arr<T> scanned = lc_alloc<T>(g);
  lc_scan<R>(sums, scanned);
  lc_launch(g, &lc_scan_add<R>, out, scanned);
}

// Only under the seeded fault `scan-exclusive` (faults.py): VCODE's exclusive scan.
template <class R> __global__ void lc_shift(Arr<typename R::T> from,
                                            Arr<typename R::T> to) {
  int i = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (i < to.n) to.p[i] = i == 0 ? R::id() : from.p[i - 1];
}
template <class R> static void lc_exclusive(Arr<typename R::T> a) {
  typedef typename R::T T;
  if (a.n == 0) return;
  Arr<T> copy = lc_alloc<T>(a.n);
  memcpy(copy.p, a.p, sizeof(T) * (size_t)a.n);
  lc_launch(lc_blocks(a.n), &lc_shift<R>, copy, a);
}

// ---------------------------------------------------------------------- printing
// A machine-readable form the driver parses (floats as bits: exact, NaN payloads kept).
static void lc_show(int v) {
  char t[32];
  snprintf(t, sizeof t, " i%d", v);
  lc_out(t);
}
static void lc_show(float v) {
  char t[32];
  snprintf(t, sizeof t, " f%08x", lc_bits(v));
  lc_out(t);
}
static void lc_show(bool v) { lc_out(v ? " b1" : " b0"); }
static void lc_show(char v) {
  char t[32];
  snprintf(t, sizeof t, " c%d", (int)v);
  lc_out(t);
}
template <class T> static void lc_show(Arr<T> a) {
  char t[32];
  snprintf(t, sizeof t, " [%d", a.n);
  lc_out(t);
  for (int i = 0; i < a.n; ++i) lc_show(a.p[i]);
  lc_out(" ]");
}
template <class... T> static void lc_show(const std::tuple<T...>& t) {
  lc_out(" (");
  std::apply([](const T&... x) { (lc_show(x), ...); }, t);
  lc_out(" )");
}
template <class... T> static std::tuple<> lc_print(T... x) {
  lc_out("print");
  (lc_show(x), ...);
  lc_out("\n");
  return std::tuple<>();
}

#endif  // LAMBDACU_RT_CUH
