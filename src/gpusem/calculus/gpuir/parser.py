"""GPU IR parser: `.gpuir` text -> `calculus.gpuir.ast` (Figures 1-2 of Exo-GPU).

Two stages. Lark (LALR, `grammar.lark`, Python layout via `Indenter`) builds a parse
tree in which every name is just a name; `_Builder` then walks it with a scope and
resolves each name into the form Figure 1 gives it (control `CVar`, data `DRead`,
barrier `ZRead`), so the AST never needs a symbol table. Everything malformed is a
`BadInput` carrying its span: `one_line()` reads `file:line:col: message`. This module
builds procedures and statements (Figure 2); expressions and the argument forms are
built by `calculus.gpuir.parse_expr` (Figure 1).

Note: a binder may not shadow a visible name (see calculus/gpuir/ast.py); reserved
names (loop heads, `with` blocks, sync statements) may not be bound at all.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from gpusem.calculus.budgets import check_nesting
from gpusem.calculus.errors import BadInput
from gpusem.calculus.grammar_cache import cached_lark
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.parse_expr import (
    BARRIER,
    CTRL,
    DATA,
    RESERVED,
    ExprBuilder,
    Node,
)
from gpusem.calculus.span import Span
from lark import Lark, Token, Tree
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)
from lark.indenter import DedentError, Indenter


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
    return cached_lark(
        grammar,
        "gpuir",
        parser="lalr",
        postlex=_GpuirIndenter(),
        propagate_positions=True,
        maybe_placeholders=True,
    )


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
    except DedentError as err:
        raise _dedent_error(err, text, file) from None
    check_nesting(tree, file)
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


def _dedent_error(err: DedentError, text: str, file: str) -> BadInput:
    """Lark's Indenter raises a bare DedentError (no position) when a line dedents to
    a column no enclosing block started at; find that line again: the first whose
    indentation is not on the stack of open blocks (Python's rule)."""
    stack = [0]
    for number, raw in enumerate(text.split("\n"), 1):
        body = raw.lstrip(" \t")
        if not body or body.startswith("#"):
            continue
        width = len(raw[:len(raw) - len(body)].expandtabs(_GpuirIndenter.tab_len))
        if width > stack[-1]:
            stack.append(width)
            continue
        while width < stack[-1]:
            stack.pop()
        if width != stack[-1]:
            return BadInput("syntax error: unindent does not match any outer "
                            "indentation level",
                            span=Span(file, number, width + 1, number, width + 1))
    return BadInput(f"syntax error: {err}", span=Span(file, 1, 1, 1, 1))


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


class _Builder(ExprBuilder):
    """Parse tree -> AST: procedures and statements (Figure 2); the expressions and
    arguments inside them are `ExprBuilder`'s (Figure 1)."""

    def block(self, suite: Node,
              bind: tuple[Token, str] | None = None) -> tuple[A.Stmt, ...]:
        self.scopes.append({})
        try:
            if bind is not None:
                self.bind(*bind)
            return tuple(self.stmt(s) for s in suite.children if isinstance(s, Tree))
        finally:
            self.scopes.pop()

    # --------------------------------------------------------------- procedures
    def proc(self, t: Node) -> A.Proc:
        name, *params, suite = t.children
        self.scopes = [{}]
        ps = tuple(self.param(p) for p in params if p is not None)
        body = self.block(suite)
        return A.Proc(str(name), ps, body, self.span(t))

    def param(self, t: Node) -> A.Param:
        name, ty, shape, mem = t.children
        if str(ty) in ("size", "index") and shape is None and mem is None:
            self.bind(name, CTRL)
            return A.CtrlParam(str(name), A.CtrlKind(str(ty)), self.span(t))
        dtype = self.dtype(ty)
        if mem is None:
            raise self.fail(t, f"missing memory: data parameter {name} needs @ MEMORY")
        dims = self.shape(shape)
        self.bind(name, DATA)
        return A.DataParam(str(name), dtype, dims, self.mem(mem), self.span(t))

    def dtype(self, tok: Token) -> A.DataType:
        if str(tok) not in DTYPES:
            raise self.fail(tok, f"unknown type: {tok} (expected one of "
                            f"{', '.join(DTYPES)} or size/index)")
        return DTYPES[str(tok)]

    def shape(self, t: Node) -> tuple[A.CExpr, ...]:
        return () if t is None else tuple(self.cexpr(c) for c in t.children)

    # --------------------------------------------------------------- statements
    def stmt(self, t: Node) -> A.Stmt:
        method: Callable[[Node], A.Stmt] = getattr(self, f"s_{t.data}")
        return method(t)

    def s_for_stmt(self, t: Node) -> A.For:
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
        body = self.block(suite, (var, CTRL))
        return A.For(str(var), lo, hi, mode, unit, body, self.span(t))

    def s_with_stmt(self, t: Node) -> A.Stmt:
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

    def device_function(self, t: Node, head: Node, args: list[Node],
                        kwargs: dict[str, Node], suite: Node) -> A.CudaDeviceFunction:
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

    def warp_config(self, t: Node) -> A.WarpConfig:
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

    def s_if_stmt(self, t: Node) -> A.If:
        cond, suite = t.children
        return A.If(self.bexpr(cond), self.block(suite), self.span(t))

    def s_alloc(self, t: Node) -> A.Stmt:
        name, ty, shape, mem = t.children
        dims = self.shape(shape)
        if str(ty) == "barrier":
            self.bind(name, BARRIER)
            return A.BarrierAlloc(str(name), dims, self.mem(mem), self.span(t))
        dtype = self.dtype(ty)
        self.bind(name, DATA)
        return A.Alloc(str(name), dtype, dims, self.mem(mem), self.span(t))

    def s_assign(self, t: Node) -> A.Stmt:
        target, rhs, mem = t.children
        if mem is not None:
            return self.window_stmt(t, target, rhs, mem)
        name, idx = self.target(target)
        return A.Assign(name, idx, self.dexpr(rhs), self.span(t))

    def window_stmt(self, t: Node, target: Node, rhs: Node,
                    mem: Node) -> A.WindowStmt:
        name_tok, coords = target.children
        if coords is not None:
            raise self.fail(target, "bad window statement: the window name is bare")
        source = self.dexpr(rhs)
        if not isinstance(source, A.DRead):
            raise self.fail(rhs, "bad window statement: expected x[w, ...] @ WINDOW")
        self.bind(name_tok, DATA)
        return A.WindowStmt(str(name_tok), source, self.mem(mem), self.span(t))

    def s_reduce(self, t: Node) -> A.Reduce:
        target, rhs = t.children
        name, idx = self.target(target)
        return A.Reduce(name, idx, self.dexpr(rhs), self.span(t))

    def target(self, t: Node) -> tuple[str, tuple[A.CExpr, ...]]:
        name, coords = t.children
        self.require_kind(name, DATA)
        if coords is None:
            return str(name), ()
        idx = []
        for c in coords.children:
            if isinstance(c, Tree) and c.data == "interval":
                raise self.fail(c, f"bad write: {name} is written at points, not "
                                "windows")
            idx.append(self.cexpr(c))
        return str(name), tuple(idx)

    def s_free(self, t: Node) -> A.Free:
        (name,) = t.children
        if self.lookup(str(name)) not in (DATA, BARRIER):
            raise self.fail(name, f"unknown name: {name}")
        return A.Free(str(name), self.span(t))

    def s_call_stmt(self, t: Node) -> A.Stmt:
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

    def instr_arg(self, t: Node) -> A.InstrArg:
        kind = self.expr_kind(t)
        if kind == DATA:
            e = self.dexpr(t)
            if not isinstance(e, (A.DRead, A.DConst)):
                raise self.fail(t, "bad argument: data arguments are windows x[w, ...]")
            return e
        return self.cexpr(t)
