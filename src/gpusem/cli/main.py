"""The `gpusem` command: one module per verb under `gpusem.cli`, loaded lazily.

Lazy loading keeps `gpusem --help` and the quick verbs fast (the compiler and fuzzer
pull in hypothesis, z3 and NumPy). Every verb turns a `GpusemError` into one line on
stderr and its exit code; malformed input never shows a traceback (DESIGN.md).

The top-level flags `--max-nesting`, `--max-elements`, ... set the resource budgets of
`gpusem.api.budgets` (calculus/budgets.py) for the one command. Anything else that escapes a verb is a
bug of gpusem: one line and exit 3 (`GPUSEM_TRACEBACK=1` shows the traceback).
"""

from __future__ import annotations

import importlib
import sys

import click
from gpusem.api import BadInput, GpusemError, budgets

# verb -> (module under gpusem.cli, one-line help for `gpusem --help`)
VERBS: dict[str, tuple[str, str]] = {
    "check": ("check", "Type-check a .bundl file or analyse a .gpuir file."),
    "run": ("run", "Interpret a program and print its final global memory."),
    "synccheck": ("synccheck", "GPU IR -> AMIR -> synchronisation check."),
    "compile": ("compile", "Emit CUDA C++ for a program."),
    "exec": ("exec_", "Compile, run on a backend, compare with the interpreter."),
    "fuzz": ("fuzz", "Run a differential fuzzing campaign."),
    "replay": ("replay", "Re-run a counterexample bundle."),
    "step": ("step", "The step-through semantic debugger."),
    "triage": ("triage", "Group counterexample bundles by signature."),
    "reduce": ("reduce", "Shrink a failing program with the fuzzer's passes."),
    "gen": ("gen", "Write generated well-typed programs."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [v for v in VERBS if self._module(v) is not None]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = self._module(name)
        return None if module is None else module.command

    def format_commands(self, ctx: click.Context, formatter) -> None:
        rows = [(v, VERBS[v][1]) for v in self.list_commands(ctx)]
        if not rows:
            return
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    @staticmethod
    def _module(name: str):
        if name not in VERBS:
            return None
        try:
            return importlib.import_module(f"gpusem.cli.{VERBS[name][0]}")
        except ModuleNotFoundError as err:
            if err.name == f"gpusem.cli.{VERBS[name][0]}":
                return None
            raise


_BUDGET_HELP = {
    "source_bytes": "Bytes of one source file.",
    "nesting": "Depth of nested statements and expressions.",
    "literal_digits": "Digits of one integer literal.",
    "elements": "Cells of all the arrays a program declares.",
    "threads": "Threads of one machine (Bundl B x T).",
    "iterations": "Iterations of one loop times the lanes it runs on.",
    "memory_mb": "MiB the process may grow by during one run.",
}
# Python frames per nesting level the deepest stage (the Bundl compiler) needs, and
# the frames below the first level; the recursion limit follows --max-nesting.
_FRAMES_PER_LEVEL, _FRAMES_BASE = 5, 1000
_MAX_NESTING = 5000  # every verb measured to work at 4000 (tests/robust)


def _budget_options(f):
    for name in reversed(budgets.FLAGS):
        f = click.option(budgets.FLAGS[name], name, type=int, default=None,
                         metavar="N", show_default=False,
                         help=f"{_BUDGET_HELP[name]} [default: "
                         f"{getattr(budgets.Budgets(), name)}]")(f)
    return f


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpusem")
@_budget_options
def cli(**limits: int | None) -> None:
    """gpusem: reference semantics, checkers and differential fuzzer for GPU calculi
    (Bundl from Prism, AMIR from Exo-GPU).

    \b
    Exit codes (every verb): 0 ok / nothing found, 1 a finding (a rejection, a bug
    found, `replay`: the bug still reproduces), 2 bad input or usage, 3 an internal
    error of gpusem, 4 (`fuzz`) nothing checked: no program was compared, 125
    (`replay`) cannot test here (for `git bisect run`: skip)."""
    chosen = {k: v for k, v in limits.items() if v is not None}
    for name, value in chosen.items():
        if value <= 0:
            raise BadInput(f"{budgets.FLAGS[name]} out of range: {value} (must be "
                           "positive)")
    if chosen.get("nesting", 0) > _MAX_NESTING:
        raise BadInput(f"--max-nesting out of range: {chosen['nesting']} (at most "
                       f"{_MAX_NESTING}: deeper recursion would overflow the C stack)")
    installed = budgets.Budgets(**chosen)
    budgets.install(installed)
    sys.setrecursionlimit(max(sys.getrecursionlimit(),
                              _FRAMES_BASE + _FRAMES_PER_LEVEL * installed.nesting))


def main() -> None:
    from gpusem.cli.process_exit import run_then_exit

    saved = budgets.current()  # one command's flags end with it (in-process callers)
    try:
        run_then_exit(_main)  # the command's own process ends without its teardown
    finally:
        budgets.install(saved)


def _main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except GpusemError as err:
        click.echo(err.one_line(), err=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except MemoryError:  # only past budgets raised beyond what this machine holds
        click.echo("out of memory: the program needs more than this machine holds "
                   "(were --max-elements or --max-threads raised?)", err=True)
        sys.exit(2)
    except Exception as err:  # noqa: BLE001 - a bug of gpusem: exit 3, say so
        import os
        import traceback

        if os.environ.get("GPUSEM_TRACEBACK"):
            traceback.print_exc()
        where = traceback.extract_tb(err.__traceback__)[-1:]
        at = f" at {where[0].filename}:{where[0].lineno}" if where else ""
        message = " ".join(str(err).split())[:300]
        click.echo(f"internal error: {type(err).__name__}: {message}{at} (a bug of "
                   "gpusem; GPUSEM_TRACEBACK=1 shows the traceback)".replace("\n", " "),
                   err=True)
        sys.exit(3)


if __name__ == "__main__":
    main()
