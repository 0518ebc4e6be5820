"""The constructs of the APPy language a program exercises (the coverage table, issue 17).

One name per construct of seed 003's Sections 3-4 and of the forms its 20 NPBench
kernels (Section 6) use; `features(fn, sizes)` reads them off a program's AST and its
sizes, so generated programs, bundles and hand-written files are counted alike. The
campaign counts programs per construct (per 10,000 programs); a construct at 0 means
the generator no longer reaches that part of the language (tests/appy/test_coverage.py).

The same names are the vocabulary of the known causes' triggers (`causes.py`).
"""

from __future__ import annotations

from gpusem.calculus.appy import ast as A

# construct -> where the paper has it
CONSTRUCTS: dict[str, str] = {
    "parallel_for": "3.1 `#pragma parallel for`",
    "parallel_for_simd": "3.2 `#pragma parallel for simd` (Listings 4, 5)",
    "simd_loop": "3.2 `#pragma simd` on an inner loop (Listings 4, 6)",
    "simd_width": "3.2 `simd(w)`: an explicit chunk width",
    "sequential_for": "3.1 `#pragma sequential for` (trisolv)",
    "loop_step": "a loop step other than 1",
    "loop_offset": "a loop starting elsewhere than 0 (stencils: range(1, N-1))",
    "simd_step": "a simd loop with a step (`parallel for simd` over range(0, N, 2))",
    "nested_parallel": "5.3 nested `parallel for` (a 2-D grid)",
    "host_loop_around_parallel": "a host loop around kernels (time steps: jacobi_2d, "
                                 "heat_3d, fdtd_2d)",
    "plain_loop_in_worker": "a sequential loop inside a worker (gramschmidt, symm)",
    "triangular_bounds": "inner loop bounds from the outer index (cholesky, syrk, trmm)",
    "bounds_from_array": "inner loop bounds read from arrays (spmv, Listing 4)",
    "private_scalar": "3.3 a scalar private to a worker",
    "reduction_clause": "`reduction(+:x)` (appyc's clause)",
    "reduction_nonliteral_init": "a reduction whose initial value is not a literal",
    "atomic": "3.4 `#pragma atomic` (Listing 5)",
    "atomic_indirect": "3.4 an atomic update at an indirect index (histogram)",
    "atomic_fixed_cell": "Listing 5: an atomic update of one fixed cell (`s[0] += A[i]`)",
    "atomic_invariant_index": "an atomic update whose index names no loop variable "
                              "(`s[0]`, or `H[l]` through a private label)",
    "atomic_tensor": "Listing 2: `#pragma atomic` on a tensor statement (group_by_sum)",
    "simd_scalar_sum": "Listing 6: a scalar sum carried across simd lanes",
    "simd_scalar_maxmin": "Listing 6: a scalar maximum/minimum across simd lanes",
    "simd_cell_reduction": "Listing 4: `y[i] += ...` in a simd loop (spmv)",
    "simd_augassign": "an in-place update `C[i] op= e` in a simd loop",
    "simd_add_augassign": "`C[i] += e` in a simd loop",
    "simd_if": "an `if` inside a simd loop",
    "masked_tail": "3.2 a trip count that is not a multiple of the chunk (a masked tail)",
    "shifted_read": "a read at a shifted index A[i+k] (stencils)",
    "in_place_update": "`C[i] op= e` or `C[i] = f(C[i])` (in-place updates)",
    "shifted_self_assign": "5.1.1 a tensor statement reading its target shifted",
    "if_in_loop": "`if` in a loop",
    "if_else": "`if`/`else`",
    "conditional_expr": "`x if c else y` (appyc's ternary pass)",
    "nested_conditional": "a conditional expression inside another one",
    "reduction_invariant_rhs": "a `reduction(+:x)` update adding a value that names no "
                               "loop variable (`acc += 1.5`)",
    "reduction_const_branch": "a `reduction(+:x)` update whose value has a constant "
                              "branch (`acc += where(A[i] > 0, 2, A[i])`)",
    "where": "Section 2: `appy.where(c, x, y)`",
    "bitwise_logic": "`&` / `|` on conditions or integers",
    "int_floordiv_mod": "Python's `//` and `%` on integers (floor)",
    "math_unary": "Section 2: exp, log, sqrt, abs, sin, cos, tanh",
    "math_binary": "np.maximum / np.minimum",
    "indirect_read": "indirect indexing A[idx[i]] (spmv, kmeans)",
    "negative_index": "Python's negative index A[-k]",
    "scalar_param": "a scalar parameter in an expression (alpha, beta)",
    "vidx": "3.2 `appy.vidx(i, w, N)` strip-mining",
    "mvl": "3.2 `appy.MVL`",
    "tensor_top": "4 a tensor statement outside any loop",
    "tensor_in_worker": "Listing 6: a tensor expression inside a worker",
    "tensor_parallel_dim": "4.2 `slice=>parallel`",
    "tensor_simd_dim": "4.2 `slice=>simd`",
    "tensor_reduce_dim": "4.2 `slice=>reduce(sum)` / `reduction(sum:y)`",
    "le_prop": "4.2 `le(C)`",
    "tensor_reduce": "4.1 sum/max/min of a slice",
    "tensor_axis_reduce": "4.1 `sum(A[:M, :N], axis=1)`",
    "broadcast": "4.1 `None` in an index (broadcast)",
    "stencil_slices": "4.1 shifted slices of one dimension (jacobi_2d, Listing 7)",
    "mv_dot": "Listing 7: `appy.mv` / `appy.dot`",
    "data_clause_to": "appyc's `to(..)` data clause",
    "data_clause_from": "appyc's `from(..)` data clause",
    "return_stmt": "`return` from the host function",
    "rank3": "3-D arrays (heat_3d)",
    "multi_kernel": "two or more kernels in one function",
    "dtype_float32": "float32 data",
    "dtype_float64": "float64 data",
    "dtype_int32": "int32 data",
    "dtype_int64": "int64 data",
}

_PAR = (A.ParallelFor, A.SequentialFor)
BINARY = ("maximum", "minimum")


def features(fn: A.Function, sizes: dict[str, int] | None = None,
             dtypes: tuple[str, ...] = (), kernels: int = 1) -> set[str]:
    """The constructs `fn` exercises (names of CONSTRUCTS)."""
    sizes = sizes or {}
    out = {f"dtype_{d}" for d in dtypes if f"dtype_{d}" in CONSTRUCTS}
    if kernels > 1:
        out.add("multi_kernel")
    scalars = {p.name for p in fn.params if not p.is_array}
    _walk(fn.body, out, sizes, scalars, loops=(), top=True)
    return out


def _walk(body: tuple[A.Stmt, ...], out: set[str], sizes: dict[str, int],
          scalars: set[str], loops: tuple[A.For, ...], top: bool) -> None:
    inits: dict[str, A.Expr] = {}  # scalar -> its last assigned value in this block
    for s in body:
        if isinstance(s, A.Assign) and isinstance(s.target, A.Name) and s.op is None:
            inits[s.target.id] = s.value
        if isinstance(s, A.For) and isinstance(s.directive, A.ParallelFor) and any(
                not isinstance(inits.get(x), (A.Const, type(None)))
                for x in s.directive.reduction):
            out.add("reduction_nonliteral_init")
        for e in A.stmt_exprs(s):
            _expr(e, out, scalars, loops)
        match s:
            case A.For():
                _loop(s, out, sizes, scalars, loops, top)
                _walk(s.body, out, sizes, scalars, loops + (s,), top=False)
            case A.If(body=then, orelse=orelse):
                if loops:
                    out.add("if_in_loop")
                if orelse:
                    out.add("if_else")
                if any(isinstance(x.directive, (A.Simd, A.ParallelFor)) and (
                        x.directive.simd if isinstance(x.directive, A.ParallelFor)
                        else True) for x in loops[-1:]):
                    out.add("simd_if")
                _walk(then, out, sizes, scalars, loops, top)
                _walk(orelse, out, sizes, scalars, loops, top)
            case A.Assign():
                _assign(s, out, scalars, loops, top)
            case A.Return():
                out.add("return_stmt")


def _is_simd(loop: A.For) -> bool:
    d = loop.directive
    return isinstance(d, A.Simd) or (isinstance(d, A.ParallelFor) and d.simd)


def _loop(s: A.For, out: set[str], sizes: dict[str, int], scalars: set[str],
          loops: tuple[A.For, ...], top: bool) -> None:
    d = s.directive
    outer_vars = {x.var for x in loops}
    if isinstance(d, A.ParallelFor):
        out.add("parallel_for_simd" if d.simd else "parallel_for")
        if d.width:
            out.add("simd_width")
        if d.reduction:
            out.add("reduction_clause")
        if d.to:
            out.add("data_clause_to")
        if d.from_:
            out.add("data_clause_from")
        if any(isinstance(x.directive, A.ParallelFor) for x in loops):
            out.add("nested_parallel")
        if loops and loops[0].directive is None:
            out.add("host_loop_around_parallel")
    elif isinstance(d, A.Simd):
        out.add("simd_loop")
        if d.width:
            out.add("simd_width")
    elif isinstance(d, A.SequentialFor):
        out.add("sequential_for")
    elif any(isinstance(x.directive, _PAR) for x in loops):
        out.add("plain_loop_in_worker")
    if s.step != A.Const(1):
        out.add("loop_step")
        if _is_simd(s):
            out.add("simd_step")
    if s.start != A.Const(0):
        out.add("loop_offset")
    names = {n.id for e in (s.start, s.stop) for n in A.walk_expr(e)
             if isinstance(n, A.Name)}
    if names & outer_vars:
        out.add("triangular_bounds")
    if any(isinstance(n, A.Subscript) for e in (s.start, s.stop) for n in A.walk_expr(e)):
        out.add("bounds_from_array")
    if _is_simd(s) or isinstance(d, A.ParallelFor):
        width = (d.width if isinstance(d, (A.Simd, A.ParallelFor)) else None) or 128
        trip = _trip(s, sizes)
        if trip is not None and _is_simd(s) and trip % width:
            out.add("masked_tail")
    if _is_simd(s):
        body = tuple(A.walk_stmts(s.body))
        for st in body:
            if isinstance(st, A.Assign) and isinstance(st.target, A.Name):
                if isinstance(st.value, A.Call) and st.value.func in BINARY:
                    out.add("simd_scalar_maxmin")
                elif st.op == "+" or isinstance(st.value, A.BinOp) and (
                        st.value.left == st.target):
                    out.add("simd_scalar_sum")
            if isinstance(st, A.Assign) and isinstance(st.target, A.Subscript) and st.op:
                idx = {n.id for i in st.target.indices for n in A.walk_expr(i)
                       if isinstance(n, A.Name)}
                out.add("simd_augassign" if s.var in idx else "simd_cell_reduction")
                if s.var in idx and st.op == "+":
                    out.add("simd_add_augassign")


def _trip(s: A.For, sizes: dict[str, int]) -> int | None:
    vals = [_value(e, sizes) for e in (s.start, s.stop, s.step)]
    if any(v is None for v in vals) or vals[2] == 0:
        return None
    lo, hi, st = (int(v) for v in vals if v is not None)
    return len(range(lo, hi, st))


def _value(e: A.Expr, sizes: dict[str, int]) -> int | None:
    match e:
        case A.Const(value=int() as v):
            return v
        case A.Name(id=n):
            return sizes.get(n)
        case A.Mvl():
            return 128
        case A.BinOp(op="+" | "-" | "*" as op, left=a, right=b):
            x, y = _value(a, sizes), _value(b, sizes)
            if x is None or y is None:
                return None
            return x + y if op == "+" else x - y if op == "-" else x * y
    return None


def _assign(s: A.Assign, out: set[str], scalars: set[str], loops: tuple[A.For, ...],
            top: bool) -> None:
    in_worker = any(isinstance(x.directive, _PAR) for x in loops)
    tensor = _has_slice(s.target) or any(_has_slice(e) for e in A.walk_expr(s.value)
                                         if isinstance(e, A.Subscript))
    if isinstance(s.target, A.Name) and in_worker:
        out.add("private_scalar")
    if s.atomic:
        out.add("atomic")
        if isinstance(s.target, A.Subscript) and any(
                isinstance(x, A.Subscript) for i in s.target.indices
                for x in A.walk_expr(i)) or (isinstance(s.target, A.Subscript) and any(
                isinstance(i, A.Name) and i.id not in {x.var for x in loops}
                and i.id not in scalars for i in s.target.indices)):
            out.add("atomic_indirect")
        if tensor:
            out.add("atomic_tensor")
        if isinstance(s.target, A.Subscript) and all(
                isinstance(i, A.Const) for i in s.target.indices):
            out.add("atomic_fixed_cell")
        names = {n.id for i in s.target.indices for n in A.walk_expr(i)
                 if isinstance(n, A.Name)} if isinstance(s.target, A.Subscript) else set()
        if not tensor and not names & {x.var for x in loops}:
            out.add("atomic_invariant_index")
    if tensor:
        out.add("tensor_top" if not loops else "tensor_in_worker")
    _reduction_update(s, out, loops)
    if s.pragma is not None:
        for d in s.pragma.dims:
            if d.parallel:
                out.add("tensor_parallel_dim")
            if d.simd:
                out.add("tensor_simd_dim")
            if d.reduce:
                out.add("tensor_reduce_dim")
            if d.le:
                out.add("le_prop")
    if isinstance(s.target, A.Subscript):
        same = [x for x in A.walk_expr(s.value)
                if isinstance(x, A.Subscript) and x.array == s.target.array]
        if s.op or any(x.indices == s.target.indices for x in same):
            out.add("in_place_update")
        if tensor and any(x.indices != s.target.indices for x in same):
            out.add("shifted_self_assign")
    if isinstance(s.target, A.Name) and s.op and loops and isinstance(
            loops[-1].directive, A.ParallelFor) and s.target.id in (
            loops[-1].directive.reduction):
        pass  # the clause's own update (counted as reduction_clause)


def _reduction_update(s: A.Assign, out: set[str], loops: tuple[A.For, ...]) -> None:
    """`acc += e` or `acc = acc + e` of a `reduction(+:acc)` clause of the innermost
    loop: is `e` loop-invariant, or a lane choice with a constant branch (issue 24:
    the two ways appyc's block reduction miscounts, causes.py)."""
    if not (isinstance(s.target, A.Name) and loops and isinstance(
            loops[-1].directive, A.ParallelFor)
            and s.target.id in loops[-1].directive.reduction):
        return
    rhs: A.Expr = s.value
    if s.op is None:
        if not (isinstance(rhs, A.BinOp) and rhs.left == s.target):
            return
        rhs = rhs.right
    var = loops[-1].var
    if not _names(rhs, var):
        out.add("reduction_invariant_rhs")
    elif any(isinstance(x, A.Where) and not (_names(x.then, var) and _names(
            x.orelse, var)) for x in A.walk_expr(rhs)) or any(
            isinstance(x, A.Call) and x.func in BINARY
            and not all(_names(a, var) for a in x.args) for x in A.walk_expr(rhs)):
        # a lane choice with a constant side: `where(c, 3, A[i])`, or
        # `np.maximum(3, A[i])`, which is 3 on a masked-off lane (its load reads 0):
        # the 2-hour campaign's two `wrong:unknown:...simd_scalar_maxmin` signatures,
        # off by 3 x 1023 (results/appy/cpu_2h_issue24)
        out.add("reduction_const_branch")


def _names(e: A.Expr, var: str) -> bool:
    return any(isinstance(x, A.Name) and x.id == var for x in A.walk_expr(e))


def _has_slice(e: A.Expr) -> bool:
    return isinstance(e, A.Subscript) and any(isinstance(i, (A.Slice, A.NewAxis))
                                              for i in e.indices)


def _expr(e: A.Expr, out: set[str], scalars: set[str], loops: tuple[A.For, ...]) -> None:
    loop_vars = {x.var for x in loops}
    for x in A.walk_expr(e):
        match x:
            case A.Where(ternary=True, cond=c, then=t, orelse=o):
                out.add("conditional_expr")
                if any(isinstance(y, A.Where) and y.ternary for part in (c, t, o)
                       for y in A.walk_expr(part)):
                    out.add("nested_conditional")
            case A.Where():
                out.add("where")
            case A.BinOp(op="&" | "|"):
                out.add("bitwise_logic")
            case A.BinOp(op="//" | "%"):
                out.add("int_floordiv_mod")
            case A.Call(func=f, axis=axis):
                if f in A.UNARY_FUNS:
                    out.add("math_unary")
                elif f in A.BINARY_FUNS:
                    out.add("math_binary")
                elif f in A.PRODUCT_FUNS:
                    out.add("mv_dot")
                elif f in A.REDUCE_FUNS:
                    out.add("tensor_reduce")
                    if axis is not None:
                        out.add("tensor_axis_reduce")
            case A.Vidx():
                out.add("vidx")
            case A.Mvl():
                out.add("mvl")
            case A.NewAxis():
                out.add("broadcast")
            case A.Name(id=n) if n in scalars and loops:
                out.add("scalar_param")
            case A.Subscript(indices=ix):
                _subscript(x, ix, out, loop_vars)


def _subscript(x: A.Subscript, ix: tuple[A.Expr, ...], out: set[str],
               loop_vars: set[str]) -> None:
    if len(ix) >= 3:
        out.add("rank3")
    for i in ix:
        if any(isinstance(y, A.Subscript) for y in A.walk_expr(i)):
            out.add("indirect_read")
        if isinstance(i, A.Const) and isinstance(i.value, int) and i.value < 0:
            out.add("negative_index")
        if isinstance(i, A.BinOp) and i.op in "+-" and isinstance(i.left, A.Name) and (
                i.left.id in loop_vars):
            if isinstance(i.right, A.Const) and i.right.value != 0:
                out.add("shifted_read")
            elif isinstance(i.right, A.Name) and i.op == "-":
                out.add("negative_index")  # A[i - N]: Python's wrap-around
        if isinstance(i, A.Slice) and (i.lower not in (None, A.Const(0)) or isinstance(
                i.upper, A.BinOp)):
            out.add("stencil_slices")
