"""Golden CUDA of the lambda-cu compiler (STYLE 20): what `compile_program` emits for
a few examples, byte for byte. The test (test_cuda.py) never writes them; refreshing
is this explicit command, from the repository root:

    PYTHONPATH=src python -m tests.lambdacu.cuda_goldens --update
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).resolve().parent / "cuda_goldens"
EXAMPLES = ("nesl_dot_muladd", "vcode_scan_reduce", "vcode_permutations",
            "nesl_radix_step")


def emitted(name: str) -> str:
    from gpusem.calculus.lambdacu.parser import parse_program
    from gpusem.calculus.source import read_source
    from gpusem.compiler.lambdacu_cuda.emit import compile_program

    path = f"examples/lambdacu/{name}.lcu"
    return compile_program(parse_program(read_source(str(ROOT / path)), path)).source


def golden(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.cu"


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python -m tests.lambdacu.cuda_goldens --update")
    for n in EXAMPLES:
        golden(n).write_text(emitted(n))
        print(f"wrote {golden(n).relative_to(ROOT)}")
