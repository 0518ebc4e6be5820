"""`gpusem compile FILE [-o out.cu] [--no-sync-motion | --sync MODE] [--ptx-check]`: emit CUDA C++
(`gpusem.api.compile_file`), or check the PTX every installed NVRTC makes of it
(`gpusem.api.ptx_check_file`)."""

from __future__ import annotations

import click
from gpusem import api
from gpusem.cli.common import show


@click.command("compile")
@click.argument("file", type=click.Path())
@click.option("-o", "--output", type=click.Path(), help="Write the CUDA here.")
@click.option("--no-sync-motion", is_flag=True,
              help="Keep every barrier where the S-rules put it (no wait motion).")
@click.option("--sync", "sync", type=click.Choice(["naive", "motion", "prism"]),
              default=None, help=".bundl/.prism: barrier placement: naive (one at "
              "every partition's end), motion (wait motion, the default) or prism "
              "(Prism Sec. 5's rules 1 and 2); overrides --no-sync-motion.")
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
            standalone: bool = False, ptx_check: bool = False,
            sync: str | None = None) -> None:
    """Emit CUDA C++ for FILE (.bundl or .gpuir). A .bundl kernel is `bundl_main`,
    launched with B blocks of T threads; its parameters are the program's globals in
    order. A .gpuir proc gives one kernel per CudaDeviceFunction, named after it."""
    options = api.CompileOptions(output, not no_sync_motion, not no_cp_async, defines,
                                 proc_name, standalone, sync or "")
    show(api.ptx_check_file(file, options) if ptx_check
         else api.compile_file(file, options))
