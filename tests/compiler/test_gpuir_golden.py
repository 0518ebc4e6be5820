"""Generated CUDA for a few examples, pinned as golden files (STYLE 20): a refactor of
the compiler must leave them byte-identical. Refresh deliberately with
`GPUSEM_UPDATE_GOLDEN=1 python -m pytest tests/compiler/test_gpuir_golden.py`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gpusem.compiler.gpuir_cuda.cli import load
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden" / "gpuir"
PINNED = ("fence_broadcast", "producer_consumer", "gemv_shfl", "cp_async_pipeline")


@pytest.mark.parametrize("name", PINNED)
def test_generated_cuda_matches_golden(name):
    path = ROOT / "examples" / "gpuir" / f"{name}.gpuir"
    proc, env, source = load(str(path), {})
    text = compile_proc(proc, env, source=source, file=path.name).source
    golden = GOLDEN / f"{name}.cu"
    if os.environ.get("GPUSEM_UPDATE_GOLDEN") == "1" or not golden.exists():
        golden.write_text(text)
        if os.environ.get("GPUSEM_UPDATE_GOLDEN") != "1":
            pytest.fail(f"golden file {golden.name} was missing; written, re-run")
    assert text == golden.read_text(), f"{name}: generated CUDA changed"
