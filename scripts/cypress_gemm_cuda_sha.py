"""Issue 30: the sha256 of the CUDA that scripts/cypress_gemm_gpu.py launches for each
named Fig. 5 mapping at each N, from the tree ROOT's compiler and bench (this
checkout, or an older one unpacked with `git archive COMMIT src scripts examples`),
to show that a switch reproduces an older commit's kernels byte for byte
(results/cypress/gemm_speed.md, cyknob).

    PYTHONPATH=ROOT/src python scripts/cypress_gemm_cuda_sha.py [--root ROOT]
        [--names fig5-hopper-fused,..] [--sizes 256,2048,4096]

One JSON line a (N, name): n, name, sha256 of the proc's CUDA (every kernel, as
compile_proc emits it). Names are ROOT's bench's: a variant, a mapping, NAME-fused,
and, where ROOT's bench has them, NAME-fused-[no]grouped-[no]acopy. Import gpusem
from ROOT (PYTHONPATH): the script loads ROOT's bench, which imports it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def dma_of(m) -> tuple[int, ...]:
    """`lower`'s dma_warps where `m` asks for more than one (older benches have
    neither the field nor the argument)."""
    w = getattr(m, "dma_warps", 1)
    return (w,) if w != 1 else ()


def bench(root: Path):
    path = root / "scripts" / "cypress_gemm_gpu.py"
    spec = importlib.util.spec_from_file_location("cypress_gemm_gpu", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def mapping(mod, name: str):
    """The bench's run for `name` (older benches have no `named`: their names are
    VARIANTS, MAPPINGS and NAME-fused)."""
    if hasattr(mod, "named"):
        return mod.named(name)
    known = {**mod.VARIANTS, **mod.MAPPINGS}
    return (known | mod.fused_runs(known, "all"))[name]


def cuda(mod, n: int, m) -> str:
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc

    _, _, _, gpuir = mod.lower(mod.render(n, m), m.form, *dma_of(m))
    proc = parse_module(gpuir, "fig5_gemm.gpuir").procs[-1]
    nest = {"fused": mod.nest_of(m)} if hasattr(mod, "nest_of") else {}
    if getattr(m, "setmaxnreg", False):  # NAME-regs (cyreg)
        nest["setmaxnreg"] = True
    return compile_proc(proc, {"M": n, "N": n, "K": n}, source=gpuir,
                        file="fig5_gemm.gpuir", **nest).source


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(HERE))
    ap.add_argument("--names", default="fig5-hopper-fused,u128-hopper-fused,"
                                       "u64-v64-wgs1-p4-fused")
    ap.add_argument("--sizes", default="256,2048,4096")
    args = ap.parse_args(argv)
    mod = bench(Path(args.root))
    for n in (int(s) for s in args.sizes.split(",")):
        for name in args.names.split(","):
            text = cuda(mod, n, mapping(mod, name))
            print(json.dumps({"n": n, "name": name, "sha256": hashlib.sha256(
                text.encode()).hexdigest()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
