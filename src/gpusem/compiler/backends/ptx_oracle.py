"""One `.cu` through every installed NVRTC and the static PTX checks (`ptx_check.py`).

`check_cuda(source)` compiles the text to PTX with each NVRTC `nvrtc_lib.find_nvrtc`
finds and runs the checks on each PTX: a `PtxCheckReport` with one `ToolchainVerdict`
per version (its PTX, what failed, the time NVRTC and the checks took). A source one
version does not build is that version's `build_error`, not an exception: the other
versions still answer.

`check_many(sources)` screens many at once (a campaign's round): one NVRTC program per
version holds them all, each in its own namespace (`cpu_source.namespaced_unit`, as
the cuda backend batches), so the runtime header is compiled once, not once per
kernel. Every source whose batched PTX fails a check, or that the batch could not
build, is checked again alone: its report is then that of its own PTX, the evidence a
bundle shows. `screen(sources)` is the first half alone (None where a source must be
checked alone), for a caller that may never read some verdicts (a shrink step reads a
batch's only up to its first failure). A single source is checked alone at once: its
batch would be the same NVRTC work, and a failing one was built twice per version.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends.nvrtc_lib import (
    ENV_PATH,
    Nvrtc,
    compile_ptx,
    find_nvrtc,
)
from gpusem.compiler.backends.cpu_source import namespaced_unit
from gpusem.compiler.backends.ptx_check import (
    PtxFinding,
    PtxVerdict,
    check_kernel,
    check_ptx,
    cu_params,
    merged,
)
from gpusem.compiler.backends.ptx_reader import read_ptx


@dataclass(frozen=True, slots=True)
class ToolchainVerdict:
    """One NVRTC version's PTX of the source and the checks' verdict on it."""

    nvrtc: Nvrtc
    ptx: str
    verdict: PtxVerdict | None  # None: NVRTC did not build the source
    build_error: str
    nvrtc_s: float
    check_s: float

    @property
    def findings(self) -> tuple[PtxFinding, ...]:
        return self.verdict.findings if self.verdict is not None else ()

    def line(self) -> str:
        """One line: the version, the target, and what held or failed."""
        head = f"{self.nvrtc.label} ({self.nvrtc.arch})"
        if self.verdict is None:
            return f"{head}: build error: {self.build_error.splitlines()[0][:200]}"
        if not self.findings:
            return (f"{head}: ok: {len(self.verdict.kernels)} kernel(s), "
                    f"{self.verdict.nc_loads} ld.global.nc, every check holds")
        checks = sorted({f.check for f in self.findings})
        return f"{head}: FAILED {', '.join(checks)}"


@dataclass(frozen=True, slots=True)
class PtxCheckReport:
    """Every installed NVRTC's verdict on one `.cu` (newest version first)."""

    source: str
    toolchains: tuple[ToolchainVerdict, ...]

    @property
    def findings(self) -> tuple[PtxFinding, ...]:
        return tuple(f for t in self.toolchains for f in t.findings)

    @property
    def exit_code(self) -> int:
        """0 every check holds under every version, 1 one failed."""
        return 1 if self.findings else 0

    def lines(self) -> list[str]:
        out = []
        for t in self.toolchains:
            out.append(t.line())
            out += ["  " + f.one_line() for f in t.findings]
        return out


def installed(nvrtcs: Sequence[Nvrtc] | None = None) -> tuple[Nvrtc, ...]:
    """`nvrtcs`, or every installed NVRTC; BadInput when there is none."""
    found = tuple(nvrtcs) if nvrtcs is not None else find_nvrtc()
    if not found:
        raise BadInput(f"ptx check: no NVRTC installed (pip install 'gpusem[nvrtc]', "
                       f"or point {ENV_PATH} at a folder holding libnvrtc.so.*)")
    return found


def check_cuda(source: str, nvrtcs: Sequence[Nvrtc] | None = None,
               file: str = "kernel.cu") -> PtxCheckReport:
    """`source` through every NVRTC of `nvrtcs` (default: every installed one) and the
    static checks."""
    out = []
    for nvrtc in installed(nvrtcs):
        start = time.perf_counter()
        ptx = compile_ptx(nvrtc, source, file)
        built = time.perf_counter()
        verdict = (check_ptx(ptx.ptx, nvrtc.label, source) if ptx.ptx is not None
                   else None)
        out.append(ToolchainVerdict(nvrtc, ptx.ptx or "", verdict,
                                    "" if ptx.ptx is not None else ptx.log,
                                    built - start, time.perf_counter() - built))
    return PtxCheckReport(source, tuple(out))


def check_many(sources: Sequence[str],
               nvrtcs: Sequence[Nvrtc] | None = None) -> list[PtxCheckReport]:
    """`check_cuda` of each source, screened in one NVRTC program per version (see the
    module docstring); the reports of sources that pass the screen carry no PTX."""
    found = installed(nvrtcs)
    return [check_cuda(src, found) if report is None else report
            for src, report in zip(sources, screen(sources, found), strict=True)]


def screen(sources: Sequence[str], nvrtcs: Sequence[Nvrtc] | None = None
           ) -> list[PtxCheckReport | None]:
    """The screen of `check_many`: each source's report where its batched PTX passes
    every check under every version, None where it must be checked alone
    (`check_cuda`): a check failed, the batch did not build, or the kernel could not
    be placed. A single source is None at once (no batch: see the module docstring)."""
    found = installed(nvrtcs)
    if len(sources) == 1:
        return [None]
    per_source: list[list[ToolchainVerdict]] = [[] for _ in sources]
    alone: set[int] = set()
    for nvrtc in found:
        start = time.perf_counter()
        unit = namespaced_unit([(i, f"k{i}_src", src, "")
                                for i, src in enumerate(sources)], for_cpu=False)
        ptx = compile_ptx(nvrtc, unit, "batch.cu")
        built = time.perf_counter()
        if ptx.ptx is None:
            alone |= set(range(len(sources)))
            continue
        module = read_ptx(ptx.ptx)
        kernels: dict[int, list[PtxVerdict]] = {}
        for fn in module.kernels:
            index, name = _demangled(fn.name)
            if index is None or index >= len(sources):
                alone |= set(range(len(sources)))  # a kernel we cannot place
                continue
            kernels.setdefault(index, []).append(check_kernel(
                fn, module, nvrtc.label, cu_params(sources[index], name), name))
        share = (built - start) / max(1, len(sources))
        check_s = (time.perf_counter() - built) / max(1, len(sources))
        for i in range(len(sources)):
            verdict = merged(nvrtc.label, kernels.get(i, []))
            if verdict.findings or i not in kernels:
                alone.add(i)
            per_source[i].append(ToolchainVerdict(nvrtc, "", verdict, "", share,
                                                  check_s))
    return [None if i in alone else PtxCheckReport(src, tuple(per_source[i]))
            for i, src in enumerate(sources)]


def _demangled(name: str) -> tuple[int | None, str]:
    """(i, kernel) of `gs_k<i>::kernel`'s Itanium-mangled name `_ZN<n>gs_k<i><m>kernel`
    (the length prefixes split the digits), else (None, name)."""
    match = re.match(r"_ZN(\d+)", name)
    if match is None:
        return None, name
    head = int(match.group(1))
    space = name[match.end():match.end() + head]
    rest = name[match.end() + head:]
    inner = re.match(r"(\d+)", rest)
    if not space.startswith("gs_k") or not space[4:].isdigit() or inner is None:
        return None, name
    length = int(inner.group(1))
    return int(space[4:]), rest[inner.end():inner.end() + length]
