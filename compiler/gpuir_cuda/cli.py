"""The `.gpuir` branches of `gpusem compile` and `gpusem exec` (cli/compile.py and
cli/exec_.py call these). Control values come from `-D NAME=INT` over the file's
`# defines:` header; the procedure is the file's last one unless `--proc` names one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import click
from gpusem.calculus.errors import BadInput


def load(path: str, defines: Mapping[str, int], proc_name: str | None = None):
    """(proc, defines, source) of a `.gpuir` file, every size defined."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.cli.common import read_source
    from gpusem.typing_rules.gpuir import header_defines

    source = read_source(path)
    module = parse_module(source, path)
    procs = {p.name: p for p in module.procs}
    if proc_name is not None and proc_name not in procs:
        raise BadInput(f"{path}: no procedure named {proc_name} (have: "
                       f"{', '.join(procs)})")
    proc = procs[proc_name] if proc_name else module.procs[-1]
    env = {**header_defines(source), **dict(defines)}
    missing = [p.name for p in proc.ctrl_params if p.name not in env]
    if missing:
        raise BadInput(f"{path}: missing definition: {missing[0]} has no value "
                       f"(pass -D {missing[0]}=...)")
    return proc, env, source


def compile_command(path: str, defines: Mapping[str, int], output: str | None,
                    proc_name: str | None = None) -> None:
    from .pipeline import compile_proc

    proc, env, source = load(path, defines, proc_name)
    compiled = compile_proc(proc, env, source=source, file=Path(path).name)
    if output:
        Path(output).write_text(compiled.source)
        for k in compiled.kernels:
            click.echo(f"wrote {output}: kernel {k.name}, grid {k.grid}, block "
                       f"{k.block}, cluster {k.cluster}, {k.smem_bytes} bytes shared "
                       "memory")
    else:
        click.echo(compiled.source, nl=False)


def exec_command(path: str, defines: Mapping[str, int], backend: str,
                 seeds: tuple[int, ...], as_json: bool,
                 proc_name: str | None = None) -> None:
    """Compile, run on `backend` under `seeds`, compare with the sequential reading;
    exit 0 agree, 1 disagree or the kernel failed (unsupported included)."""
    from .run import check_proc

    proc, env, source = load(path, defines, proc_name)
    verdict = check_proc(proc, env, backend, seeds, source=source,
                         file=Path(path).name)
    if as_json:
        click.echo(json.dumps(verdict.as_dict(), indent=2))
    else:
        click.echo(verdict.describe())
    raise SystemExit(0 if verdict.agree else 1)
