"""Choosing a backend by name: `cpu` (g++ + the SIMT harness) or `cuda` (CuPy/NVRTC on
a GPU). Kept apart from `kernel` (the data every backend shares) so that the backends
import `kernel` and nothing imports them back."""

from __future__ import annotations

import functools

from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends.kernel import Backend


def get_backend(name: str, **options: object) -> Backend:
    """`cpu` (g++ + the SIMT harness) or `cuda` (CuPy / NVRTC; imported lazily)."""
    if name == "cpu":
        from gpusem.compiler.backends.cpu import CpuBackend

        return CpuBackend(**options)  # type: ignore[arg-type]
    if name == "cuda":
        from gpusem.compiler.backends.cuda import CudaBackend

        return CudaBackend(**options)  # type: ignore[arg-type]
    raise BadInput(f"unknown backend: {name} (expected cpu or cuda)")


@functools.cache
def shared_backend(name: str) -> Backend:
    """One backend per process and name, reused by every batch: its worker (a forked
    harness process, or the spawned CUDA worker, whose context costs seconds to
    start and hundreds of MB of GPU and host memory) starts once per process, not
    once per batch (issue 31.5: the GPU IR target started a CUDA worker for every
    batch, on every Dask worker)."""
    return get_backend(name)
