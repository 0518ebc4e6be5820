"""A one-kernel `.cu` (kernel `k`, before `int main`) to PTX with every installed NVRTC.

No GPU is needed: NVRTC emits PTX on any machine. Used for toolchain finding T1
(results/toolchain/T1/): the same kernel through NVRTC 11.8, 12.9 and 13.5 (the `nvrtc`
extra's wheels), through `compiler/backends/nvrtc_lib.py` (the cuda backend's options).

  python3 scripts/nvrtc_ptx.py FILE.cu OUT_DIR     (writes OUT_DIR/nvrtc_X.Y.ptx)
"""

import sys
from pathlib import Path

from gpusem.compiler.backends.nvrtc_lib import compile_ptx, find_nvrtc


def kernel_of(source: str) -> str:
    """The kernel alone, with C linkage (the driver loads it by the name `k`)."""
    kernel = source[: source.index("int main")].replace("#include <cstdio>", "")
    return kernel.replace("__global__ void k", 'extern "C" __global__ void k')


if __name__ == "__main__":
    path, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    for nvrtc in find_nvrtc():
        answer = compile_ptx(nvrtc, kernel_of(path.read_text()), path.name)
        if answer.ptx is None:
            raise SystemExit(f"{nvrtc.label} could not compile it: {answer.log}")
        out = out_dir / f"nvrtc_{nvrtc.version[0]}.{nvrtc.version[1]}.ptx"
        out.write_text(answer.ptx)
        print(f"{nvrtc.label} {nvrtc.arch} -> {out}")
