"""Build and run Exo-GPU's emitted CUDA (issue 16, item 4): the `.h/.c/.cuh/.cu` files
of one `ext_compile_procs` over a batch of procs, plus a generated `main.cu` that runs
each proc on inputs read from files and writes every data parameter back.

Exo's C entry is `void proc(void *ctxt, int_fast32_t size..., T *ptr...)`: size
arguments by value, a `@ CudaGmemLinear` tensor as a *device* pointer, a `@ DRAM`
tensor as a host pointer; the host function launches on stream 0 and returns without
synchronising (REPORT.md 2). So the main allocates device copies of the GMEM
parameters, copies the inputs in, calls the entry, synchronises, checks for errors,
and copies every parameter out.

Build: nvcc for sm_90a (`-gencode arch=compute_90a,code=sm_90a`, as
compiler/backends/nvcc.py), `--fmad=false` (the sequential reading rounds every
multiply and add: an FMA contraction would be a difference of ours, not of Exo's),
C++20 and relaxed constexpr as Exo's own tests build. A batch whose host code encodes
TMA tensor maps (`cuTensorMapEncodeTiled`, a CUDA *driver* function) gets it from
`DRIVER_SHIM`, found at run time through the runtime's entry-point query: the
toolkits here and on the H200 have no `libcuda.so` to link (`-lcuda`) against.

Run (backend `cuda`): one process runs the cases in order and prints `done i` after
each; a case that does not finish in `timeout` seconds is a hang: the process is
killed (a hung kernel dies with its context) and a fresh one resumes at the next case.
Backend `cpu` only builds (no GPU here).
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import eval_c

NVCC = os.environ.get("GPUSEM_NVCC", "nvcc")
FLAGS = ("-gencode", "arch=compute_90a,code=sm_90a", "-std=c++20",
         "--expt-relaxed-constexpr", "--fmad=false", "-O3", "-w")
CTYPES = {A.DataType.F32: "float", A.DataType.F64: "double", A.DataType.I32: "int32_t",
          A.DataType.I8: "int8_t", A.DataType.UI8: "uint8_t",
          A.DataType.UI16: "uint16_t", A.DataType.F16: "__half"}
NPTYPES = {A.DataType.F32: np.float32, A.DataType.F64: np.float64,
           A.DataType.I32: np.int32, A.DataType.I8: np.int8, A.DataType.UI8: np.uint8,
           A.DataType.UI16: np.uint16, A.DataType.F16: np.float16}


@dataclass
class HarnessCase:
    """One kernel of a batch: the entry's name in Exo's header, its GPU IR proc (for
    the parameters), the sizes and the inputs (every data parameter)."""

    entry: str
    proc: A.Proc
    defines: dict[str, int]
    inputs: dict[str, np.ndarray]

    def shapes(self) -> list[tuple[A.DataParam, tuple[int, ...]]]:
        return [(p, tuple(int(eval_c(c, self.defines)) for c in p.shape))
                for p in self.proc.data_params]


@dataclass
class CaseRun:
    status: str                      # ok | error | hang | crash | not-run
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    detail: str = ""


@dataclass
class Build:
    ok: bool
    dir: Path
    log: str = ""
    exe: Path | None = None


# cuTensorMapEncodeTiled without linking libcuda: the runtime (linked statically by
# nvcc) finds the driver's function by name (CUDA >= 12.5).
DRIVER_SHIM = """\
#include <cuda.h>
extern "C" CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* m,
    CUtensorMapDataType t, cuuint32_t rank, void* addr, const cuuint64_t* dims,
    const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* estrides,
    CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
    CUtensorMapFloatOOBfill oob) {
  typedef CUresult (*Fn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
      const cuuint64_t*, const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
      CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
      CUtensorMapFloatOOBfill);
  static Fn fn = nullptr;
  if (!fn) {
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&fn,
            12000, cudaEnableDefault, &q) != cudaSuccess || !fn)
      return CUDA_ERROR_NOT_FOUND;
  }
  return fn(m, t, rank, addr, dims, strides, box, estrides, il, sw, l2, oob);
}
"""


def main_source(cases: list[HarnessCase], header: str) -> str:
    """The generated main: `runner DIR FIRST` runs cases FIRST.. of the batch."""
    out = [f'#include "{header}"', "#include <cstdio>", "#include <cstdlib>",
           "#include <cstdint>", "#include <cuda_runtime.h>", "",
           "static bool rd(const char* d, const char* f, int i, void* p, size_t n) {",
           "  char path[4096]; snprintf(path, sizeof path, \"%s/%s%d.bin\", d, f, i);",
           "  FILE* fp = fopen(path, \"rb\"); if (!fp) return false;",
           "  size_t got = fread(p, 1, n, fp); fclose(fp); return got == n; }",
           "static bool wr(const char* d, const char* f, int i, const void* p, size_t n) {",
           "  char path[4096]; snprintf(path, sizeof path, \"%s/%s%d.bin\", d, f, i);",
           "  FILE* fp = fopen(path, \"wb\"); if (!fp) return false;",
           "  size_t put = fwrite(p, 1, n, fp); fclose(fp); return put == n; }",
           "#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { "
           "printf(\"error %d %s\\n\", idx, cudaGetErrorString(e)); fflush(stdout); "
           "return 1; } } while (0)", ""]
    for i, c in enumerate(cases):
        out += _case_fn(i, c)
    out += ["typedef int (*case_fn)(const char*);",
            f"static case_fn cases[] = {{{', '.join(f'case{i}' for i in range(len(cases)))}}};",
            "int main(int argc, char** argv) {",
            "  if (argc < 3) return 2;",
            "  int first = atoi(argv[2]);",
            f"  for (int i = first; i < {len(cases)}; i++) {{",
            "    printf(\"start %d\\n\", i); fflush(stdout);",
            "    int rc = cases[i](argv[1]);",
            "    printf(\"done %d %d\\n\", i, rc); fflush(stdout);",
            "  }",
            "  return 0;", "}", ""]
    return "\n".join(out)


def _case_fn(i: int, c: HarnessCase) -> list[str]:
    lines = [f"static int case{i}(const char* dir) {{", f"  const int idx = {i};"]
    args: dict[str, str] = {p.name: str(c.defines[p.name])
                            for p in c.proc.ctrl_params}
    gmem: list[str] = []
    k = 0
    for p, shape in c.shapes():
        n = int(np.prod(shape)) if shape else 1
        ty = CTYPES[p.dtype]
        lines.append(f"  {ty}* h{k} = ({ty}*)calloc({max(n, 1)}, sizeof({ty}));")
        lines.append(f"  if (!rd(dir, \"in{k}_\", idx, h{k}, {n} * sizeof({ty}))) "
                     "{ printf(\"error %d input\\n\", idx); return 1; }")
        if p.mem.name == "DRAM":
            args[p.name] = f"h{k}"
        else:
            lines.append(f"  {ty}* d{k} = nullptr; CK(cudaMalloc(&d{k}, "
                         f"{max(n, 1)} * sizeof({ty})));")
            lines.append(f"  CK(cudaMemcpy(d{k}, h{k}, {n} * sizeof({ty}), "
                         "cudaMemcpyHostToDevice));")
            args[p.name] = f"d{k}"
            gmem.append(f"{k}:{n}:{ty}")
        k += 1
    ordered = [args[p.name] for p in c.proc.params]  # the entry's parameter order
    lines.append(f"  {c.entry}(nullptr{''.join(', ' + a for a in ordered)});")
    lines += ["  CK(cudaGetLastError());", "  CK(cudaDeviceSynchronize());"]
    for g in gmem:
        gj, gn, gty = g.split(":")
        lines.append(f"  CK(cudaMemcpy(h{gj}, d{gj}, {gn} * sizeof({gty}), "
                     f"cudaMemcpyDeviceToHost)); CK(cudaFree(d{gj}));")
    for j, (q, qshape) in enumerate(c.shapes()):
        m = int(np.prod(qshape)) if qshape else 1
        lines.append(f"  wr(dir, \"out{j}_\", idx, h{j}, {m} * sizeof({CTYPES[q.dtype]}));"
                     f" free(h{j});")
    return lines + ["  return 0;", "}", ""]


def nvcc_available() -> bool:
    return shutil.which(NVCC) is not None


class Harness:
    """Builds batches (both backends) and runs them (backend `cuda`)."""

    def __init__(self, backend: str = "cpu", timeout: float = 20.0):
        self.backend = backend
        self.timeout = timeout
        self.root = Path(tempfile.mkdtemp(prefix="gpusem-exo-harness-"))
        self.count = 0

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def build(self, cases: list[HarnessCase], code: dict[str, str],
              stem: str = "batch") -> Build:
        self.count += 1
        d = self.root / f"b{self.count}"
        d.mkdir()
        for ext, text in code.items():
            (d / f"{stem}.{ext}").write_text(text)
        main = main_source(cases, f"{stem}.h")
        if any("cuTensorMapEncodeTiled" in t for t in code.values()):
            main += "\n" + DRIVER_SHIM
        (d / "main.cu").write_text(main)
        exe = d / "runner"
        link = self.backend == "cuda"
        cmd = [NVCC, *FLAGS, f"{stem}.c", f"{stem}.cu", "main.cu"]
        cmd += ["-o", str(exe)] if link else ["-c"]
        if not nvcc_available():
            return Build(False, d, f"{NVCC} not found")
        proc = subprocess.run(cmd, cwd=d, capture_output=True, text=True, check=False)
        ok = proc.returncode == 0
        return Build(ok, d, (proc.stdout + proc.stderr)[-6000:], exe if ok and link
                     else None)

    def write_inputs(self, build: Build, cases: list[HarnessCase]) -> None:
        for i, c in enumerate(cases):
            for k, (p, shape) in enumerate(c.shapes()):
                a = np.ascontiguousarray(c.inputs[p.name], dtype=NPTYPES[p.dtype])
                assert a.size == (int(np.prod(shape)) if shape else 1)
                (build.dir / f"in{k}_{i}.bin").write_bytes(a.tobytes())

    def run(self, build: Build, cases: list[HarnessCase]) -> list[CaseRun]:
        """Run every case of a built batch; hangs and crashes cost one case each."""
        if build.exe is None:
            return [CaseRun("not-run", detail="not built for running")] * len(cases)
        self.write_inputs(build, cases)
        results: list[CaseRun | None] = [None] * len(cases)
        first = 0
        while first < len(cases):
            first = self._run_from(build, cases, first, results)
        return [r or CaseRun("not-run") for r in results]

    def _run_from(self, build: Build, cases: list[HarnessCase], first: int,
                  results: list) -> int:
        assert build.exe is not None
        proc = subprocess.Popen([str(build.exe), str(build.dir), str(first)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current, errors = first, ""
        try:
            while True:
                if not sel.select(self.timeout):
                    proc.kill()
                    proc.wait()
                    results[current] = CaseRun("hang", detail=f"no progress in "
                                               f"{self.timeout:g}s")
                    return current + 1
                line = proc.stdout.readline()
                if not line:
                    code = proc.wait()
                    if current < len(cases) and results[current] is None:
                        results[current] = CaseRun("crash", detail=f"runner exited "
                                                   f"({code}): {errors[-500:]}")
                    return current + 1
                parts = line.split()
                if parts[:1] == ["start"]:
                    current, errors = int(parts[1]), ""
                elif parts[:1] == ["error"]:
                    errors += line
                elif parts[:1] == ["done"]:
                    i = int(parts[1])
                    results[i] = (CaseRun("error", detail=errors.strip()) if errors
                                  else CaseRun("ok", self._outputs(build, cases[i], i)))
                    if i == len(cases) - 1:
                        proc.wait()
                        return len(cases)
        finally:
            sel.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def _outputs(self, build: Build, c: HarnessCase, i: int) -> dict[str, np.ndarray]:
        out = {}
        for k, (p, shape) in enumerate(c.shapes()):
            raw = (build.dir / f"out{k}_{i}.bin").read_bytes()
            out[p.name] = np.frombuffer(raw, dtype=NPTYPES[p.dtype]).reshape(shape).copy()
        return out
