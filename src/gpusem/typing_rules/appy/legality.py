"""Directive legality for APPy (seed 003, Sections 3.1-3.4, 4.2, Appendix B.1).

When is a program's parallel reading defined, so that the compiler owes us the result of
the sequential reading? The paper leaves the check to the programmer ("the `simd`
directive relies on the programmer to check for dependences"); gpusem decides it, so that
a mismatch is blamed on the program or on the compiler, never guessed.

Static rules (`check_static`), each one function:
  Legal-Range         a parallel loop's trip count is known at launch: no array reads in
                      its bounds (3.1 "no dynamic parallelism")
  Legal-Private       a scalar assigned inside a parallel region is private to a worker:
                      no read inside the region is reached by a definition from outside
                      it or from another iteration (3.3 "no multiple reaching definitions
                      from inside and outside"), and no read after it is reached by the
                      workers' definition, unless it is a `reduction(+:x)` variable.
                      Flow-sensitive: a name assigned again before it is read is a new
                      variable (errata: "private scalars are flow-sensitive")
  Legal-SimdScalar    a scalar a `simd` loop carries across lanes (read before assigned
                      in its body, or read after the loop) must be a reduction
                      `x = x + e` / `x += e` / `x = np.maximum(x, e)` (the softmax idiom,
                      Listing 6); anything else is a loop-carried scalar
  Legal-Atomic        `#pragma atomic` marks `A[...] += e` (3.4)
  Legal-Data          appyc's data clauses `to(..)`/`from(..)` name array parameters
  Legal-Return        `return` only in the host code (not inside a loop)
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

Cont = tuple[A.Stmt, ...]  # what may run after a statement (its continuation)


def check_static(fn: A.Function) -> None:
    _check_body(fn.body, (), top=True, arrays={p.name for p in fn.params if p.is_array})


def _check_body(body: tuple[A.Stmt, ...], cont: Cont, *, top: bool,
                arrays: set[str]) -> None:
    """Each rule at each statement; `cont` is what runs after `body` ends (the rest
    of the enclosing blocks, and an enclosing loop's body again: its next iteration)."""
    for i, s in enumerate(body):
        after = body[i + 1:] + cont
        match s:
            case A.For(directive=A.ParallelFor() | A.SequentialFor()):
                legal_range(s)
                legal_private(s, body[:i], after)
                legal_data(s, arrays)
            case A.For(directive=A.Simd()):
                legal_simd_scalar(s, after)
            case A.Assign(atomic=True):
                legal_atomic(s)
            case A.Return():
                legal_return(s, top)
            case _:
                pass
        match s:
            case A.For(body=inner):
                _check_body(inner, inner + after, top=False, arrays=arrays)
            case A.If(body=then, orelse=orelse):
                _check_body(then, after, top=top, arrays=arrays)
                _check_body(orelse, after, top=top, arrays=arrays)
            case A.Assign() | A.Return():
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


def _names(e: A.Expr) -> set[str]:
    return {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}


def exposed(body: tuple[A.Stmt, ...]) -> set[str]:
    """Scalars read in `body` before every path through it has assigned them: the
    upward-exposed uses (a read reached by a definition from before `body`)."""
    out, _ = _flow(body, set())
    return out


def _flow(body: tuple[A.Stmt, ...], defined: set[str]) -> tuple[set[str], set[str]]:
    """(upward-exposed reads, names surely assigned after `body`), given `defined`."""
    ue: set[str] = set()
    defined = set(defined)
    for s in body:
        match s:
            case A.Assign(target=A.Name(id=x), value=v, op=op):
                ue |= (_names(v) | ({x} if op else set())) - defined
                defined.add(x)
            case A.Assign(target=t, value=v):
                ue |= (_names(t) | _names(v)) - defined
            case A.If(cond=c, body=then, orelse=orelse):
                ue |= _names(c) - defined
                ue_t, d_t = _flow(then, defined)
                ue_o, d_o = _flow(orelse, defined)
                ue |= ue_t | ue_o
                defined = d_t & d_o
            case A.For(var=var, start=a, stop=b, step=c, body=inner):
                ue |= (_names(a) | _names(b) | _names(c)) - defined
                ue_i, _ = _flow(inner, defined | {var})
                ue |= ue_i  # may run zero times: defines nothing for sure
            case A.Return(value=v):
                ue |= (set() if v is None else _names(v)) - defined
                return ue, defined | _everything(body)  # nothing after runs
    return ue, defined


def _everything(body: tuple[A.Stmt, ...]) -> set[str]:
    return {n for s in A.walk_stmts(body) for e in A.stmt_exprs(s) for n in _names(e)}


def legal_private(s: A.For, before: tuple[A.Stmt, ...], after: Cont) -> None:
    # Legal-Private (Section 3.3), flow-sensitive: a scalar assigned by the workers is
    # private; a read of it inside the region that an outside (or another iteration's)
    # definition reaches, or a read after the region that the workers' definition
    # reaches, is illegal. A name merely reused later (defined again before any read)
    # is a different variable (gemver, covariance).
    red = set(s.directive.reduction) if isinstance(s.directive, A.ParallelFor) else set()
    inside = _assigned(s.body) - red
    carried = sorted(inside & exposed(s.body))
    shared = [x for x in carried if x in _assigned(before)]
    require(not shared, "Legal-Private", s.span,
            f"shared scalar written: '{(shared + [''])[0]}' is assigned both outside and "
            f"inside parallel loop '{s.var}' (make it an array of size 1)")
    require(not carried, "Legal-Private", s.span,
            f"loop-carried scalar: '{(carried + [''])[0]}' is read by a worker of loop "
            f"'{s.var}' before that worker assigns it")
    escape = sorted(inside & exposed(after))
    require(not escape, "Legal-Private", s.span,
            f"private scalar escapes: '{(escape + [''])[0]}' is private to the workers "
            f"of loop '{s.var}' but read after it")


def legal_data(s: A.For, arrays: set[str]) -> None:
    # Legal-Data: appyc's data clauses `to(..)`/`from(..)` name arrays
    if isinstance(s.directive, A.ParallelFor):
        bad = [x for x in s.directive.to + s.directive.from_ if x not in arrays]
        require(not bad, "Legal-Data", s.span,
                f"bad data clause: '{(bad + [''])[0]}' is not an array parameter")


def legal_return(s: A.Return, top: bool) -> None:
    # Legal-Return: `return` ends the host function; a worker or lane cannot return
    require(top, "Legal-Return", s.span,
            "bad return: 'return' inside a loop (only the host code returns)")


def _is_reduction(st: A.Assign, x: str) -> bool:
    if st.op == "+":
        return x not in {n.id for n in A.walk_expr(st.value) if isinstance(n, A.Name)}
    match st.value:
        case A.BinOp(op="+", left=A.Name(id=y), right=e) if y == x:
            return x not in {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}
        case A.Call(func="maximum" | "minimum", args=(A.Name(id=y), e)) if y == x:
            return x not in {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}
    return False


def legal_simd_scalar(s: A.For, after: Cont) -> None:
    # Legal-SimdScalar: a scalar the lanes carry (read before assigned in the body) or
    # leave behind (read after the loop) must be a reduction; one assigned before it is
    # read in every lane is lane-private
    for x in sorted(simd_shared(s, after)):
        for st in A.walk_stmts(s.body):
            if isinstance(st, A.Assign) and isinstance(st.target, A.Name) and (
                    st.target.id == x):
                require(_is_reduction(st, x), "Legal-SimdScalar", st.span,
                        f"loop-carried scalar: '{x}' is carried across the lanes of simd "
                        f"loop '{s.var}' but is not a reduction")


def simd_shared(s: A.For, after: Cont = ()) -> set[str]:
    """Scalars assigned in simd loop `s` that are not lane-private: read in the body
    before assigned there, or read after the loop."""
    return _assigned(s.body) & (exposed(s.body) | exposed(after))


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
