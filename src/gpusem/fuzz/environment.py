"""What a finding's bundle records about where it was found: tool versions and the
device (DESIGN.md, "Counterexample bundle")."""

from __future__ import annotations

import platform
import shutil
import subprocess


def tool_versions(backend: str) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for tool, line in (("nvcc", -1), ("g++", 0)):  # the line that names the version
        if shutil.which(tool):
            text = subprocess.run([tool, "--version"], capture_output=True,
                                  text=True).stdout
            out[tool] = text.strip().splitlines()[line][:80] if text else "?"
    try:  # the race analysis's verdict near its budget depends on z3's version (G1)
        from importlib.metadata import version

        out["z3"] = version("z3-solver")
    except Exception:  # noqa: BLE001 - versions are best effort
        pass
    if backend == "cuda":
        try:
            import cupy

            out["cupy"] = cupy.__version__
            out["driver"] = str(cupy.cuda.runtime.driverGetVersion())
        except Exception:  # noqa: BLE001 - versions are best effort
            pass
    return out


def device_name(backend: str) -> str:
    if backend != "cuda":
        return f"cpu SIMT harness ({platform.machine()})"
    try:
        import cupy

        return str(cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
    except Exception:  # noqa: BLE001
        return "cuda (unknown device)"
