"""GPU IR parser: `.gpuir` text -> `calculus.gpuir.ast` (Figures 1-2 of Exo-GPU).

Two stages. Lark (LALR, `grammar.lark`, Python layout via `Indenter`) builds a parse
tree in which every name is just a name; `_Builder` then walks it with a scope and
resolves each name into the form Figure 1 gives it (control `CVar`, data `DRead`,
barrier `ZRead`), so the AST never needs a symbol table. Everything malformed is a
`BadInput` carrying its span: `one_line()` reads `file:line:col: message`.

Note: a binder may not shadow a visible name (see calculus/gpuir/ast.py); reserved
names (loop heads, `with` blocks, sync statements) may not be bound at all.
"""

from __future__ import annotations

import functools
from pathlib import Path

from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.span import Span
from lark import Lark, Token, Tree
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)
from lark.indenter import Indenter


class _GpuirIndenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB"]
    CLOSE_PAREN_types = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


@functools.cache
def _lark() -> Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    return Lark(
        grammar,
        parser="lalr",
        postlex=_GpuirIndenter(),
        propagate_positions=True,
        maybe_placeholders=True,
    )


RESERVED = frozenset({
    "seq", "cuda_tasks", "cuda_threads", "CudaDeviceFunction", "CudaWarps",
    "CudaWarpConfig", "Fence", "Arrive", "Await", "barrier", "size", "index",
})
DTYPES = {t.value: t for t in A.DataType}


# ------------------------------------------------------------------- entry points


def parse_module(source: str, file: str = "<string>") -> A.Module:
    """Parse a whole `.gpuir` file (one or more procedures)."""
    text = source if source.endswith("\n") else source + "\n"
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        line, col = getattr(err, "line", 0) or 0, getattr(err, "column", 0) or 0
        raise BadInput(_syntax_message(err), span=Span(file, line, col, line, col)) \
            from None
    builder = _Builder(file)
    procs = tuple(builder.proc(t) for t in tree.children if isinstance(t, Tree))
    names = [p.name for p in procs]
    for i, p in enumerate(procs):
        if p.name in names[:i]:
            raise BadInput(f"duplicate procedure: {p.name}", span=p.span)
    return A.Module(procs, Span(file, 1, 1, 1, 1))


def parse_proc(source: str, file: str = "<string>") -> A.Proc:
    """Parse a file holding exactly one procedure."""
    module = parse_module(source, file)
    if len(module.procs) != 1:
        raise BadInput(f"expected one procedure, found {len(module.procs)}",
                       span=Span(file, 1, 1, 1, 1))
    return module.procs[0]


def parse_file(path: str) -> A.Module:
    from gpusem.calculus.source import read_source

    return parse_module(read_source(path), path)


def _syntax_message(err: UnexpectedInput) -> str:
    match err:
        case UnexpectedToken(token=tok) if tok.type == "$END":
            return "syntax error: unexpected end of input"
        case UnexpectedToken(token=tok) if tok.type in ("_INDENT", "_DEDENT"):
            return "syntax error: unexpected indentation"
        case UnexpectedToken(token=tok):
            shown = "newline" if tok.type == "_NL" else repr(str(tok))
            return f"syntax error: unexpected {shown}"
        case UnexpectedCharacters(char=ch):
            return f"syntax error: unexpected character {ch!r}"
        case UnexpectedEOF():
            return "syntax error: unexpected end of input"
    return "syntax error"


# -------------------------------------------------------------------------- builder

_CTRL, _DATA, _BARRIER = "control", "data", "barrier"


class _Builder:
    """Parse tree -> AST, resolving names against a stack of scopes."""

    def __init__(self, file: str):
        self.file = file
        self.scopes: list[dict[str, str]] = []

    # ------------------------------------------------------------- spans, errors
    def span(self, node: Tree | Token) -> Span:
        if isinstance(node, Token):
            return Span(self.file, node.line, node.column, node.end_line,
                        max(node.end_column - 1, node.column))
        m = node.meta
        if getattr(m, "empty", True):
            return Span(self.file, 0, 0, 0, 0)
        return Span(self.file, m.line, m.column, m.end_line, max(m.end_column - 1, 1))

    def fail(self, node: Tree | Token, msg: str) -> BadInput:
        return BadInput(msg, span=self.span(node))

    # ------------------------------------------------------------------ scopes
    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, tok: Token, kind: str) -> str:
        name = str(tok)
        if name in RESERVED:
            raise self.fail(tok, f"reserved name: {name} cannot be bound")
        if self.lookup(name) is not None:
            raise self.fail(tok, f"shadowing: {name} is already bound in this scope")
        self.scopes[-1][name] = kind
        return name

    def block(self, suite: Tree, bind: tuple[Token, str] | None = None):
        self.scopes.append({})
        try:
            if bind is not None:
                self.bind(*bind)
            return tuple(self.stmt(s) for s in suite.children if isinstance(s, Tree))
        finally:
            self.scopes.pop()

    # --------------------------------------------------------------- procedures
    def proc(self, t: Tree) -> A.Proc:
        name, *params, suite = t.children
        self.scopes = [{}]
        ps = tuple(self.param(p) for p in params if p is not None)
        body = self.block(suite)
        return A.Proc(str(name), ps, body, self.span(t))

    def param(self, t: Tree) -> A.Param:
        name, ty, shape, mem = t.children
        if str(ty) in ("size", "index") and shape is None and mem is None:
            self.bind(name, _CTRL)
            return A.CtrlParam(str(name), A.CtrlKind(str(ty)), self.span(t))
        dtype = self.dtype(ty)
        if mem is None:
            raise self.fail(t, f"missing memory: data parameter {name} needs @ MEMORY")
        dims = self.shape(shape)
        self.bind(name, _DATA)
        return A.DataParam(str(name), dtype, dims, self.mem(mem), self.span(t))

    def dtype(self, tok: Token) -> A.DataType:
        if str(tok) not in DTYPES:
            raise self.fail(tok, f"unknown type: {tok} (expected one of "
                            f"{', '.join(DTYPES)} or size/index)")
        return DTYPES[str(tok)]

    def shape(self, t: Tree | None) -> tuple[A.CExpr, ...]:
        return () if t is None else tuple(self.cexpr(c) for c in t.children)

    # --------------------------------------------------------------- statements
    def stmt(self, t: Tree) -> A.Stmt:
        method = getattr(self, f"s_{t.data}")
        return method(t)

    def s_for_stmt(self, t: Tree) -> A.For:
        var, head, suite = t.children
        fname, args, kwargs = self.call_parts(head)
        modes = {m.value: m for m in A.LoopMode}
        if fname not in modes:
            raise self.fail(head, f"unknown loop: {fname} (expected seq, cuda_tasks "
                            "or cuda_threads)")
        mode = modes[fname]
        allowed = {"unit"} if mode is A.LoopMode.CUDA_THREADS else set()
        self.no_extra(head, kwargs, allowed)
        if len(args) != 2:
            raise self.fail(head, f"bad loop: {fname} takes (lo, hi)")
        lo, hi = (self.cexpr(a) for a in args)
        unit = None
        if mode is A.LoopMode.CUDA_THREADS:
            if "unit" not in kwargs:
                raise self.fail(head, "bad loop: cuda_threads needs unit=...")
            unit = self.unit(kwargs["unit"])
        body = self.block(suite, (var, _CTRL))
        return A.For(str(var), lo, hi, mode, unit, body, self.span(t))

    def s_with_stmt(self, t: Tree) -> A.Stmt:
        head, suite = t.children
        fname, args, kwargs = self.call_parts(head)
        if fname == "CudaDeviceFunction":
            return self.device_function(t, head, args, kwargs, suite)
        if fname == "CudaWarps":
            self.no_extra(head, kwargs, {"name"})
            if len(args) not in (0, 2):
                raise self.fail(head, "bad CudaWarps: expected (lo, hi, name=...)")
            lo, hi = (self.int_const(a) for a in args) if args else (None, None)
            name = self.string(kwargs["name"]) if "name" in kwargs else None
            return A.CudaWarps(lo, hi, name, self.block(suite), self.span(t))
        raise self.fail(head, f"unknown with-block: {fname} (expected "
                        "CudaDeviceFunction or CudaWarps)")

    def device_function(self, t, head, args, kwargs, suite) -> A.CudaDeviceFunction:
        self.no_extra(head, kwargs, {"blockDim", "clusterDim", "warp_config"})
        if args:
            raise self.fail(head, "bad CudaDeviceFunction: use keyword arguments")
        block = self.int_const(kwargs["blockDim"]) if "blockDim" in kwargs else None
        cluster = self.int_const(kwargs["clusterDim"]) if "clusterDim" in kwargs else 1
        configs: tuple[A.WarpConfig, ...] = ()
        if "warp_config" in kwargs:
            lst = kwargs["warp_config"]
            if not (isinstance(lst, Tree) and lst.data == "list_lit"):
                raise self.fail(lst, "bad warp_config: expected "
                                "[CudaWarpConfig(...), ...]")
            configs = tuple(self.warp_config(c) for c in lst.children if c is not None)
        if (block is None) == (not configs):
            raise self.fail(head, "bad CudaDeviceFunction: give exactly one of "
                            "blockDim and warp_config")
        return A.CudaDeviceFunction(block, cluster, configs, self.block(suite),
                                    self.span(t))

    def warp_config(self, t) -> A.WarpConfig:
        if not (isinstance(t, Tree) and t.data == "call"):
            raise self.fail(t, "bad warp_config: expected "
                            "CudaWarpConfig(name, n, dec, inc)")
        fname, args, kwargs = self.call_parts(t)
        if fname != "CudaWarpConfig" or kwargs or len(args) not in (2, 4):
            raise self.fail(t, "bad warp_config: expected "
                            "CudaWarpConfig(name, n, dec, inc)")
        nums = [self.int_const(a) for a in args[1:]] + [0, 0]
        return A.WarpConfig(self.string(args[0]), nums[0], nums[1], nums[2],
                            self.span(t))

    def s_if_stmt(self, t: Tree) -> A.If:
        cond, suite = t.children
        return A.If(self.bexpr(cond), self.block(suite), self.span(t))

    def s_alloc(self, t: Tree) -> A.Stmt:
        name, ty, shape, mem = t.children
        dims = self.shape(shape)
        if str(ty) == "barrier":
            self.bind(name, _BARRIER)
            return A.BarrierAlloc(str(name), dims, self.mem(mem), self.span(t))
        dtype = self.dtype(ty)
        self.bind(name, _DATA)
        return A.Alloc(str(name), dtype, dims, self.mem(mem), self.span(t))

    def s_assign(self, t: Tree) -> A.Stmt:
        target, rhs, mem = t.children
        if mem is not None:
            return self.window_stmt(t, target, rhs, mem)
        name, idx = self.target(target)
        return A.Assign(name, idx, self.dexpr(rhs), self.span(t))

    def window_stmt(self, t, target, rhs, mem) -> A.WindowStmt:
        name_tok, coords = target.children
        if coords is not None:
            raise self.fail(target, "bad window statement: the window name is bare")
        source = self.dexpr(rhs)
        if not isinstance(source, A.DRead):
            raise self.fail(rhs, "bad window statement: expected x[w, ...] @ WINDOW")
        self.bind(name_tok, _DATA)
        return A.WindowStmt(str(name_tok), source, self.mem(mem), self.span(t))

    def s_reduce(self, t: Tree) -> A.Reduce:
        target, rhs = t.children
        name, idx = self.target(target)
        return A.Reduce(name, idx, self.dexpr(rhs), self.span(t))

    def target(self, t: Tree) -> tuple[str, tuple[A.CExpr, ...]]:
        name, coords = t.children
        self.require_kind(name, _DATA)
        if coords is None:
            return str(name), ()
        idx = []
        for c in coords.children:
            if isinstance(c, Tree) and c.data == "interval":
                raise self.fail(c, f"bad write: {name} is written at points, not "
                                "windows")
            idx.append(self.cexpr(c))
        return str(name), tuple(idx)

    def s_free(self, t: Tree) -> A.Free:
        (name,) = t.children
        if self.lookup(str(name)) not in (_DATA, _BARRIER):
            raise self.fail(name, f"unknown name: {name}")
        return A.Free(str(name), self.span(t))

    def s_call_stmt(self, t: Tree) -> A.Stmt:
        head, *barriers = t.children
        barriers = [b for b in barriers if b is not None]
        fname, args, kwargs = self.call_parts(head)
        if kwargs:
            raise self.fail(head, f"bad call: {fname} takes no keyword arguments")
        zs = tuple(self.zread(b) for b in barriers)
        match fname:
            case "Fence":
                if len(args) != 2 or zs:
                    raise self.fail(head, "bad Fence: expected Fence(pre_tl, post_tl)")
                return A.Fence(self.tl(args[0]), self.tl(args[1]), self.span(t))
            case "Arrive":
                if len(args) not in (1, 2) or not zs:
                    raise self.fail(head, "bad Arrive: expected "
                                    "Arrive(tl, n) >> z[...]")
                n = self.int_const(args[1]) if len(args) == 2 else 1
                return A.Arrive(self.tl(args[0]), n, zs, self.span(t))
            case "Await":
                if len(args) != 3 or zs:
                    raise self.fail(head, "bad Await: expected Await(z[...], tl, n)")
                return A.Await(self.zread(args[0]), self.tl(args[1]),
                               self.int_const(args[2]), self.span(t))
        if fname in RESERVED:
            raise self.fail(head, f"bad statement: {fname}(...) is not a statement")
        if len(zs) > 1:
            raise self.fail(head, f"bad call: {fname} takes at most one >> barrier")
        return A.InstrCall(fname, tuple(self.instr_arg(a) for a in args),
                           zs[0] if zs else None, self.span(t))

    def instr_arg(self, t) -> A.InstrArg:
        kind = self.expr_kind(t)
        if kind == _DATA:
            e = self.dexpr(t)
            if not isinstance(e, (A.DRead, A.DConst)):
                raise self.fail(t, "bad argument: data arguments are windows x[w, ...]")
            return e
        return self.cexpr(t)

    # ------------------------------------------------------------ call helpers
    def call_parts(self, t: Tree) -> tuple[str, list, dict]:
        if not (isinstance(t, Tree) and t.data == "call"):
            raise self.fail(t, "syntax error: expected a call")
        name, *rest = t.children
        args, kwargs = [], {}
        for a in rest:
            if a is None:
                continue
            if isinstance(a, Tree) and a.data == "kwarg":
                key, value = a.children
                if str(key) in kwargs:
                    raise self.fail(key, f"duplicate keyword argument: {key}")
                kwargs[str(key)] = value
            elif kwargs:
                raise self.fail(a, "syntax error: positional argument after keyword")
            else:
                args.append(a)
        return str(name), args, kwargs

    def no_extra(self, head: Tree, kwargs: dict, allowed: set[str]) -> None:
        for key in kwargs:
            if key not in allowed:
                raise self.fail(head, f"unknown keyword argument: {key}")

    def int_const(self, t) -> int:
        if isinstance(t, Tree) and t.data == "int_lit":
            return int(t.children[0])
        if isinstance(t, Tree) and t.data == "neg" and t.children[0].data == "int_lit":
            return -int(t.children[0].children[0])
        raise self.fail(t, "expected an integer literal")

    def string(self, t) -> str:
        if isinstance(t, Tree) and t.data == "str_lit":
            return str(t.children[0])[1:-1]
        raise self.fail(t, 'expected a string literal "..."')

    def tl(self, t) -> str:
        if isinstance(t, Tree) and t.data == "name":
            return str(t.children[0])
        raise self.fail(t, "expected a synchronization timeline name")

    def unit(self, t) -> A.UnitExpr:
        """`[n *] name[(ints)]` (Figure 11)."""
        count = 1
        if isinstance(t, Tree) and t.data == "mul":
            count, t = self.int_const(t.children[0]), t.children[1]
        if isinstance(t, Tree) and t.data == "name":
            return A.UnitExpr(str(t.children[0]), count, (), self.span(t))
        if isinstance(t, Tree) and t.data == "call":
            name, args, kwargs = self.call_parts(t)
            if kwargs:
                raise self.fail(t, "bad unit: no keyword arguments")
            ints = tuple(self.int_const(a) for a in args)
            return A.UnitExpr(name, count, ints, self.span(t))
        raise self.fail(t, "bad unit: expected [n *] cuda_unit")

    def mem(self, t) -> A.MemExpr:
        if isinstance(t, Tree) and t.data == "name":
            return A.MemExpr(str(t.children[0]), (), self.span(t))
        if isinstance(t, Tree) and t.data == "call":
            name, args, kwargs = self.call_parts(t)
            if kwargs:
                raise self.fail(t, "bad memory: no keyword arguments")
            return A.MemExpr(name, tuple(self.int_const(a) for a in args), self.span(t))
        raise self.fail(t, "bad memory: expected a memory type name")

    # -------------------------------------------------------------- expressions
    def require_kind(self, tok: Token, kind: str) -> None:
        found = self.lookup(str(tok))
        if found is None:
            raise self.fail(tok, f"unknown name: {tok}")
        if found != kind:
            raise self.fail(tok, f"bad name: {tok} is a {found} variable, "
                            f"expected a {kind} variable")

    def expr_kind(self, t) -> str:
        """Whether `t` reads data (then it is a data expression) or only control."""
        if isinstance(t, Tree) and t.data in ("name", "index"):
            kind = self.lookup(str(t.children[0]))
            if kind is None:
                raise self.fail(t.children[0], f"unknown name: {t.children[0]}")
            return kind
        if isinstance(t, Tree) and t.data == "float_lit":
            return _DATA
        if isinstance(t, Tree) and t.data in ("add", "sub", "mul", "div", "neg",
                                              "paren"):
            kinds = {self.expr_kind(c) for c in t.children}
            return _DATA if _DATA in kinds else _CTRL
        return _CTRL

    _CBIN = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}
    _DBIN = {"add": "+", "sub": "-", "mul": "*", "div": "/"}

    def cexpr(self, t) -> A.CExpr:
        sp = self.span(t)
        match t.data if isinstance(t, Tree) else None:
            case "int_lit":
                return A.CInt(int(t.children[0]), sp)
            case "name":
                self.require_kind(t.children[0], _CTRL)
                return A.CVar(str(t.children[0]), sp)
            case "neg" if t.children[0].data == "int_lit":
                return A.CInt(-int(t.children[0].children[0]), sp)
            case "paren":
                return self.cexpr(t.children[0])
            case op if op in self._CBIN:
                lhs, rhs = t.children
                return A.CBin(self._CBIN[op], self.cexpr(lhs), self.cexpr(rhs), sp)
        raise self.fail(t, "bad control expression: expected integers, control "
                        "variables and + - * / %")

    def bexpr(self, t) -> A.BExpr:
        sp = self.span(t)
        match t.data if isinstance(t, Tree) else None:
            case "true_lit" | "false_lit":
                return A.BConst(t.data == "true_lit", sp)
            case "rel":
                lhs, op, rhs = t.children
                return A.BRel(str(op), self.cexpr(lhs), self.cexpr(rhs), sp)
            case "b_and" | "b_or":
                lhs, rhs = t.children
                op = "and" if t.data == "b_and" else "or"
                return A.BLog(op, self.bexpr(lhs), self.bexpr(rhs), sp)
            case "b_not":
                return A.BNot(self.bexpr(t.children[0]), sp)
            case "paren":
                return self.bexpr(t.children[0])
        raise self.fail(t, "bad condition: expected comparisons of control "
                        "expressions joined by and / or / not")

    def dexpr(self, t) -> A.DExpr:
        sp = self.span(t)
        match t.data if isinstance(t, Tree) else None:
            case "int_lit":
                return A.DConst(int(t.children[0]), sp)
            case "float_lit":
                return A.DConst(float(t.children[0]), sp)
            case "neg" if t.children[0].data in ("int_lit", "float_lit"):
                lit = self.dexpr(t.children[0])
                return A.DConst(-lit.value, sp)
            case "neg":
                return A.DNeg(self.dexpr(t.children[0]), sp)
            case "paren":
                return self.dexpr(t.children[0])
            case "name":
                self.require_kind(t.children[0], _DATA)
                return A.DRead(str(t.children[0]), (), sp)
            case "index":
                name, coords = t.children
                self.require_kind(name, _DATA)
                return A.DRead(str(name), self.wcoords(coords), sp)
            case op if op in self._DBIN:
                lhs, rhs = t.children
                return A.DBin(self._DBIN[op], self.dexpr(lhs), self.dexpr(rhs), sp)
        raise self.fail(t, "bad data expression: expected literals, reads x[...] "
                        "and + - * /")

    def zread(self, t) -> A.ZRead:
        if isinstance(t, Tree) and t.data in ("name", "index"):
            name = t.children[0]
            self.require_kind(name, _BARRIER)
            coords = self.wcoords(t.children[1]) if t.data == "index" else ()
            return A.ZRead(str(name), coords, self.span(t))
        raise self.fail(t, "bad barrier expression: expected z or z[w, ...]")

    def wcoords(self, t: Tree) -> tuple[A.WCoord, ...]:
        out: list[A.WCoord] = []
        for c in t.children:
            if isinstance(c, Tree) and c.data == "interval":
                lo, hi = c.children
                out.append(A.WInterval(
                    None if lo is None else self.cexpr(lo),
                    None if hi is None else self.cexpr(hi), self.span(c)))
            else:
                out.append(A.WPoint(self.cexpr(c), self.span(c)))
        return tuple(out)
