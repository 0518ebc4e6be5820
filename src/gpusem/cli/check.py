"""`gpusem check FILE`: type-check a `.bundl` file (Appendix A.2 of the Prism paper) or
analyse a `.gpuir` file (delegated to `gpusem.typing_rules.gpuir.frontend.check_file`).

Exit codes (DESIGN.md): 0 well-typed, 1 ill-typed (one line per error:
`file:line:col: [T-Rule] message`), 2 bad input (one line, no traceback).
"""

from __future__ import annotations

import json
import sys

import click
from gpusem.calculus.errors import BadInput, GpusemError, IllTyped
from gpusem.calculus.source import language_of, read_source
from gpusem.cli.common import parse_defines


@click.command(name="check")
@click.argument("file", type=click.Path())
@click.option("--rules", type=click.Choice(["fixed", "paper"]), default="fixed",
              show_default=True,
              help="Typing rules: corrected (fixed) or as printed in the paper.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--derivation", is_flag=True,
              help="Print the typing derivation, one rule application per line.")
@click.option("-D", "defines", multiple=True, metavar="NAME=INT",
              help="Size definitions for .gpuir files.")
@click.option("--inputs", "inputs", default=None, metavar="SPEC",
              help=".py (APPy): inputs for the dynamic legality rules, e.g. "
              "'A=float32[8] N=8' (default: the file's '# inputs:' header).")
def command(file: str, rules: str, as_json: bool, derivation: bool,
            defines: tuple[str, ...], inputs: str | None = None) -> None:
    """Type-check a .bundl file, analyse a .gpuir file, or check an APPy (.py)
    file's directives (parse + legality)."""
    language = language_of(file)
    if language == "appy":
        from gpusem.cli.appy_verbs import check_appy

        check_appy(file, inputs, as_json)
        return
    if language == "gpuir":
        _check_gpuir(file, defines, as_json)
        return
    if language != "bundl":
        raise BadInput(f"check does not handle {language} files: {file}")
    _check_bundl(file, rules, as_json, derivation)


def _check_bundl(file: str, rules: str, as_json: bool, derivation: bool) -> None:
    from gpusem.calculus.bundl.limits import check_limits
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.typing_rules.bundl.stmt import check_program, type_errors

    prog = parse_program(read_source(file), file)
    check_limits(prog, machine=False)  # the arrays: `check` decides for run, exec
    if derivation and not as_json:
        from gpusem.typing_rules.bundl.derivation import (
            derivation as derive,
        )
        from gpusem.typing_rules.bundl.derivation import (
            format_derivation,
        )

        click.echo(format_derivation(derive(prog, rules)))
    errors = type_errors(prog, rules)
    uses = check_program(prog, rules) if not errors else {}
    if as_json:
        click.echo(json.dumps(_report(file, rules, prog, errors, uses), indent=2))
    elif errors:
        for err in errors:
            click.echo(err.one_line(), err=True)
    else:
        click.echo(_summary(prog, rules, uses))
    if errors:
        sys.exit(IllTyped.exit_code)


def _summary(prog, rules: str, uses: dict[str, int]) -> str:
    m = prog.machine
    fns = ", ".join(f"{f.name} at {f.persp} uses {uses[f.name]}/{f.uses}"
                    for f in prog.fns)
    return (f"ok: well-typed at grid[1] (rules {rules}; machine blocks={m.blocks}, "
            f"threads={m.threads}; {len(prog.globals)} globals; "
            f"{len(prog.fns)} functions{': ' + fns if fns else ''}; "
            f"main needs {uses['main']} bytes)")


def _report(file: str, rules: str, prog, errors: list[IllTyped], uses) -> dict:
    return {
        "file": file,
        "rules": rules,
        "ok": not errors,
        "machine": {"blocks": prog.machine.blocks, "threads": prog.machine.threads},
        "uses": uses,
        "errors": [_error_json(e) for e in errors],
    }


def _error_json(e: GpusemError) -> dict:
    return {"rule": e.rule, "prefix": e.prefix, "message": e.message,
            "line": e.span.line, "column": e.span.column}


def _check_gpuir(file: str, defines: tuple[str, ...], as_json: bool) -> None:
    # ---- GPU IR branch: the analysis is owned by the GPU IR front-end engineer ------
    # `gpusem.typing_rules.gpuir.frontend.check_file(path, defines)` returns a printable summary
    # or raises IllTyped (with every error in `.all`) or BadInput.
    try:
        from gpusem.typing_rules.gpuir.frontend import check_file
    except ImportError as err:
        if err.name and err.name.startswith("gpusem.typing_rules.gpuir.frontend"):
            raise BadInput("gpuir analysis is not available yet") from None
        raise
    try:
        result = check_file(file, parse_defines(defines))
    except IllTyped as err:
        errors = list(getattr(err, "all", None) or [err])
        if as_json:
            click.echo(json.dumps({"file": file, "ok": False,
                                   "errors": [_error_json(e) for e in errors]},
                                  indent=2))
        else:
            for e in errors:
                click.echo(e.one_line(), err=True)
        sys.exit(IllTyped.exit_code)
    if as_json:
        click.echo(json.dumps({"file": file, "ok": True, "summary": str(result)},
                              indent=2))
    elif result is not None:
        click.echo(str(result))


__all__ = ["command"]
