// NVRTC with -fdevice-time-trace: a second program of a process whose #line names a
// file an earlier traced program named (not its last one) crashes NVRTC (SIGABRT from
// std::length_error "basic_string::_M_create", or SIGSEGV). Found by gpusem
// (results/toolchain/FINDINGS.md, T4); NVRTC 12.9, 13.0 and 13.5.
//
// Build: nvcc -o t4 t4_min.cpp -lnvrtc
// Run:   ./t4 [MODE]   exit 0 when both programs compile; the crash kills it.
//   both      (default) both programs traced: the crash
//   first     only the first program traced
//   second    only the second program traced
//   last      the second program names b.cu (the first program's last #line file)
//   other     the second program names c.cu (a file the first never named)
#include <nvrtc.h>
#include <cstdio>
#include <cstring>

// Two #line directives, nothing else: the time trace records a.cu, then b.cu.
static const char* kFirst = "#line 1 \"a.cu\"\n#line 1 \"b.cu\"\n";

static nvrtcResult compile(const char* what, const char* src, const char* trace) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src, "p.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return NVRTC_ERROR_PROGRAM_CREATION_FAILURE;
  char option[128];
  std::snprintf(option, sizeof option, "-fdevice-time-trace=%s", trace ? trace : "");
  const char* options[] = {option};
  std::printf("%s (%s) ... ", what, trace ? option : "no trace");
  std::fflush(stdout);
  nvrtcResult r = nvrtcCompileProgram(prog, trace ? 1 : 0, options);
  std::printf("%s\n", nvrtcGetErrorString(r));
  std::fflush(stdout);
  nvrtcDestroyProgram(&prog);
  return r;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "both";
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::printf("NVRTC %d.%d, mode %s\n", major, minor, mode);
  bool first_traced = std::strcmp(mode, "second") != 0;
  bool second_traced = std::strcmp(mode, "first") != 0;
  const char* second = !std::strcmp(mode, "last")    ? "#line 1 \"b.cu\"\n"
                       : !std::strcmp(mode, "other") ? "#line 1 \"c.cu\"\n"
                                                     : "#line 1 \"a.cu\"\n";
  nvrtcResult r1 = compile("first program", kFirst, first_traced ? "t1.json" : nullptr);
  nvrtcResult r2 = compile("second program", second, second_traced ? "t2.json" : nullptr);
  bool ok = r1 == NVRTC_SUCCESS && r2 == NVRTC_SUCCESS;
  std::printf(ok ? "both programs compiled\n" : "a program was rejected\n");
  return ok ? 0 : 1;
}
