"""Directive legality for APPy (seed 003, Sections 3.1-3.4, 4.2, Appendix B.1).

When is a program's parallel reading defined, so that the compiler owes us the result of
the sequential reading? The paper leaves the check to the programmer ("the `simd`
directive relies on the programmer to check for dependences"); gpusem decides it, so that
a mismatch is blamed on the program or on the compiler, never guessed.

Static rules (`check_static`), each one function:
  Legal-Range         a parallel loop's trip count is known at launch: no array reads in
                      its bounds (3.1 "no dynamic parallelism")
  Legal-Private       a scalar assigned inside a parallel region is private to a worker:
                      it is neither assigned before the region (3.3 "no multiple reaching
                      definitions from inside and outside") nor read after it, unless it
                      is a `reduction(+:x)` variable
  Legal-SimdScalar    a scalar defined before a `simd` loop and assigned in it must be a
                      reduction `x = x + e` / `x += e` / `x = np.maximum(x, e)` (the
                      softmax idiom, Listing 6); anything else is a loop-carried scalar
  Legal-Atomic        `#pragma atomic` marks `A[...] += e` (3.4)
Dynamic rules (`interpreter/appy/legality.py`: they watch the sequential reading's
every access, so they live a stage up, beside that reading):
  Legal-Disjoint      iterations (workers) of a `parallel for` touch disjoint cells,
                      except through atomic updates of the same kind (3.1, 3.4)
  Legal-SimdLanes     lanes of one `simd` chunk (<= width, default MVL) have no
                      dependence through memory (3.2), except `X[idx] += e` with idx
                      invariant in the loop: a reduction into one cell (Listing 4)

Conventions: worker = the iteration value of a parallel loop; lane = the iteration
number within a simd loop, chunk = lane // width; cell = (array, flat index).
"""

from __future__ import annotations

from gpusem.calculus.appy import ast as A
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.span import Span

MVL = 1024  # the largest block size appyc may choose (seed 003, Section 5: 128..1024)


def require(cond: bool, rule: str, span: Span, msg: str) -> None:
    if not cond:
        raise IllTyped(msg, rule=rule, span=span)


# ------------------------------------------------------------------------ static


def check_static(fn: A.Function) -> None:
    _check_body(fn.body, fn.body)


def _check_body(body: tuple[A.Stmt, ...], top: tuple[A.Stmt, ...]) -> None:
    for i, s in enumerate(body):
        match s:
            case A.For(directive=A.ParallelFor() | A.SequentialFor()):
                legal_range(s)
                legal_private(s, body[:i], body[i + 1:])
            case A.For(directive=A.Simd()):
                legal_simd_scalar(s, body[:i])
            case A.Assign(atomic=True):
                legal_atomic(s)
            case _:
                pass
        match s:
            case A.For(body=inner):
                _check_body(inner, top)
            case A.If(body=then, orelse=orelse):
                _check_body(then, top)
                _check_body(orelse, top)
            case A.Assign():
                pass


def legal_range(s: A.For) -> None:
    # Legal-Range
    for e in (s.start, s.stop, s.step):
        require(not any(isinstance(x, A.Subscript) for x in A.walk_expr(e)),
                "Legal-Range", s.span,
                f"dynamic parallelism: the bounds of parallel loop '{s.var}' read memory")


def _assigned(body: tuple[A.Stmt, ...]) -> set[str]:
    return {st.target.id for st in A.walk_stmts(body)
            if isinstance(st, A.Assign) and isinstance(st.target, A.Name)}


def _read(body: tuple[A.Stmt, ...]) -> set[str]:
    names: set[str] = set()
    for st in A.walk_stmts(body):
        exprs = {A.Assign: lambda x: [x.value, x.target] if isinstance(
            x.target, A.Subscript) or x.op else [x.value],
            A.If: lambda x: [x.cond], A.For: lambda x: [x.start, x.stop, x.step]}[
            type(st)](st)
        for e in exprs:
            names |= {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}
    return names


def legal_private(s: A.For, before: tuple[A.Stmt, ...],
                  after: tuple[A.Stmt, ...]) -> None:
    # Legal-Private
    red = set(s.directive.reduction) if isinstance(s.directive, A.ParallelFor) else set()
    inside = _assigned(s.body) - red
    clash = sorted(inside & _assigned(before))
    require(not clash, "Legal-Private", s.span,
            f"shared scalar written: '{(clash + [''])[0]}' is assigned both outside and "
            f"inside parallel loop '{s.var}' (make it an array of size 1)")
    escape = sorted(inside & _read(after))
    require(not escape, "Legal-Private", s.span,
            f"private scalar escapes: '{(escape + [''])[0]}' is private to the workers "
            f"of loop '{s.var}' but read after it")


def _is_reduction(st: A.Assign, x: str) -> bool:
    if st.op == "+":
        return x not in {n.id for n in A.walk_expr(st.value) if isinstance(n, A.Name)}
    match st.value:
        case A.BinOp(op="+", left=A.Name(id=y), right=e) if y == x:
            return x not in {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}
        case A.Call(func="maximum" | "minimum", args=(A.Name(id=y), e)) if y == x:
            return x not in {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}
    return False


def legal_simd_scalar(s: A.For, before: tuple[A.Stmt, ...]) -> None:
    # Legal-SimdScalar
    outer = _assigned(before) | {p for p in _read(before)}
    for st in A.walk_stmts(s.body):
        if isinstance(st, A.Assign) and isinstance(st.target, A.Name):
            x = st.target.id
            if x in outer:
                require(_is_reduction(st, x), "Legal-SimdScalar", st.span,
                        f"loop-carried scalar: '{x}' is carried across the lanes of simd "
                        f"loop '{s.var}' but is not a reduction")


def legal_atomic(s: A.Assign) -> None:
    # Legal-Atomic
    require(isinstance(s.target, A.Subscript) and s.op == "+", "Legal-Atomic", s.span,
            "bad atomic: '#pragma atomic' needs an array update 'A[...] += e'")


def lane_reduction(loop: A.For, stmt: A.Assign | None) -> bool:
    """`X[idx] += e` in a simd loop, idx invariant in the loop, is a reduction of the
    lanes into one cell (Listing 4, spmv: `y[i] += A_val[j] * x[col]`).

    Note: the paper shows the idiom without stating the rule; gpusem reads it as a
    declared reduction when no name in idx is the loop variable or assigned in the loop
    body (proofs_notes/errata.md, "simd cell reductions")."""
    if stmt is None or stmt.op != "+" or not isinstance(stmt.target, A.Subscript):
        return False
    varying = {loop.var} | _assigned(loop.body)
    names = {n.id for i in stmt.target.indices for n in A.walk_expr(i)
             if isinstance(n, A.Name)}
    return not (names & varying)
