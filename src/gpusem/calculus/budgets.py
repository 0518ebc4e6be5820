"""Resource budgets: the named limits every verb applies to its input and to every run
(issue 15; DESIGN.md, "Exit codes": out-of-range sizes and exhausted budgets are exit 2).

Static budgets are decided before anything runs, by the parsers and the static checks
(`check`, and every verb that type-checks first), so that a program too large for the
interpreters is one line `file:line:col: ...` naming the budget and its flag, never a
MemoryError, a RecursionError or a hang discovered later:

  source_bytes    bytes of one source file                    --max-source-bytes
  nesting         depth of the parse tree (statements nested  --max-nesting
                  in statements, operands in expressions)
  literal_digits  digits of one integer literal (Python's     --max-literal-digits
                  int() is quadratic in them, and refuses
                  4,300)
  elements        cells of all the arrays a program declares  --max-elements
  threads         threads of one machine (Bundl B x T)        --max-threads
  iterations      iterations of one loop, times the lanes it  --max-iterations
                  runs on (GPU IR's vectorised reading)

Dynamic budgets stop a run that is under way: every interpreter, scheduler and debugger
takes a step budget (its `max_steps`), and a `MemoryGuard` for the memory budget:

  memory_mb       growth of the process's resident memory     --max-memory
                  during one run, in MiB

The budgets in force are a context variable: `gpusem`'s top-level flags set them for
one command (cli/main.py); library callers get the defaults, or `using(...)`.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace

from gpusem.calculus.errors import BadInput, BudgetExhausted
from gpusem.calculus.span import NO_SPAN, Span
from lark import Token, Tree


@dataclass(frozen=True)
class Budgets:
    source_bytes: int = 16 << 20
    nesting: int = 200
    literal_digits: int = 100
    elements: int = 1 << 26
    threads: int = 1 << 16
    iterations: int = 1 << 26
    memory_mb: int = 1536


# budget -> its command-line flag (cli/main.py); each message that reports an
# exhausted budget names the flag that raises it
FLAGS = {"source_bytes": "--max-source-bytes", "nesting": "--max-nesting",
         "literal_digits": "--max-literal-digits", "elements": "--max-elements",
         "threads": "--max-threads", "iterations": "--max-iterations",
         "memory_mb": "--max-memory"}
assert set(FLAGS) == {f.name for f in fields(Budgets)}

DEFAULTS = Budgets()
_CURRENT: ContextVar[Budgets] = ContextVar("gpusem_budgets", default=DEFAULTS)


def current() -> Budgets:
    """The budgets in force."""
    return _CURRENT.get()


def install(budgets: Budgets) -> None:
    """Make `budgets` the ones in force for the rest of this context (one command)."""
    _CURRENT.set(budgets)


@contextlib.contextmanager
def using(**changes: int) -> Iterator[Budgets]:
    """`with using(elements=1 << 30): ...`: other budgets for a block."""
    token = _CURRENT.set(replace(current(), **changes))
    try:
        yield current()
    finally:
        _CURRENT.reset(token)


def over(name: str, what: str, span: Span = NO_SPAN, rule: str = "Budget") -> BadInput:
    """The static error for `what` (e.g. "global A holds 2147483647 elements") past
    the budget `name`, naming its flag."""
    limit = getattr(current(), name)
    return BadInput(f"too large: {what}, more than the {name} budget of {limit} "
                    f"({FLAGS[name]})", rule=rule, span=span)


def check_int_literal(digits: str, span: Span = NO_SPAN) -> int:
    """The value of a decimal literal, refusing more digits than the budget before
    Python's int() (quadratic, and an error past 4,300 digits) sees them."""
    limit = current().literal_digits
    if len(digits) > limit:
        raise BadInput(f"integer literal too long: {len(digits)} digits, more than "
                       f"the literal_digits budget of {limit} "
                       f"({FLAGS['literal_digits']})", span=span)
    return int(digits)


def check_nesting(tree: Tree[Token], file: str) -> None:
    """Refuse a parse tree deeper than the `nesting` budget, before any recursive walk
    (the tree builders, the checks, the interpreters, the compilers) meets it. The
    walk here is iterative; the error points at the first node past the budget."""
    limit = current().nesting
    stack: list[tuple[Tree[Token], int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            line, column = _position(node)
            raise BadInput(f"nesting too deep: more than {limit} levels of nested "
                           f"statements and expressions, the nesting budget "
                           f"({FLAGS['nesting']})",
                           rule="Budget", span=Span(file, line, column, line, column))
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, Tree))


def _position(node: Tree[Token]) -> tuple[int, int]:
    meta = node.meta
    if not meta.empty:
        return meta.line, meta.column
    for token in node.scan_values(lambda v: isinstance(v, Token)):
        return token.line or 1, token.column or 1
    return 1, 1


# ------------------------------------------------------------------------ memory


def resident_bytes() -> int:
    """The process's resident memory now (Linux: /proc/self/statm; elsewhere the
    peak, which only overestimates)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class MemoryGuard:
    """The memory budget of one run: `check(span)` raises BudgetExhausted once the
    process's resident memory has grown by more than the budget since the guard was
    made. Reading it costs a system call, so interpreters call `check` every
    `every` steps (`tick`): fewer where one step can allocate much (a transition of
    the exhaustive explorer keeps a snapshot). The static budgets bound every single
    allocation, so a run cannot grow by much between two checks."""

    EVERY = 4096

    def __init__(self, file: str = "", budget_mb: int | None = None,
                 every: int = EVERY):
        self.limit_mb = current().memory_mb if budget_mb is None else budget_mb
        self.every = every
        self.base = resident_bytes()
        self.file = file
        self.count = 0

    def tick(self, span: Span = NO_SPAN, rule: str = "") -> None:
        """Count one step; every EVERY steps, `check`."""
        self.count += 1
        if self.count >= self.every:
            self.count = 0
            self.check(span, rule)

    def check(self, span: Span = NO_SPAN, rule: str = "") -> None:
        err = self.exceeded(span, rule)
        if err is not None:
            raise err

    def exceeded(self, span: Span = NO_SPAN, rule: str = "") -> BudgetExhausted | None:
        """The error to report if the budget is exhausted now, else None."""
        grown = resident_bytes() - self.base
        if grown <= self.limit_mb << 20:
            return None
        where = span if span.line else Span(self.file or "<input>", 1, 1, 1, 1)
        return BudgetExhausted(
            f"memory budget exhausted: the run grew by {grown >> 20} MiB, more than "
            f"the memory_mb budget of {self.limit_mb} ({FLAGS['memory_mb']})",
            rule=rule, span=where)


def step_budget(limit: int, what: str, span: Span, rule: str) -> BudgetExhausted:
    """The error of a step budget `limit` of `what` ("steps", "transitions ...")
    exhausted at the statement `span`."""
    return BudgetExhausted(f"step budget exhausted: {limit} {what}", rule=rule,
                           span=span)
