"""Compiler errors: a `BadInput` subclass, so the CLI reports them in one line (exit 2).

Messages start with a stable lowercase prefix: `unsupported: ...` for programs outside
what this compiler lowers (a documented limitation, counted apart by the oracle), or
`compile error: ...` for programs the front end should have rejected.
"""

from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import NO_SPAN, Span


class CompileError(BadInput):
    """The program is outside what this compiler lowers (the message says why)."""


def unsupported(what: str, span: Span = NO_SPAN) -> CompileError:
    return CompileError(f"unsupported: {what}", rule="gpuir_cuda", span=span)
