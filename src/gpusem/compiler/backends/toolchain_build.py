"""The host side of the toolchain matrix (`toolchain.py`): nvcc, ptxas and cuobjdump run
as subprocesses, one call per configuration for a whole batch of kernels.

A batch is the cuda backend's unit (`cpu_source.namespaced_unit(for_cpu=False)`: each
kernel in namespace `gs_k<i>`, `extern "C"` dropped), so a kernel's name in PTX and in a
cubin is its C++ mangled name. Every name is found in the PTX of the same unit: the
front end mangles, the optimisation level does not, and `_ZN<n>gs_k<i><m><name>E` is a
prefix only kernel i's entry has.

    ptx        nvcc -ptx for compute_90a: the NVVM PTX (the same front end and NVVM as
               nvcc -cubin, with the cuda backend's NVRTC options)
    nvcc-O3    nvcc -cubin for sm_90a, ptxas at -O3 (nvcc's default)
    nvcc-G     nvcc -cubin -G: device debug, no NVVM or ptxas optimisation
    ptxas-O0   the `ptx` text through `ptxas -O0` (the same PTX, SASS unoptimised)
    ptx-jit    the `ptx` text itself: the driver's JIT compiles it when it is loaded

Where to find the tools: $GPUSEM_NVCC (as `nvcc.py`), the PATH, then
/usr/local/cuda/bin and /usr/local/cuda-*/bin (a bare GPU machine often has CUDA
there and not on the PATH); ptxas and cuobjdump beside the nvcc found.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.cpu import HERE

# The cuda backend's NVRTC options (cuda_worker.NVRTC_OPTIONS), spelled for nvcc.
COMMON = ("-std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true",
          "--prec-sqrt=true", "-w", f"-I{HERE}")
HOST_CONFIGS = ("nvcc-O3", "nvcc-G", "ptxas-O0", "ptx-jit")
BUILD_TIMEOUT_S = 300.0
_ENTRY = re.compile(r"^\s*(?:\.visible\s+)?\.entry\s+([\w$]+)", re.MULTILINE)

Built = tuple[dict[int, str], bytes | None, dict[int, str]]  # errors, binary, lowered


def find_tool(name: str) -> str | None:
    """The path of `name` (nvcc, ptxas, cuobjdump), or None where it is not installed."""
    if name == "nvcc" and os.environ.get("GPUSEM_NVCC"):
        return shutil.which(os.environ["GPUSEM_NVCC"])
    nvcc = None if name == "nvcc" else find_tool("nvcc")
    places = [os.path.dirname(os.path.realpath(nvcc))] if nvcc else []
    places += ["/usr/local/cuda/bin", *sorted(glob.glob("/usr/local/cuda-*/bin"),
                                              reverse=True)]
    found = shutil.which(name)
    if found:
        return found
    for place in places:
        path = Path(place) / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def tool_version(name: str = "nvcc") -> str:
    path = find_tool(name)
    if path is None:
        return "absent"
    out = subprocess.run([path, "--version"], capture_output=True, text=True,
                         check=False).stdout.strip().splitlines()
    return out[-1] if out else "unknown"


def entry_prefix(index: int, name: str) -> str:
    """The start of the mangled name of `gs_k<index>::<name>` (Itanium C++ ABI)."""
    ns = f"gs_k{index}"
    return f"_ZN{len(ns)}{ns}{len(name)}{name}E"


def entry_names(ptx: str, items: list[tuple[int, str, str]]) -> dict[int, str]:
    """{index: the kernel's entry name} for the items whose entry the PTX has."""
    entries = _ENTRY.findall(ptx)
    out = {}
    for index, name, _ in items:
        prefix = entry_prefix(index, name)
        match = [e for e in entries if e.startswith(prefix)]
        if match:
            out[index] = match[0]
    return out


def _run(cmd: list[str], cwd: str) -> tuple[bool, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd,
                              timeout=BUILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False, f"{Path(cmd[0]).name} ran past {BUILD_TIMEOUT_S:.0f}s"
    return proc.returncode == 0, proc.stdout + proc.stderr


def _commands(config: str, nvcc: str, ptxas: str, cu: str, ptx: str,
              out: str) -> list[str] | None:
    """The command that makes `out` for `config` (None: the PTX itself is the binary)."""
    sm = "-arch=sm_90a"
    match config:
        case "ptx":
            return [nvcc, "-ptx", "-arch=compute_90a", *COMMON, cu, "-o", out]
        case "nvcc-O3":
            return [nvcc, "-cubin", sm, "-Xptxas", "-O3", *COMMON, cu, "-o", out]
        case "nvcc-G":
            return [nvcc, "-cubin", sm, "-G", *COMMON, cu, "-o", out]
        case "ptxas-O0":
            return [ptxas, sm, "-O0", ptx, "-o", out]
    return None


def build(config: str, items: list[tuple[int, str, str]]) -> Built:
    """Build (index, kernel name, source) items under `config` into one binary:
    ({index: error} for kernels that do not build, the binary or None, {index: entry
    name}). When the batch fails, each kernel is built alone and the ones that fail
    alone get their own message (as the NVRTC build in `cuda_worker` does)."""
    nvcc, ptxas = find_tool("nvcc"), find_tool("ptxas")
    if nvcc is None or (config == "ptxas-O0" and ptxas is None):
        why = f"unavailable: {'nvcc' if nvcc is None else 'ptxas'} not found"
        return {i: why for i, _, _ in items}, None, {}
    ok, binary, lowered, log = _build_unit(config, items, nvcc, ptxas or "ptxas")
    if ok:
        lost = {i: f"build error ({config}): no entry for kernel {name} in the PTX"
                for i, name, _ in items if i not in lowered}
        return lost, binary, lowered
    errors = {}
    for item in items:
        alone_ok, _, _, alone_log = _build_unit(config, [item], nvcc, ptxas or "")
        if not alone_ok:
            errors[item[0]] = f"build error ({config}): " + _trim(alone_log)
    rest = [it for it in items if it[0] not in errors]
    if not errors or not rest:
        why = f"build error ({config}): fails only when batched: " + _trim(log)
        return errors or {i: why for i, _, _ in items}, None, {}
    more, binary, lowered = build(config, rest)
    return errors | more, binary, lowered


def _build_unit(config: str, items: list[tuple[int, str, str]], nvcc: str,
                ptxas: str) -> tuple[bool, bytes | None, dict[int, str], str]:
    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, _, src in items], for_cpu=False)
    with tempfile.TemporaryDirectory(prefix="gpusem-tc-") as tmp:
        cu, ptx, out = (str(Path(tmp) / n) for n in ("batch.cu", "batch.ptx", "out"))
        Path(cu).write_text(unit)
        ok, ptx_text = _nvvm_ptx(unit, nvcc, cu, ptx, tmp)
        if not ok:
            return False, None, {}, ptx_text
        Path(ptx).write_text(ptx_text)
        lowered = entry_names(ptx_text, items)
        cmd = _commands(config, nvcc, ptxas, cu, ptx, out)
        if cmd is None:  # ptx-jit: the driver compiles the text at load time
            return True, ptx_text.encode() + b"\0", lowered, ""
        ok, log = _run(cmd, tmp)
        return ok, Path(out).read_bytes() if ok else None, lowered, log


_PTX: dict[str, tuple[bool, str]] = {}  # unit digest -> (built, PTX or nvcc's log)
PTX_CACHE_SIZE = 16


def _nvvm_ptx(unit: str, nvcc: str, cu: str, ptx: str, tmp: str) -> tuple[bool, str]:
    """(True, the unit's NVVM PTX) or (False, nvcc's log). Kept for the last few
    units: the host configurations of one batch share one unit, so nvcc -ptx runs
    once for the four of them."""
    key = hashlib.sha256(f"{nvcc}\0{unit}".encode()).hexdigest()
    if key not in _PTX:
        ok, log = _run(_commands("ptx", nvcc, "", cu, ptx, ptx) or [], tmp)
        if len(_PTX) >= PTX_CACHE_SIZE:
            _PTX.pop(next(iter(_PTX)))
        _PTX[key] = (ok, Path(ptx).read_text() if ok else log)
    return _PTX[key]


def ptx_of(items: list[tuple[int, str, str]]) -> tuple[str | None, str]:
    """(the NVVM PTX of the batch, or None; nvcc's log)."""
    nvcc = find_tool("nvcc")
    if nvcc is None:
        return None, "nvcc not found"
    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, _, src in items], for_cpu=False)
    with tempfile.TemporaryDirectory(prefix="gpusem-tc-") as tmp:
        cu, ptx = str(Path(tmp) / "batch.cu"), str(Path(tmp) / "batch.ptx")
        Path(cu).write_text(unit)
        ok, log = _run(_commands("ptx", nvcc, "", cu, ptx, ptx) or [], tmp)
        return (Path(ptx).read_text() if ok else None), log


def sass_memory_ops(binary: bytes, entry: str, limit: int = 40) -> str:
    """The global-memory instructions (LDG, STG, LD, ST, ATOM, RED) of one kernel's SASS
    (`cuobjdump -sass`), the evidence that two builds of one PTX differ; "" where
    cuobjdump is not installed or the binary is not a cubin."""
    tool = find_tool("cuobjdump")
    if tool is None or not binary.startswith(b"\x7fELF"):  # PTX (ptx-jit): no SASS
        return ""
    with tempfile.TemporaryDirectory(prefix="gpusem-sass-") as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(binary)
        ok, text = _run([tool, "-sass", "-fun", entry, str(path)], tmp)
    if not ok:
        return ""
    ops = [ln.strip() for ln in text.splitlines()
           if re.search(r"\b(LDG|STG|LD|ST|ATOM|ATOMG|RED)\b", ln)]
    return "\n".join(ops[:limit])


def strip_restrict(source: str) -> str:
    """The `no-restrict` variant: the source with every `__restrict__` removed (the
    only source change: it isolates NVVM's alias-based optimisation)."""
    return re.sub(r"\s*\b__restrict__\b", "", source)


def _trim(log: str, limit: int = 2000) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower()]
    return ("\n".join(lines) or log)[:limit]
