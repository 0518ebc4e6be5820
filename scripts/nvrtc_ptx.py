"""Compile a one-kernel `.cu` (kernel `k`, before `int main`) to PTX with one libnvrtc.

No GPU is needed: NVRTC emits PTX on any machine. Used for toolchain finding T1
(results/toolchain/T1/): the same kernel through NVRTC 11.8, 12.9 and 13.5 (the
`nvidia-cuda-nvrtc*` wheels), with the cuda backend's `--fmad=false -std=c++17`.

  python3 scripts/nvrtc_ptx.py LIBNVRTC FILE.cu ARCH OUT.ptx
  (ARCH: compute_90a, or compute_90 for NVRTC 11.8, which has no sm_90a)
"""

import ctypes
import sys


def compile_to_ptx(lib: str, source: str, arch: str) -> tuple[str, str]:
    nv = ctypes.CDLL(lib)
    kernel = source[: source.index("int main")].replace("#include <cstdio>", "")
    kernel = kernel.replace("__global__ void k", 'extern "C" __global__ void k')
    prog = ctypes.c_void_p()
    if nv.nvrtcCreateProgram(ctypes.byref(prog), kernel.encode(), b"t.cu", 0, None, None):
        raise SystemExit("nvrtcCreateProgram failed")
    opts = [f"--gpu-architecture={arch}".encode(), b"--fmad=false", b"-std=c++17"]
    rc = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nv.nvrtcGetProgramLog(prog, log)
    if rc:
        raise SystemExit(f"NVRTC could not compile it: {log.value.decode()}")
    major, minor = ctypes.c_int(), ctypes.c_int()
    nv.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    nv.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    nv.nvrtcGetPTX(prog, ptx)
    return f"{major.value}.{minor.value}", ptx.value.decode()


if __name__ == "__main__":
    lib, path, arch, out = sys.argv[1:5]
    version, ptx = compile_to_ptx(lib, open(path).read(), arch)
    open(out, "w").write(ptx)
    print(f"nvrtc {version} {arch} -> {out}")
