"""The static PTX check of a program file (issue 23): our compiler's CUDA, compiled to
PTX by every installed NVRTC (no GPU needed), checked by `compiler/backends/ptx_check`.

`ptx_check(path)` answers with the checker's own report; `ptx_check_file` wraps it as a
file verb's `Report` for `gpusem compile FILE --ptx-check` (exit 0 every check holds, 1
one failed, naming the check, the NVRTC version and the PTX line; BadInput, exit 2,
when no NVRTC is installed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gpusem.api.files import compile_file
from gpusem.api.languages import language_of
from gpusem.api.options import CompileOptions
from gpusem.api.results import Report, out
from gpusem.compiler.backends.ptx_oracle import PtxCheckReport


def cuda_source(path: str | Path, options: CompileOptions | None = None) -> str:
    """The CUDA C++ our compiler emits for a file: the file's language's own compile
    handler (`compile_file`), its text only (nothing written, no reproducer)."""
    o = replace(options or CompileOptions(), output=None, standalone=False)
    return compile_file(str(path), o).source


def ptx_check(path: str | Path, options: CompileOptions | None = None
              ) -> PtxCheckReport:
    """Compile a `.bundl` / `.gpuir` file with our compiler, its CUDA with every
    installed NVRTC, and run the static PTX checks on each version's PTX."""
    from gpusem.compiler.backends.ptx_oracle import check_cuda, installed

    installed()  # before compiling: no NVRTC is bad input whatever the program
    return check_cuda(cuda_source(path, options), file=Path(path).stem + ".cu")


@dataclass(frozen=True)
class PtxFileReport(Report):
    """`compile --ptx-check`: one line per NVRTC version, and each failed check."""

    check: PtxCheckReport | None = None


def ptx_check_file(file: str, options: CompileOptions | None = None) -> PtxFileReport:
    report = ptx_check(file, options)
    return PtxFileReport(file, language_of(file).name, report.exit_code,
                         tuple(out(line) for line in report.lines()), report)


__all__ = ["PtxCheckReport", "PtxFileReport", "cuda_source", "ptx_check",
           "ptx_check_file"]
