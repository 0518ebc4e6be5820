"""The host side of the toolchain matrix (`toolchain.py`): nvcc, ptxas and cuobjdump run
as subprocesses, one call per configuration for a whole batch of kernels.

A batch is the cuda backend's unit (`cpu_source.namespaced_unit(for_cpu=False)`: each
kernel in namespace `gs_k<i>`, `extern "C"` dropped), so a kernel's name in PTX and in a
cubin is its C++ mangled name. Every name is found in the PTX of the same unit: the
front end mangles, the optimisation level does not, and `_ZN<n>gs_k<i><m><name>E` is a
prefix only kernel i's entry has.

    nvcc-O3    nvcc -cubin for sm_90a, ptxas at -O3 (nvcc's default), with `--keep`:
               the same call leaves the NVVM PTX it made (byte-identical to `nvcc
               -ptx -arch=compute_90a`'s, measured: scripts/toolchain_cost.py), so one
               nvcc front end serves nvcc-O3, ptxas-O0 and ptx-jit (of one unit: the
               matrix hands them the same, `toolchain.host_unit`)
    nvcc-G     nvcc -cubin -G: device debug, no NVVM or ptxas optimisation
    ptxas-O0   that PTX through `ptxas -O0` (the same PTX, SASS unoptimised)
    ptx-jit    that PTX itself: the driver's JIT compiles it when it is loaded

`kernel_digest` names what one kernel's cubin holds for it (its sections, and the
sections no kernel owns), so the matrix launches a configuration whose SASS for a
kernel is byte-identical to another's only once (`toolchain.Matrix`).

Where to find the tools: $GPUSEM_NVCC (as `nvcc.py`), the PATH, then
/usr/local/cuda/bin and /usr/local/cuda-*/bin (a bare GPU machine often has CUDA
there and not on the PATH); ptxas and cuobjdump beside the nvcc found; cuobjdump also
from $GPUSEM_CUOBJDUMP or the copy a Triton wheel carries (a CUDA without it).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.cpu import HERE
from gpusem.compiler.backends.lifetime import run_killing_tree

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
    if name == "cuobjdump":  # env, or the copy Triton's wheel carries
        if os.environ.get("GPUSEM_CUOBJDUMP"):
            return shutil.which(os.environ["GPUSEM_CUOBJDUMP"])
        places += [str(Path(p) / "triton" / "backends" / "nvidia" / "bin")
                   for p in sys.path if p]
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
        proc = run_killing_tree(cmd, capture_output=True, text=True, cwd=cwd,
                                timeout=BUILD_TIMEOUT_S)
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
        case "nvcc-O3":  # --keep: the NVVM PTX stays in the folder of `ptx`
            return [nvcc, "-cubin", sm, "-Xptxas", "-O3", *COMMON, cu, "-o", out,
                    "--keep", "--keep-dir", str(Path(ptx).parent)]
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
    nvvm = _nvvm(unit, nvcc)
    if nvvm.ptx is None:
        return False, None, {}, nvvm.log
    lowered = entry_names(nvvm.ptx, items)
    if config == "nvcc-O3":
        return nvvm.cubin is not None, nvvm.cubin, lowered, nvvm.log
    if config == "ptx-jit":  # the driver compiles the text at load time
        return True, nvvm.ptx.encode() + b"\0", lowered, ""
    with tempfile.TemporaryDirectory(prefix="gpusem-tc-") as tmp:
        cu, ptx, out = (str(Path(tmp) / n) for n in ("batch.cu", "batch.ptx", "out"))
        Path(cu).write_text(unit)
        Path(ptx).write_text(nvvm.ptx)
        ok, log = _run(_commands(config, nvcc, ptxas, cu, ptx, out) or [], tmp)
        return ok, Path(out).read_bytes() if ok else None, lowered, log


@dataclass(frozen=True)
class Nvvm:
    """One nvcc call on a unit: its NVVM PTX and nvcc-O3's cubin (None: nvcc's log)."""

    ptx: str | None
    cubin: bytes | None
    log: str


_NVVM: dict[str, Nvvm] = {}  # unit digest -> what nvcc made of it
NVVM_CACHE_SIZE = 16


def _nvvm(unit: str, nvcc: str) -> Nvvm:
    """The unit's NVVM PTX and nvcc-O3 cubin, from ONE `nvcc -cubin --keep` (it runs
    nvcc's front end, NVVM and ptxas -O3 once; the kept PTX is what `nvcc -ptx`
    emits). Kept for the last few units: the host configurations of one batch share
    one unit, so nvcc runs once for nvcc-O3, ptxas-O0 and ptx-jit."""
    key = hashlib.sha256(f"{nvcc}\0{unit}".encode()).hexdigest()
    if key not in _NVVM:
        with tempfile.TemporaryDirectory(prefix="gpusem-tc-") as tmp:
            cu, out = str(Path(tmp) / "batch.cu"), str(Path(tmp) / "out.cubin")
            ptx = Path(tmp) / "batch.ptx"  # where --keep leaves it
            Path(cu).write_text(unit)
            ok, log = _run(_commands("nvcc-O3", nvcc, "", cu, str(ptx), out) or [], tmp)
            # ptxas -O3 may refuse PTX that NVVM made: the PTX is kept for the
            # configurations that build it otherwise (a split is a finding)
            made = Nvvm(ptx.read_text() if ptx.is_file() else None,
                        Path(out).read_bytes() if ok else None, log)
        if len(_NVVM) >= NVVM_CACHE_SIZE:
            _NVVM.pop(next(iter(_NVVM)))
        _NVVM[key] = made
    return _NVVM[key]


def ptx_of_built(items: list[tuple[int, str, str]]) -> tuple[str | None, str]:
    """(the NVVM PTX of the batch, or None; nvcc's log) from the nvcc call that
    built nvcc-O3 (`build`), run now if it was not."""
    nvcc = find_tool("nvcc")
    if nvcc is None:
        return None, "nvcc not found"
    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, _, src in items], for_cpu=False)
    nvvm = _nvvm(unit, nvcc)
    return nvvm.ptx, nvvm.log


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


# What a kernel's SASS digest leaves out: the tables (their content is read through
# the symbols below), the notes (tool command lines and versions), call frame
# information (for debuggers), and the batch-wide tables re-read per symbol.
_NOT_CODE = re.compile(r"^(|\.shstrtab|\.strtab|\.symtab|\.note\..*|\.rela?\.debug_.*"
                       r"|\.debug_.*|\.nv\.info|\.nv\.callgraph)$")
_OWNER = re.compile(r"(?<!\d)(\d+)gs_k(?=\d)")


def kernel_digests(binary: bytes | None) -> dict[int, str]:
    """{index: digest of what the cubin holds for kernel gs_k<index>}: the bytes and
    header of every section named for it, of every section no kernel owns (helpers,
    constants, globals: they are shared, so they count for every kernel), its symbols
    (name, type, section, value, size) and its records of the batch-wide `.nv.info`.
    Two cubins of one batch with the same digest for a kernel run the same machine
    code on the same layout: a launch of one is a launch of the other. {} where the
    binary is not a 64-bit ELF cubin (ptx-jit's PTX, whose SASS the driver makes)."""
    if binary is None or not binary.startswith(b"\x7fELF\x02\x01"):
        return {}
    try:
        return _digests(binary)
    except (struct.error, ValueError, IndexError):  # not a cubin we can read
        return {}


def _owner(name: str) -> int | None:
    """The kernel whose namespace a mangled name is in (`5gs_k0` then `7kernel...`:
    the length says where the index ends), or None."""
    for m in _OWNER.finditer(name):
        digits = name[m.end():m.end() + int(m.group(1)) - len("gs_k")]
        if digits.isdigit():
            return int(digits)
    return None


def _plain(name: str) -> str:
    """`name` with its kernel namespace (`5gs_k3`) written `@`: one kernel is gs_k3 in
    one configuration's batch and gs_k7 in another's."""
    for m in _OWNER.finditer(name):
        digits = name[m.end():m.end() + int(m.group(1)) - len("gs_k")]
        if digits.isdigit():
            return name[:m.start()] + "@" + name[m.end() + len(digits):]
    return name


def _digests(b: bytes) -> dict[int, str]:
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize)
             for i in range(shnum)]

    def cstr(table: int, at: int) -> str:
        start = heads[table][4] + at
        return b[start:b.index(b"\0", start)].decode("ascii", "replace")

    names = [cstr(shstrndx, h[0]) for h in heads]
    symbols = _symbols(b, heads, names, cstr)
    sym_names = [_plain(n) for n, _ in symbols]
    parts: dict[int | None, list[bytes]] = {}
    for name, h in zip(names, heads, strict=True):
        if _NOT_CODE.match(name):
            continue
        data = b"" if h[1] == 8 else b[h[4]:h[4] + h[5]]  # SHT_NOBITS: size only
        if h[1] in (4, 9):  # SHT_RELA, SHT_REL: symbols by name, not by index
            data = _relocations(data, 24 if h[1] == 4 else 16, sym_names)
        elif name.startswith(".nv.info."):
            data = b"".join(r for _, r in _records(data, sym_names))
        parts.setdefault(_owner(name), []).append(
            _plain(name).encode() + struct.pack("<IQQ", h[1], h[2], h[5]) + data)
    for (name, record) in symbols:
        parts.setdefault(_owner(name), []).append(record)
    if ".nv.info" in names:
        h = heads[names.index(".nv.info")]
        for sym, record in _records(b[h[4]:h[4] + h[5]], sym_names):
            owner = _owner(symbols[sym][0]) if sym < len(symbols) else None
            parts.setdefault(owner, []).append(record)
    shared = b"\1".join(sorted(parts.get(None, [])))
    return {i: hashlib.sha256(shared + b"\2" + b"\1".join(sorted(own))).hexdigest()[:32]
            for i, own in parts.items() if i is not None}


def _symbols(b: bytes, heads: list, names: list[str], cstr) -> list[tuple[str, bytes]]:
    """(name, record) per symbol of .symtab, in order (a section symbol is named
    after its section); the record names the kernel namespace `@`."""
    at = names.index(".symtab")
    off, size, link = heads[at][4], heads[at][5], heads[at][6]
    out = []
    for k in range(size // 24):
        st_name, info, other, shndx, value, sz = struct.unpack_from("<IBBHQQ", b,
                                                                    off + 24 * k)
        name = cstr(link, st_name) if st_name else (
            names[shndx] if shndx < len(names) else "")
        section = _plain(names[shndx]) if shndx < len(names) else str(shndx)
        out.append((name, f"{_plain(name)}|{info}|{other}|{section}|{value}|{sz}"
                    .encode()))
    return out


def _relocations(data: bytes, size: int, sym_names: list[str]) -> bytes:
    """A relocation section with each entry's symbol index replaced by its name."""
    out = []
    for at in range(0, len(data) - size + 1, size):
        offset, info = struct.unpack_from("<QQ", data, at)
        sym = info >> 32
        name = sym_names[sym] if sym < len(sym_names) else str(sym)
        out.append(struct.pack("<QI", offset, info & 0xFFFFFFFF) + name.encode()
                   + data[at + 16:at + size])
    return b"\0".join(out)


# .nv.info attributes whose value starts with a symbol index (EIATTR_PARAM_CBANK,
# and the batch-wide per-function attributes: REGCOUNT, FRAME_SIZE, MIN_STACK_SIZE,
# MAX_STACK_SIZE, CRS_STACK_SIZE): read through the symbol's name
_SYMBOL_ATTRS = frozenset({0x0A, 0x2F, 0x11, 0x12, 0x23, 0x1E})


def _records(data: bytes, sym_names: list[str]) -> list[tuple[int, bytes]]:
    """(symbol index or 2**32, record) per attribute of an `.nv.info` section
    (format, attribute, then `length` value bytes where the format is EIFMT_SVAL),
    the symbol written by name where the attribute names one: one kernel's register
    count then does not make every other kernel look changed."""
    at, out = 0, []
    while at + 4 <= len(data):
        fmt, attr, length = data[at], data[at + 1], struct.unpack_from(
            "<H", data, at + 2)[0]
        size = 4 + (length if fmt == 4 else 0)  # EIFMT_SVAL carries `length` bytes
        record, sym = data[at:at + size], 1 << 32
        if fmt == 4 and length >= 4 and attr in _SYMBOL_ATTRS:
            sym = struct.unpack_from("<I", record, 4)[0]
            name = sym_names[sym] if sym < len(sym_names) else str(sym)
            record = record[:4] + name.encode() + b"\0" + record[8:]
        out.append((sym, record))
        at += size
    return out


def strip_restrict(source: str) -> str:
    """The `no-restrict` variant: the source with every `__restrict__` removed (the
    only source change: it isolates NVVM's alias-based optimisation)."""
    return re.sub(r"\s*\b__restrict__\b", "", source)


def _trim(log: str, limit: int = 2000) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower()]
    return ("\n".join(lines) or log)[:limit]
