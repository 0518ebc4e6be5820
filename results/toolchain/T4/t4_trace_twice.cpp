// NVRTC: a second nvrtcCompileProgram with -fdevice-time-trace in one process crashes
// (found by gpusem on NVRTC 13.0; results/toolchain/FINDINGS.md, T4).
//
// Build: nvcc -o t4 t4_trace_twice.cpp -lnvrtc
// Run:   ./t4            two traced compiles of a one-line kernel, each with its own
//                        trace file; exit 0 when both compile, 1 when one is rejected,
//                        killed by a signal (SIGSEGV / SIGABRT) on the crash.
//        ./t4 plain      the first compile without the trace, the second with it
//        ./t4 same       both compiles write the same trace file
//        ./t4 one        one traced compile (to t4_trace.json), nothing else
#include <nvrtc.h>
#include <cstdio>
#include <cstring>

static const char* kKernel =
    "extern \"C\" __global__ void k(int* a) { a[threadIdx.x] = threadIdx.x; }\n";

static int compile(int call, const char* trace) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, kKernel, "k.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return 3;
  char option[256];
  std::snprintf(option, sizeof option, "-fdevice-time-trace=%s", trace);
  const char* options[] = {"--gpu-architecture=compute_90", option};
  int n = trace ? 2 : 1;
  std::printf("call %d: %s ... ", call, trace ? option : "(no trace)");
  std::fflush(stdout);
  nvrtcResult r = nvrtcCompileProgram(prog, n, options);
  std::printf("%s\n", nvrtcGetErrorString(r));
  if (r != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(prog, &size);
    static char log[1 << 16];
    if (size > 0 && size < sizeof log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
      std::printf("log: %s\n", log);
  }
  nvrtcDestroyProgram(&prog);
  return r == NVRTC_SUCCESS ? 0 : 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "two";
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::printf("NVRTC %d.%d, mode %s\n", major, minor, mode);
  int bad = 0;
  if (!std::strcmp(mode, "plain")) {
    bad |= compile(1, nullptr);
    bad |= compile(2, "t4_trace_2.json");
  } else if (!std::strcmp(mode, "one")) {
    bad |= compile(1, "t4_trace.json");
  } else if (!std::strcmp(mode, "same")) {
    bad |= compile(1, "t4_trace.json");
    bad |= compile(2, "t4_trace.json");
  } else {
    bad |= compile(1, "t4_trace_1.json");
    bad |= compile(2, "t4_trace_2.json");
  }
  std::printf(bad ? "a compile was rejected\n" : "both compiles succeeded\n");
  return bad;
}
