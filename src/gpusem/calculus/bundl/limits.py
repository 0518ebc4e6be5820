"""The resource budgets of a Bundl program (issue 15; `gpusem.calculus.budgets`):
decided before an interpreter builds a machine (after `--blocks`, `--threads`) and by
`check` (the arrays), so that what the interpreters could not hold is one line, not a
MemoryError or gigabytes of threads later. `compile` does not apply them: a program
for a GPU may launch 2048 x 256 threads.

  - the machine: B and T positive; B x T at most the `threads` budget where an
    interpreter builds it (a program compiled for a GPU may launch more);
  - the arrays: the globals, plus each `alloc` once per owner (every thread for
    Local, every block for Shared, once for Global), hold at most the `elements`
    budget of cells. An allocation in a loop counts once (the loop frees it); a run
    that allocates without bound meets the memory budget instead.
"""

from __future__ import annotations

from gpusem.calculus import budgets
from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.walk import child_stmts
from gpusem.calculus.errors import BadInput


def check_limits(prog: ast.Program, blocks: int | None = None,
                 threads: int | None = None, *, machine: bool = True) -> None:
    """Raise BadInput if the arrays (on B x T threads: the program's unless
    overridden) exceed the elements budget, or, for a `machine` an interpreter is about
    to build, if B x T exceeds the threads budget. A program is compiled for a GPU of
    any size (`check` and `compile` do not build a machine): 2048 x 256 threads are a
    GPU launch, and half a million thread states in an interpreter."""
    B = prog.machine.blocks if blocks is None else blocks
    T = prog.machine.threads if threads is None else threads
    span = prog.machine.span
    overridden = blocks is not None or threads is not None
    if B <= 0 or T <= 0:
        raise BadInput(f"machine size out of range: blocks={B}, threads={T}",
                       rule="Budget", span=span)
    if machine and B * T > budgets.current().threads:
        flags = " (--blocks/--threads)" if overridden else ""
        raise budgets.over("threads", f"a machine of {B} x {T} threads{flags} to "
                           "interpret", span)
    owners = {ast.MemKind.GLOBAL: 1, ast.MemKind.SHARED: B,
              ast.MemKind.LOCAL: B * T}
    cells = sum(g.size for g in prog.globals)
    last = prog.globals[-1].span if prog.globals else span
    stack = [prog.main, *(f.body for f in prog.fns)]
    while stack:  # iterative: the nesting budget bounds depth, not breadth
        s = stack.pop()
        if isinstance(s, ast.Alloc):
            cells += s.size * owners[s.mem]
            last = s.span
        stack.extend(child_stmts(s))
    if cells > budgets.current().elements:
        raise budgets.over("elements", f"the program's arrays hold {cells} cells on "
                           f"{B} x {T} threads", last)
