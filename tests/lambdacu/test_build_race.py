"""Jobs of one campaign that draw the same program build it at the same time (on the
H200, 12 jobs: one nvcc read another's half-written source, one job ran or renamed
another's half-written executable: internal errors and a garbled build error). Every
build now has a folder of its own and moves its executable into place at once."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from gpusem.compiler.lambdacu_cuda import driver

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "lambdacu" / "vcode_other.lcu"


def _build(cache: str) -> str:
    import os

    from gpusem.calculus.lambdacu.parser import parse_program
    from gpusem.calculus.source import read_source
    from gpusem.compiler.lambdacu_cuda.emit import compile_program

    os.environ["GPUSEM_CACHE_DIR"] = cache
    program = parse_program(read_source(str(EXAMPLE)), str(EXAMPLE))
    cuda = compile_program(program).source
    return str(driver.build(cuda, backend="cpu"))


def test_side_by_side_builds_of_one_program_all_succeed(tmp_path) -> None:
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        outs = pool.map(_build, [str(tmp_path)] * 4)
    assert all(not o.startswith("build error") for o in outs), outs
    (exe,) = set(outs)  # one cache entry, one executable
    folder = Path(exe).parent
    assert sorted(p.name for p in folder.iterdir()) == ["prog"]  # no build folder left
