"""The cuda backend's preflight names the modules its worker really imports. Stop 31:
it named `cupy.cuda.nvrtc`, which CuPy 14 does not have (the worker imports NVRTC from
`cupy_backends.cuda.libs`), so every cuda campaign on the H200s stopped at exit 2."""

from __future__ import annotations

import ast
import inspect

from gpusem.compiler.backends import cuda_worker
from gpusem.fuzz.targets import CUDA_RUNTIME


def imported_cupy_modules(module) -> set[str]:
    """Every `cupy*` module `module` imports, `from A import b` read as `A.b`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        match node:
            case ast.ImportFrom(module=str(base), names=aliases) if base.startswith(
                    "cupy"):
                names |= {f"{base}.{a.name}" for a in aliases}
            case ast.Import(names=aliases):
                names |= {a.name for a in aliases if a.name.startswith("cupy")}
    return names


def test_every_cupy_module_the_cuda_worker_imports_is_preflighted() -> None:
    required = {r.module for r in CUDA_RUNTIME}
    imported = imported_cupy_modules(cuda_worker)
    assert "cupy_backends.cuda.libs.nvrtc" in imported  # the check reaches NVRTC
    # CuPy's own modules come with `cupy` (required); cupy_backends' are separate
    missing = {m for m in imported if m not in required and m.split(".")[0] != "cupy"}
    assert not missing, missing
    smokes = {r.smoke.rpartition(".")[0] for r in CUDA_RUNTIME if r.smoke}
    assert smokes <= required | {"cupy.cuda.runtime"}
