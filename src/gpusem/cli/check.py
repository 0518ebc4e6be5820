"""`gpusem check FILE`: type-check a `.bundl` file (Appendix A.2 of the Prism paper),
analyse a `.gpuir` file (Exo-GPU Section 4) or check an APPy file's directives
(`gpusem.api.check_file`).

Exit codes (DESIGN.md): 0 well-typed, 1 ill-typed (one line per error:
`file:line:col: [T-Rule] message`), 2 bad input (one line, no traceback).
"""

from __future__ import annotations

import click
from gpusem import api
from gpusem.cli.common import show


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
    show(api.check_file(file, api.CheckOptions(rules, as_json, derivation, defines,
                                               inputs)))


__all__ = ["command"]
