"""lambda-cu -> one CUDA C++ program (seed 002, Sec 10), as a pipeline of passes:

  check    the well-formedness of typing_rules/lambdacu, and each SOAC
           application's component types (`Checked.elems`);
  fuse     Sec 8-9 (compiler/lambdacu_fusion, `fixed` rules), then check again: one
           `__global__` (or, for the folds and FILTER, one launch sequence) per fused
           kernel invocation;
  lower    each kernel to its host function and device kernels (soac.py), each
           function to a host function (host.py);
  text     the runtime include, the reduction operators used, the device kernels,
           the host code and `main`.

The program prints `main <value>` (and `print ..` lines, and `trap <why>` where the
interpreter traps) in the machine-readable form `driver.parse_output` reads. One text
builds with nvcc (`GS_CUDA`: managed memory, `<<<>>>`) and with g++ against the SIMT
harness (the cpu backend's semantics). `LC_BLOCK` (default 256) is the block size;
the fuzz target compiles with small blocks so that the multi-pass folds run.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusem.calculus.lambdacu import ast
from gpusem.compiler.lambdacu_cuda.faults import active_faults, fault_on
from gpusem.compiler.lambdacu_cuda.host import lower_function, main_text
from gpusem.compiler.lambdacu_cuda.soac import Lowered, lower_kernel, rop_struct

HEADER = "lambdacu_rt.cuh"


@dataclass(frozen=True)
class Compiled:
    source: str
    kernels: int  # __global__ functions emitted
    block: int


def check(p: ast.Program) -> tuple[ast.Program, dict[int, tuple[str, ...]]]:
    from gpusem.typing_rules.lambdacu.wellformed import check_program

    checked = check_program(p)  # IllTyped: the caller's exit 1
    return checked.program, checked.elems


class LoweringError(Exception):
    """The lowering met a program the checker would reject (only where a seeded fault
    skips the check): a crash of the compiler under test, not of gpusem."""


def fuse(p: ast.Program, ilp: str = "fixed") -> ast.Program:
    from gpusem.compiler.lambdacu_fusion.pipeline import fuse_program

    fused, _ = fuse_program(p, "fixed", ilp=ilp)
    return fused


def _fused_unchecked(p: ast.Program) -> tuple[ast.Program, dict[int, tuple[str, ...]]]:
    """The seeded fault `fusion-illegal`: the printed VFUSE-CLUSTER (F1), trusted."""
    from gpusem.typing_rules.lambdacu.wellformed import all_errors

    fused = fuse(p, ilp="paper")
    _, checked = all_errors(fused)
    return fused, checked.elems


def compile_program(p: ast.Program, *, fusion: bool = True,
                    block: int = 256) -> Compiled:
    program, elems = check(p)
    if fusion and fault_on("fusion-illegal"):
        program, elems = _fused_unchecked(program)
    elif fusion:
        program, elems = check(fuse(program))
    out = Lowered()
    try:
        kernels = [lower_kernel(k, elems, out) for k in program.kernels]
        functions = [lower_function(f) for f in program.functions]
    except (KeyError, AssertionError, ValueError) as err:
        if not active_faults():
            raise
        raise LoweringError(f"lowering failed: {type(err).__name__}: {err}") from None
    main = program.function("main")
    assert main is not None, "the checker requires main"
    faults = active_faults()
    parts = ["// lambda-cu program, emitted by gpusem (compiler/lambdacu_cuda)"
             + (f"; seeded faults: {', '.join(faults)}" if faults else "") + ".\n"
             f"#define LC_BLOCK {block}\n#include \"{HEADER}\"\n"]
    parts += [rop_struct(r) for r in sorted(out.rops)]
    parts += out.device
    parts.append("\n".join(proto for proto, _ in functions) + "\n")
    parts += kernels
    parts += [body for _, body in functions]
    parts.append(main_text(main))
    return Compiled("\n".join(parts), len(out.device), block)
