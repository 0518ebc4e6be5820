"""`gpusem compile FILE [-o out.cu] [--no-sync-motion] [--ptx-check]`: emit CUDA C++."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import click
from gpusem.calculus.errors import BadInput
from gpusem.calculus.source import language_of, read_source
from gpusem.cli.common import parse_defines, write_output


def compile_file(path: str, sync_motion: bool = True, cp_async: bool = True):
    """Parse, type-check and compile a `.bundl` file; returns a CompiledKernel."""
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.typing_rules.bundl.stmt import check_program

    source = read_source(path)
    prog = parse_program(source, path)
    check_program(prog)  # the compiler's input is a well-typed program
    options = CompileOptions(sync_motion=sync_motion, cp_async=cp_async)
    return compile_program(prog, options, source=source, file=Path(path).name)


@click.command("compile")
@click.argument("file", type=click.Path())
@click.option("-o", "--output", type=click.Path(), help="Write the CUDA here.")
@click.option("--no-sync-motion", is_flag=True,
              help="Keep every barrier where the S-rules put it (no wait motion).")
@click.option("--no-cp-async", is_flag=True, help="Lower async copies to plain copies.")
@click.option("-D", "defines", multiple=True, metavar="NAME=INT",
              help=".gpuir: control values (over the file's `# defines:` header).")
@click.option("--proc", "proc_name", default=None, help=".gpuir: the procedure.")
@click.option("--standalone", is_flag=True, help=".bundl: one self-contained .cu "
              "(runtime inlined, inputs and the interpreter's output embedded, a main() "
              "that exits 1 on a mismatch): `nvcc -arch=sm_90a FILE.cu` builds it.")
@click.option("--ptx-check", is_flag=True, help="Compile the CUDA to PTX with every "
              "installed NVRTC (no GPU) and check the PTX statically (e.g. no "
              "ld.global.nc of a buffer the kernel writes): one line per version; exit "
              "1 when a check fails, 2 when no NVRTC is installed.")
def command(file: str, output: str | None, no_sync_motion: bool, no_cp_async: bool,
            defines: tuple[str, ...] = (), proc_name: str | None = None,
            standalone: bool = False, ptx_check: bool = False):
    """Emit CUDA C++ for FILE (.bundl or .gpuir). A .bundl kernel is `bundl_main`,
    launched with B blocks of T threads; its parameters are the program's globals in
    order. A .gpuir proc gives one kernel per CudaDeviceFunction, named after it."""
    if ptx_check:
        from gpusem import api

        report = api.ptx_check(file, parse_defines(defines), proc_name,
                               not no_sync_motion)
        click.echo("\n".join(report.lines()))
        raise SystemExit(report.exit_code)
    if language_of(file) == "gpuir":
        if standalone:
            return _standalone_gpuir(file, parse_defines(defines), output, proc_name)
        return compile_gpuir(file, parse_defines(defines), output, proc_name)
    if language_of(file) != "bundl":
        raise BadInput(f"compile: only .bundl files are compiled so far: {file}")
    if standalone:
        return _standalone(file, output, not no_sync_motion)
    kernel = compile_file(file, not no_sync_motion, not no_cp_async)
    if output:
        write_output(output, kernel.source)
        click.echo(f"wrote {output}: kernel {kernel.name}, grid {kernel.blocks}, "
                   f"block {kernel.threads}, {kernel.smem_bytes} bytes shared memory")
    else:
        click.echo(kernel.source, nl=False)


def _standalone(file: str, output: str | None, sync_motion: bool) -> None:
    from gpusem import api
    from gpusem.compiler.bundl_cuda.standalone import NVCC_COMMAND

    text = api.standalone(api.load(file), sync_motion, title=Path(file).name)
    _write_reproducer(text, output, NVCC_COMMAND)


def _write_reproducer(text: str, output: str | None, nvcc_command: str) -> None:
    """A standalone reproducer to `output` (with how to build it), else to stdout."""
    if output:
        Path(output).write_text(text)
        click.echo(f"wrote {output}: build with {nvcc_command.replace('repro.cu', output)}")
    else:
        click.echo(text, nl=False)


def _standalone_gpuir(path: str, defines: Mapping[str, int], output: str | None,
                      proc_name: str | None) -> None:
    from gpusem.compiler.backends.standalone import NVCC_COMMAND
    from gpusem.compiler.gpuir_cuda.standalone import standalone_proc
    from gpusem.typing_rules.gpuir.frontend import load_proc

    _, env, source = load_proc(path, defines, proc_name)
    text = standalone_proc(source, Path(path).name, env, proc_name)
    _write_reproducer(text, output, NVCC_COMMAND)


def compile_gpuir(path: str, defines: Mapping[str, int], output: str | None,
                    proc_name: str | None = None) -> None:
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
    from gpusem.typing_rules.gpuir.frontend import load_proc

    proc, env, source = load_proc(path, defines, proc_name)
    compiled = compile_proc(proc, env, source=source, file=Path(path).name)
    if output:
        write_output(output, compiled.source)
        for k in compiled.kernels:
            click.echo(f"wrote {output}: kernel {k.name}, grid {k.grid}, block "
                       f"{k.block}, cluster {k.cluster}, {k.smem_bytes} bytes shared "
                       "memory")
    else:
        click.echo(compiled.source, nl=False)
