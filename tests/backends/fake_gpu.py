"""The cuda backend on `fake_cupy/` (its "NVRTC" is a real NVRTC for sm_90a, nvcc -c where
none is installed; its "GPU" the cpu harness): one context manager for every test that needs a CudaBackend
without a GPU. Only the spawned worker imports the fake (spawn hands it the parent's
sys.path); the test process itself never does."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpusem.compiler.backends.cuda import CudaBackend

FAKE = Path(__file__).parent / "fake_cupy"


@contextmanager
def fake_gpu_backend(cache_dir: Path, **options: Any) -> Iterator[CudaBackend]:
    """A CudaBackend(**options) whose worker sees the fake CuPy, its build cache in
    `cache_dir`; sys.path and GPUSEM_CACHE_DIR restored after."""
    sys.path.insert(0, str(FAKE))
    saved = os.environ.get("GPUSEM_CACHE_DIR")
    os.environ["GPUSEM_CACHE_DIR"] = str(cache_dir)
    backend = CudaBackend(**options)
    try:
        yield backend
    finally:
        backend.close()
        sys.path.remove(str(FAKE))
        if saved is None:
            os.environ.pop("GPUSEM_CACHE_DIR")
        else:
            os.environ["GPUSEM_CACHE_DIR"] = saved
