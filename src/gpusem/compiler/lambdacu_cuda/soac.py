"""Kernels (kexp, 5.2) -> one host function per kernel and the `__global__` functions
its SOAC applications launch (seed 002, Sec 10; Sec 12.3 for FILTER).

Each `let x.. = SOAC args s` is one launch over s threads, except:
  REDUCE, SCAN   a launch that materialises the thunk's components, then per operator
                 the block-level fold of lambdacu_rt.cuh (multi-pass: one partial or
                 block sum per block, folded again until one block is left);
  FILTER,        map + scan + scatter (Sec 12.3): the rows and the predicate's flags,
  PARTITION      an inclusive iadd scan of the flags (u_i of SOAC-FILTER), and a
                 scatter of kept row i to u_i - 1 (the false side to i - u_i);
  PERMUTE        a scatter; out-of-bounds and not-1:1 indices are the interpreter's
                 traps, raised through the device error flag (a claim array finds
                 two elements sent to one place).

Conventions: the kernel's environment V -> a `Scope` of host C names (the device
functions take the `using` variables under the same names); a SOAC application ->
`app`; its component types -> `elems` (the checker's, per application).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.signatures import ROP_TYPES
from gpusem.calculus.lambdacu.values import ArrayT, Base, Type
from gpusem.compiler.lambdacu_cuda.faults import fault_on
from gpusem.compiler.lambdacu_cuda.thread import C_BASE, Scope, c_type, emit_g

Elems = dict[int, tuple[str, ...]]
GID = "  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;"


@dataclass
class Lowered:
    """What a kernel becomes: device text, and the host function's statements."""

    device: list[str] = field(default_factory=list)
    host: list[str] = field(default_factory=list)
    rops: set[str] = field(default_factory=set)


@dataclass
class _Cx:
    kernel: str
    elems: Elems
    out: Lowered
    count: list[int] = field(default_factory=lambda: [0])

    def fresh_kernel(self) -> str:
        self.count[0] += 1
        return f"{self.kernel}_{self.count[0]}"


def lower_kernel(k: ast.Kernel, elems: Elems, out: Lowered) -> str:
    """The host function `run_<k>` (its text), its kernels appended to `out`."""
    sc = Scope({})
    params = []
    for p in k.params:
        sc, c = sc.bind(p.name, p.type, "h")
        params.append(f"{c_type(p.type)} {c}")
    cx = _Cx(f"k_{k.name}", elems, out)
    body: list[str] = []
    e: ast.KExp = k.body
    while isinstance(e, ast.KLet):
        sc = _let(cx, sc, [e], body)
        e = e.body
    results = [sc.names[x][0] for x in e.names]
    ret = results[0] if len(results) == 1 else "std::make_tuple(" + ", ".join(
        results) + ")"
    body.append(f"  return {ret};")
    return (f"static {c_type(k.ret)} run_{k.name}({', '.join(params)}) {{\n"
            + "\n".join(body) + "\n}\n")


def _size(sc: Scope, s: ast.Size | None) -> str:
    assert s is not None, "the checker admits no SOAC but ONCE without a size"
    if isinstance(s, ast.Len):
        return f"{sc.names[s.name][0]}.n"
    return sc.atom(s)


def _let(cx: _Cx, sc: Scope, group: list[ast.KLet], host: list[str]) -> Scope:
    """KERN-LET: the launches of one application."""
    app = group[0].app
    if app.soac == "ONCE":
        return _once(cx, sc, group[0], host)
    n = sc.temp("n")
    host.append(f"  const int {n} = {_size(sc, app.size)};")
    host.append(f"  if ({n} < 0) lc_host_trap(LC_NEG_SIZE);")
    if app.soac == "MAP":
        return _maps(cx, sc, n, group, host)
    if app.soac == "PERMUTE":
        return _permute(cx, sc, n, group[0], host)
    if app.soac in ("REDUCE", "SCAN"):
        return _fold(cx, sc, n, group[0], host)
    return _filter(cx, sc, n, group[0], host)


def _thunks(app: ast.SoacApp) -> list[ast.Thunk]:
    return [a for a in app.args if isinstance(a, ast.Thunk)]


def _using(sc: Scope, thunks: list[ast.Thunk], skip: set[str]) -> list[str]:
    names: list[str] = []
    for t in thunks:
        names += [x for x in t.using if x not in names and x not in skip]
    return names


def _run_thunk(sc: Scope, t: ast.Thunk, args: tuple[tuple[str, Type], ...],
               outs: tuple[str, ...], lines: list[str]) -> None:
    """IDX-THUNK: the thunk's parameters bound to `args` (C expressions)."""
    inner = Scope({x: sc.names[x] for x in t.using}, sc.fresh)
    for name, (expr, ty) in zip(t.params, args, strict=False):
        inner, c = inner.bind(name, ty)
        lines.append(f"  const {c_type(ty)} {c} = {expr};")
    emit_g(t.body, inner, outs, "  ", lines)


def _global(cx: _Cx, name: str, params: list[str], body: list[str]) -> None:
    cx.out.device.append(f"__global__ void {name}({', '.join(params)}) {{\n"
                         + "\n".join(body) + "\n}\n")


def _decl(names: list[str], sc: Scope) -> list[str]:
    return [f"{c_type(sc.names[x][1])} {sc.names[x][0]}" for x in names]


def _rows(cx: _Cx, sc: Scope, app: ast.SoacApp, tag: str, lines: list[str]
          ) -> tuple[list[str], list[str]]:
    """Declare the row registers r<tag>_k of `app`'s first thunk and compute them."""
    tys = cx.elems[id(app)]
    rows = [f"r{tag}_{k}" for k in range(len(tys))]
    lines += [f"  {C_BASE[t]} {r};" for t, r in zip(tys, rows, strict=True)]
    _run_thunk(sc, _thunks(app)[0], (("gid", Base("int")),), tuple(rows), lines)
    return rows, list(tys)


def _bind_arrays(sc: Scope, names: tuple[str, ...], tys: list[str], n: str,
                 host: list[str]) -> tuple[Scope, list[str]]:
    cs = []
    for name, t in zip(names, tys, strict=True):
        sc, c = sc.bind(name, ArrayT(t), "h")
        host.append(f"  Arr<{C_BASE[t]}> {c} = lc_alloc<{C_BASE[t]}>({n});")
        cs.append(c)
    return sc, cs


def _maps(cx: _Cx, sc: Scope, n: str, group: list[ast.KLet],
          host: list[str]) -> Scope:
    """SOAC-MAP (a list of lets: one __global__ may compute several MAPs)."""
    name = cx.fresh_kernel()
    lines = [GID, "  if (gid >= n) return;"]
    outs: list[str] = []
    produced: set[str] = set()
    thunks: list[ast.Thunk] = []
    for j, let in enumerate(group):
        rows, tys = _rows(cx, sc, let.app, str(j), lines)
        sc, cs = _bind_arrays(sc, let.names, tys, n, host)
        lines += [f"  {c}.p[gid] = {r};" for c, r in zip(cs, rows, strict=True)]
        outs += cs
        produced |= set(let.names)
        thunks += _thunks(let.app)
    using = _using(sc, thunks, produced)
    params = ["int n"] + [f"{c_type(sc.names[x][1])} {sc.names[x][0]}"
                          for x in [n2 for let in group for n2 in let.names]] + _decl(
        using, sc)
    _global(cx, name, params, lines)
    args = [n] + outs + [sc.names[x][0] for x in using]
    host.append(f"  if ({n} > 0) lc_launch(lc_blocks({n}), &{name}, "
                f"{', '.join(args)});")
    return sc


def _once(cx: _Cx, sc: Scope, let: ast.KLet, host: list[str]) -> Scope:
    """SOAC-ONCE: one thread, the thunk at index 0; its scalars come back in cells."""
    name = cx.fresh_kernel()
    lines = ["  if (threadIdx.x != 0 || blockIdx.x != 0) return;"]
    t = _thunks(let.app)[0]
    tys = list(cx.elems[id(let.app)])
    rows = [f"r_{k}" for k in range(len(tys))]
    lines += [f"  {C_BASE[ty]} {r};" for ty, r in zip(tys, rows, strict=True)]
    _run_thunk(sc, t, (("0", Base("int")),), tuple(rows), lines)
    cells = [f"cell_{k}" for k in range(len(tys))]
    lines += [f"  {c}.p[0] = {r};" for c, r in zip(cells, rows, strict=True)]
    using = _using(sc, [t], set())
    params = [f"Arr<{C_BASE[ty]}> {c}" for ty, c in zip(tys, cells, strict=True)]
    _global(cx, name, params + _decl(using, sc), lines)
    tmp = []
    for ty in tys:
        c = sc.temp("cell")
        host.append(f"  Arr<{C_BASE[ty]}> {c} = lc_alloc<{C_BASE[ty]}>(1);")
        tmp.append(c)
    args = tmp + [sc.names[x][0] for x in using]
    host.append(f"  lc_launch(1, &{name}, {', '.join(args)});")
    for x, ty, c in zip(let.names, tys, tmp, strict=True):
        sc, h = sc.bind(x, Base(ty), "h")
        host.append(f"  const {C_BASE[ty]} {h} = {c}.p[0];")
    return sc


def _permute(cx: _Cx, sc: Scope, n: str, let: ast.KLet, host: list[str]) -> Scope:
    """SOAC-PERMUTE under `fixed` (L7): element i scattered to idx_i, 1:1."""
    name = cx.fresh_kernel()
    t1, t2 = _thunks(let.app)
    lines = [GID, "  if (gid >= n) return;"]
    rows, tys = _rows(cx, sc, let.app, "", lines)
    lines.append("  int d;")
    _run_thunk(sc, t2, (("gid", Base("int")),), ("d",), lines)
    lines += ["  if (d < 0 || d >= n) { lc_trap(LC_PERMUTE_BOUNDS); return; }",
              ("  if (atomicExch(&claim.p[d], 1) != 0) { lc_trap(LC_PERMUTE_1TO1); "
               "return; }")]
    sc, cs = _bind_arrays(sc, let.names, tys, n, host)
    lines += [f"  {c}.p[d] = {r};" for c, r in zip(cs, rows, strict=True)]
    using = _using(sc, [t1, t2], set())
    params = ["int n", "Arr<int> claim"] + _decl(list(let.names), sc) + _decl(using, sc)
    _global(cx, name, params, lines)
    claim = sc.temp("claim")
    host.append(f"  Arr<int> {claim} = lc_alloc<int>({n});")
    args = [n, claim] + cs + [sc.names[x][0] for x in using]
    host.append(f"  if ({n} > 0) lc_launch(lc_blocks({n}), &{name}, "
                f"{', '.join(args)});")
    return sc


def _columns(cx: _Cx, sc: Scope, n: str, app: ast.SoacApp, host: list[str],
             flags: bool = False) -> tuple[Scope, list[str], list[str], str]:
    """The map pass: the first thunk's components as arrays (and, for FILTER and
    PARTITION, the predicate's flags, 1 kept / 0 not)."""
    name = cx.fresh_kernel()
    lines = [GID, "  if (gid >= n) return;"]
    rows, tys = _rows(cx, sc, app, "", lines)
    cols = []
    for ty in tys:
        c = sc.temp("col")
        host.append(f"  Arr<{C_BASE[ty]}> {c} = lc_alloc<{C_BASE[ty]}>({n});")
        cols.append(c)
    lines += [f"  {c}.p[gid] = {r};" for c, r in zip(cols, rows, strict=True)]
    params = ["int n"] + [f"Arr<{C_BASE[t]}> {c}" for t, c in zip(tys, cols,
                                                                  strict=True)]
    thunks = _thunks(app)
    flag = ""
    if flags:
        flag = sc.temp("keep")
        host.append(f"  Arr<int> {flag} = lc_alloc<int>({n});")
        lines.append("  bool p;")
        row_args = tuple((r, Base(t)) for r, t in zip(rows, tys, strict=True))
        _run_thunk(sc, thunks[1], row_args, ("p",), lines)
        lines.append(f"  {flag}.p[gid] = p ? 1 : 0;")
        params.append(f"Arr<int> {flag}")
    using = _using(sc, thunks, set())
    _global(cx, name, params + _decl(using, sc), lines)
    args = [n] + cols + ([flag] if flag else []) + [sc.names[x][0] for x in using]
    host.append(f"  if ({n} > 0) lc_launch(lc_blocks({n}), &{name}, "
                f"{', '.join(args)});")
    return sc, cols, tys, flag


def _fold(cx: _Cx, sc: Scope, n: str, let: ast.KLet, host: list[str]) -> Scope:
    """SOAC-REDUCE and SOAC-SCAN: R per component, `id` keeps the column."""
    app = let.app
    rops = next(a for a in app.args if isinstance(a, ast.Rops)).ops
    sc, cols, tys, _ = _columns(cx, sc, n, app, host)
    for x, rop, col, ty in zip(let.names, rops, cols, tys, strict=True):
        t: Type = ArrayT(ty) if rop == "id" or app.soac == "SCAN" else Base(ty)
        sc, h = sc.bind(x, t, "h")
        if rop == "id":
            host.append(f"  const Arr<{C_BASE[ty]}> {h} = {col};")
            continue
        cx.out.rops.add(rop)
        if app.soac == "REDUCE":
            host.append(f"  const {C_BASE[ty]} {h} = lc_reduce<R_{rop}>({col});")
            continue
        host.append(f"  Arr<{C_BASE[ty]}> {h} = lc_alloc<{C_BASE[ty]}>({n});")
        host.append(f"  lc_scan<R_{rop}>({col}, {h});")
        if fault_on("scan-exclusive"):
            host.append(f"  lc_exclusive<R_{rop}>({h});")
    return sc


def _filter(cx: _Cx, sc: Scope, n: str, let: ast.KLet, host: list[str]) -> Scope:
    """SOAC-FILTER and SOAC-PARTITION under `fixed` (L4-L6): map + scan + scatter."""
    cx.out.rops.add("iadd")
    sc, cols, tys, flag = _columns(cx, sc, n, let.app, host, flags=True)
    u, count = sc.temp("u"), sc.temp("count")
    host += [f"  Arr<int> {u} = lc_alloc<int>({n});",
             f"  lc_scan<R_iadd>({flag}, {u});",
             f"  const int {count} = {n} > 0 ? {u}.p[{n} - 1] : 0;"]
    k = len(tys)
    sc, kept = _bind_arrays(sc, let.names[:k], tys, count, host)
    falses: list[str] = []
    if let.app.soac == "PARTITION":
        sc, falses = _bind_arrays(sc, let.names[k:], tys, f"{n} - {count}", host)
    name = cx.fresh_kernel()
    dst = "u.p[gid]" if fault_on("filter-off-by-one") else "u.p[gid] - 1"
    lines = [GID, "  if (gid >= n) return;", "  if (keep.p[gid]) {",
             f"    const int to = {dst};", "    if (to < 0 || to >= count) return;"]
    lines += [f"    out{j}.p[to] = col{j}.p[gid];" for j in range(k)]
    lines.append("  }" + (" else {" if falses else ""))
    if falses:
        lines += [f"    false{j}.p[gid - u.p[gid]] = col{j}.p[gid];" for j in range(k)]
        lines.append("  }")
    params = ["int n", "int count", "Arr<int> keep", "Arr<int> u"]
    params += [f"Arr<{C_BASE[t]}> col{j}" for j, t in enumerate(tys)]
    params += [f"Arr<{C_BASE[t]}> out{j}" for j, t in enumerate(tys)]
    params += [f"Arr<{C_BASE[t]}> false{j}" for j, t in enumerate(tys) if falses]
    _global(cx, name, params, lines)
    args = [n, count, flag, u] + cols + kept + falses
    host.append(f"  if ({n} > 0) lc_launch(lc_blocks({n}), &{name}, "
                f"{', '.join(args)});")
    return sc


def rop_struct(rop: str) -> str:
    """R: the operator's C type, identity and combination (5.3, signatures.py)."""
    from gpusem.compiler.lambdacu_cuda.thread import c_scalar

    base, ident = ROP_TYPES[rop]
    t = C_BASE[base.name]
    if fault_on("reduce-identity"):
        ident_c = {"int": "0", "float": "0.0f", "bool": "false"}[base.name]
    else:
        ident_c = c_scalar(ident)  # type: ignore[arg-type]
    op = {"iadd": "add", "imul": "mul", "imax": "max", "imin": "min", "iand": "and",
          "ior": "or", "ixor": "xor", "fadd": "add", "fmul": "mul", "fmax": "max",
          "fmin": "min", "band": "and", "bor": "or", "bxor": "xor"}[rop]
    tree = "false" if base.name == "float" else "true"
    return (f"struct R_{rop} {{\n  typedef {t} T;\n  static constexpr bool tree = "
            f"{tree};\n  static LC_HDM {t} id() {{ return {ident_c}; }}\n"
            f"  static LC_HDM {t} op({t} a, {t} b) {{ return lc_{op}(a, b); }}\n}};\n")
