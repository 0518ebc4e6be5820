"""One `.cu` through every installed NVRTC and the static PTX checks (`ptx_check.py`).

`check_cuda(source)` compiles the text to PTX with each NVRTC `nvrtc_lib.find_nvrtc`
finds and runs the checks on each PTX: a `PtxCheckReport` with one `ToolchainVerdict`
per version (its PTX, what failed, the time NVRTC and the checks took). A source one
version does not build is that version's `build_error`, not an exception: the other
versions still answer.
"""

from __future__ import annotations

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
from gpusem.compiler.backends.ptx_check import PtxFinding, PtxVerdict, check_ptx


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
