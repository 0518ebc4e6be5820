"""Compiler errors: a `BadInput` subclass, so the CLI reports them in one line (exit 2)."""

from gpusem.calculus.errors import BadInput


class CompileError(BadInput):
    """The program is outside what this compiler lowers (the message says why)."""
