"""SOAC applications: V; soac app ⇓s (v1, .., vn) (seed 002, 6.2, l.727-937).

Conventions: the size s -> `n`; the thunk results v^i_k -> `rows[i][k]` (element i,
component k); the predicate p^i -> `keep[i]`; u_i (an inclusive count of the kept
elements up to i) -> `u[i]`; the outputs vs_k -> `Arr` values, one per component.
Every element a thunk computes is named in its stuck states and traps
("element i of MAP").

Note: the rules index elements 0 <= i < s and fold with R (a left fold in index
order, which is what float results depend on); an empty fold is the operator's
identity (5.3). Where the printed rule is wrong, the `RuleSet` flag of its erratum
(L3-L7, errata.md) chooses the printed or the corrected reading.
"""

from __future__ import annotations

from collections.abc import Callable

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.signatures import ROP_TYPES
from gpusem.calculus.lambdacu.values import I32, Arr, Bool, Scalar, Value
from gpusem.interpreter.lambdacu.gpu import Env, apply_thunk, atom_value, index
from gpusem.interpreter.lambdacu.prims import PrimMismatch, apply_rop
from gpusem.interpreter.lambdacu.rules import Run, stuck, trap

Row = tuple[Value, ...]


def size_of(env: Env, app: ast.SoacApp, rule: str) -> int:
    s = app.size
    if s is None:
        raise stuck(rule, app.span, f"{app.soac} has no size")
    if isinstance(s, ast.Len):
        v = atom_value(env, ast.Var(s.name, s.span), rule, "the size")
        if not isinstance(v, Arr):
            raise stuck(rule, s.span, f"#{s.name} of a non-array")
        return len(v)
    v = atom_value(env, s, rule, "the size")
    if not isinstance(v, I32):
        raise stuck(rule, s.span, "the size is not an int")
    if v.value < 0:
        raise trap(rule, s.span, f"negative size: {v.value}")
    return v.value


def _thunks(app: ast.SoacApp, rule: str, k: int) -> tuple[ast.Thunk, ...]:
    ts = tuple(a for a in app.args if isinstance(a, ast.Thunk))
    folds = rule in ("SOAC-REDUCE", "SOAC-SCAN")
    if len(ts) != k or len(ts) + folds != len(app.args):
        raise stuck(rule, app.span, f"{app.soac} takes {k} thunk(s)"
                    + (" and a tuple of reduction operators"
                       if rule in ("SOAC-REDUCE", "SOAC-SCAN") else ""))
    return ts


def _column(run: Run, app: ast.SoacApp, rows: list[Row], k: int) -> Arr:
    items = []
    for i, row in enumerate(rows):
        v = row[k]
        if isinstance(v, (Arr, tuple)):
            raise stuck(f"SOAC-{app.soac}", app.span, "a thunk returned an array or "
                        "tuple component", f"element {i} of {app.soac}")
        items.append(v)
    elem = items[0].base if items else run.elems.get(id(app), ("int",) * (k + 1))[k]
    return Arr(elem, tuple(items))


def _rows(run: Run, env: Env, thunk: ast.Thunk, n: int, soac: str) -> list[Row]:
    rows = [apply_thunk(run, env, thunk, index(i), f"element {i} of {soac}")
            for i in range(n)]
    if len({len(r) for r in rows}) > 1:
        raise stuck(f"SOAC-{soac}", thunk.span, "the thunk returns tuples of "
                    "different lengths")
    return rows


def eval_soac(run: Run, env: Env, app: ast.SoacApp) -> tuple[Value, ...]:
    """⇓s, one clause per SOAC."""
    rule = f"SOAC-{app.soac}"
    if app.soac == "ONCE":  # SOAC-ONCE
        (t,) = _thunks(app, rule, 1)
        out = apply_thunk(run, env, t, index(0), "the ONCE thread")
        run.fire(rule, app.span)
        return out
    n = size_of(env, app, rule)
    if app.soac == "MAP":  # SOAC-MAP
        (t,) = _thunks(app, rule, 1)
        rows = _rows(run, env, t, n, "MAP")
        run.fire(rule, app.span)
        return _columns(run, app, rows)
    if app.soac == "PERMUTE":
        return _permute(run, env, app, n)
    if app.soac in ("REDUCE", "SCAN"):
        return _fold(run, env, app, n)
    if app.soac in ("FILTER", "PARTITION"):
        return _filter(run, env, app, n)
    raise stuck(rule, app.span, f"unknown SOAC {app.soac}")


def _columns(run: Run, app: ast.SoacApp, rows: list[Row]) -> tuple[Value, ...]:
    width = len(rows[0]) if rows else len(run.elems.get(id(app), ("int",)))
    return tuple(_column(run, app, rows, k) for k in range(width))


def _permute(run: Run, env: Env, app: ast.SoacApp, n: int) -> tuple[Value, ...]:
    """SOAC-PERMUTE. Printed: vs_k = [v^{idx_i}_k | 0 <= i < s], a gather; the text
    (and Sec 4: "permutations are required to be 1:1") scatters v^i to idx_i (L7)."""
    t1, t2 = _thunks(app, "SOAC-PERMUTE", 2)
    rows = _rows(run, env, t1, n, "PERMUTE")
    idx: list[int] = []
    for i in range(n):
        where = f"element {i} of PERMUTE"
        got = apply_thunk(run, env, t2, index(i), where)
        d = got[0] if len(got) == 1 else None
        if not isinstance(d, I32):
            raise stuck("SOAC-PERMUTE", t2.span, "the index thunk returns no int",
                        where)
        if not 0 <= d.value < n:
            raise trap("SOAC-PERMUTE", t2.span, f"permute index out of bounds: "
                       f"{d.value} not in [0, {n})", where)
        idx.append(d.value)
    if run.rules.permute_scatters:
        placed: dict[int, int] = {}
        for i, to in enumerate(idx):
            if to in placed:
                raise trap("SOAC-PERMUTE", t2.span, f"permute not 1:1: elements "
                           f"{placed[to]} and {i} both go to {to}")
            placed[to] = i
        out = [rows[placed[j]] for j in range(n)]
    else:
        out = [rows[idx[i]] for i in range(n)]
    run.fire("SOAC-PERMUTE", app.span)
    return _columns(run, app, out)


def _fold(run: Run, env: Env, app: ast.SoacApp, n: int) -> tuple[Value, ...]:
    """SOAC-REDUCE (R over all of 0 <= i < s) and SOAC-SCAN (R over 0..j, for each j:
    inclusive, as printed; VCODE's scans are exclusive, errata L10)."""
    rule = f"SOAC-{app.soac}"
    (t,) = _thunks(app, rule, 1)
    rops = next(a for a in app.args if isinstance(a, ast.Rops)).ops
    rows = _rows(run, env, t, n, app.soac)
    if rows and len(rows[0]) != len(rops):
        raise stuck(rule, app.span, f"{len(rops)} reduction operators for a thunk of "
                    f"{len(rows[0])} components")
    out: list[Value] = []
    for k, rop in enumerate(rops):
        column = _column(run, app, rows, k)
        if rop == "id":
            out.append(column)
            continue
        acc: Scalar | None = None
        prefix: list[Scalar] = []
        for i, v in enumerate(column.items):
            try:
                acc = v if acc is None else apply_rop(rop, acc, v)
            except PrimMismatch:
                raise stuck(rule, app.span, f"{rop} does not fold a {v.base}",
                            f"element {i} of {app.soac}") from None
            prefix.append(acc)
        if app.soac == "REDUCE":
            out.append(acc if acc is not None else ROP_TYPES[rop][1])
        else:
            out.append(Arr(ROP_TYPES[rop][0].name, tuple(prefix)))
    run.fire(rule, app.span)
    return tuple(out)


def _filter(run: Run, env: Env, app: ast.SoacApp, n: int) -> tuple[Value, ...]:
    """SOAC-FILTER and SOAC-PARTITION: u_i = sum_{j<=i} [p_j], o_i = min_{u_j = i} j,
    vs_k = [v^{o_i}_k | 0 <= i < u_s] (and, for PARTITION, the false side
    [v^{i - o_i}_k | 0 <= i < s - u_s]); errata L4-L6 say what is wrong with them."""
    rule = f"SOAC-{app.soac}"
    t1, t2 = _thunks(app, rule, 2)
    rows = _rows(run, env, t1, n, app.soac)
    keep: list[bool] = []
    for i, row in enumerate(rows):
        where = f"element {i} of {app.soac}"
        p = apply_thunk(run, env, t2, row, where)
        if len(p) != 1 or not isinstance(p[0], Bool):
            raise stuck(rule, t2.span, "the predicate returns no bool", where)
        keep.append(p[0].value)
    u = [sum(keep[: i + 1]) for i in range(n)]
    if not run.rules.filter_count_in_range:
        raise stuck(rule, app.span, f"u_s reads p_s, one past the last element "
                    f"p_{n - 1} (errata L4)")
    count = u[-1] if u else 0
    off = 1 if run.rules.filter_index_off_by_one else 0

    def o(i: int) -> int:
        js = [j for j in range(n) if u[j] == i + off]
        if not js:
            raise stuck(rule, app.span, f"o_{i} = min {{j | u_j = {i + off}}} of an "
                        "empty set (errata L5)")
        return js[0]

    kept = [rows[o(i)] for i in range(count)]
    out = _columns(run, app, kept)
    if app.soac == "PARTITION":
        out += _columns(run, app, _false_side(run, app, rows, keep, o, count))
    run.fire(rule, app.span)
    return out


def _false_side(run: Run, app: ast.SoacApp, rows: list[Row], keep: list[bool],
                o: Callable[[int], int], count: int) -> list[Row]:
    n = len(rows)
    if run.rules.partition_false_side:
        return [rows[j] for j in range(n) if not keep[j]]
    out = []
    for i in range(n - count):
        j = i - o(i)
        if not 0 <= j < n:
            raise stuck("SOAC-PARTITION", app.span, f"v^(i - o_i) reads element {j} "
                        f"for i = {i} (errata L6)")
        out.append(rows[j])
    return out
