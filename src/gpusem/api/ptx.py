"""The static PTX check of a program file (issue 23): our compiler's CUDA, compiled to
PTX by every installed NVRTC (no GPU needed), checked by `compiler/backends/ptx_check`.

`ptx_check(path)` answers with the checker's own report; `ptx_check_file` wraps it as a
file verb's `Report` for `gpusem compile FILE --ptx-check` (exit 0 every check holds, 1
one failed, naming the check, the NVRTC version and the PTX line; BadInput, exit 2,
when no NVRTC is installed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpusem.api.languages import language_of
from gpusem.api.options import CompileOptions, parse_defines
from gpusem.api.results import Report, out
from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends.ptx_oracle import PtxCheckReport


def cuda_source(path: str | Path, defines: dict[str, int] | None = None,
                proc: str | None = None, sync_motion: bool = True) -> str:
    """The CUDA C++ our compiler emits for a `.bundl` or `.gpuir` file (`-D` control
    values and the procedure for GPU IR)."""
    language = language_of(str(path)).name
    if language == "gpuir":
        from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
        from gpusem.typing_rules.gpuir.frontend import load_proc

        gproc, env, text = load_proc(str(path), defines or {}, proc)
        return str(compile_proc(gproc, env, source=text, file=Path(path).name).source)
    if language != "bundl":
        raise BadInput(f"compile: only .bundl and .gpuir files are compiled: {path}")
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.calculus.source import read_source
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions as BundlOptions
    from gpusem.compiler.bundl_cuda.pipeline import compile_program
    from gpusem.typing_rules.bundl.stmt import check_program

    text = read_source(str(path))
    program = parse_program(text, str(path))
    check_program(program)
    return str(compile_program(program, BundlOptions(sync_motion=sync_motion),
                               source=text, file=Path(path).name).source)


def ptx_check(path: str | Path, defines: dict[str, int] | None = None,
              proc: str | None = None, sync_motion: bool = True) -> PtxCheckReport:
    """Compile a `.bundl` / `.gpuir` file with our compiler, its CUDA with every
    installed NVRTC, and run the static PTX checks on each version's PTX."""
    from gpusem.compiler.backends.ptx_oracle import check_cuda, installed

    installed()  # before compiling: no NVRTC is bad input whatever the program
    return check_cuda(cuda_source(path, defines, proc, sync_motion),
                      file=Path(path).stem + ".cu")


@dataclass(frozen=True)
class PtxFileReport(Report):
    """`compile --ptx-check`: one line per NVRTC version, and each failed check."""

    check: PtxCheckReport | None = None


def ptx_check_file(file: str, options: CompileOptions | None = None) -> PtxFileReport:
    o = options or CompileOptions()
    report = ptx_check(file, parse_defines(o.defines), o.proc, o.sync_motion)
    return PtxFileReport(file, language_of(file).name, report.exit_code,
                         tuple(out(line) for line in report.lines()), report)


__all__ = ["PtxCheckReport", "PtxFileReport", "cuda_source", "ptx_check",
           "ptx_check_file"]
