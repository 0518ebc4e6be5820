"""Prism surface text -> surface AST (`calculus.prism.ast`), on Python's `ast`.

Python's parser reads the text the pre-pass (`prepass.py`) prepared; this module maps
its tree onto Prism's constructs and rejects everything else with a named reason and
the surface span (`file:line:col`, exit 2). Nothing is evaluated but integer constant
expressions in decorators and types (`float[16 * 8]`); templates are instantiated here,
before typing: a template parameter is replaced by its value from the `# template:`
header wherever it occurs.
"""

from __future__ import annotations

import ast as py
from collections.abc import Mapping

from gpusem.calculus.errors import BadInput
from gpusem.calculus.prism import ast as S
from gpusem.calculus.prism.prepass import Prepared, prepare
from gpusem.calculus.span import Span

_BINOPS: dict[type, str] = {py.Add: "+", py.Sub: "-", py.Mult: "*", py.Div: "/",
                            py.FloorDiv: "/", py.Mod: "%", py.BitAnd: "&",
                            py.BitOr: "|", py.LShift: "<<", py.RShift: ">>"}
_CMPOPS: dict[type, str] = {py.Lt: "<", py.LtE: "<=", py.Gt: ">", py.GtE: ">=",
                            py.Eq: "==", py.NotEq: "!="}
_BASES = ("int", "float", "bool", "uint32_t", "uint", "c_int", "c_float", "float4",
          "bf16", "void", "CUtensorMap")


def parse_prism(text: str, file: str = "<string>") -> S.Module:
    prep = prepare(text, file)
    try:
        tree = py.parse(prep.text, filename=file)
    except SyntaxError as err:
        line = err.lineno or 1
        col = max((err.offset or 1) - 1, 0)
        raise BadInput(f"syntax error: {err.msg}", rule="Surface-Syntax",
                       span=prep.span(file, line, col, line, col + 1)) from None
    template = dict(prep.launch.template) if prep.launch else {}
    return _Reader(prep, file, template).module(tree)


class _Reader:
    def __init__(self, prep: Prepared, file: str, template: Mapping[str, int]):
        self.prep = prep
        self.file = file
        self.template = dict(template)
        self.active: dict[str, int] = {}

    def span(self, node: py.AST) -> Span:
        return self.prep.span(self.file, node.lineno, node.col_offset,  # type: ignore
                              node.end_lineno or node.lineno,  # type: ignore
                              node.end_col_offset or 0)  # type: ignore

    def bad(self, node: py.AST, rule: str, msg: str) -> BadInput:
        return BadInput(msg, rule=rule, span=self.span(node))

    # --------------------------------------------------------------------- module

    def module(self, tree: py.Module) -> S.Module:
        fns: list[S.Function] = []
        for node in tree.body:
            if isinstance(node, py.FunctionDef):
                fns.append(self.function(node))
            elif isinstance(node, py.Expr) and isinstance(node.value, py.Constant):
                continue  # a docstring
            else:
                raise self.bad(node, "Surface-Toplevel", "unsupported construct: only "
                               "@prism functions may appear at the top level")
        if not fns:
            raise BadInput("empty program: no @prism function", rule="Surface-Toplevel",
                           span=Span(self.file, 1, 1, 1, 1))
        return S.Module(tuple(fns), self.prep.launch,
                        Span(self.file, 1, 1, max(len(self.prep.shifts), 1), 1))

    def function(self, node: py.FunctionDef) -> S.Function:
        kind: str | None = None
        requires: S.Requires | None = None
        template: tuple[str, ...] = ()
        for dec in node.decorator_list:  # first: the bound may use template values
            if _call_name(dec) == "template":
                template = self.template_params(dec)
        self.active = {t: self.template[t] for t in template if t in self.template}
        for dec in node.decorator_list:
            name = _call_name(dec)
            if name == "prism":
                kind = self._kind(dec)
            elif name == "requires":
                requires = self.requires(dec)
            elif name == "template":
                continue  # read above
            elif name == "attr":
                continue  # a CUDA attribute (__launch_bounds__): no meaning here
            else:
                raise self.bad(dec, "Surface-Decorator", f"unknown decorator: "
                               f"{name or py.unparse(dec)}")
        if kind is None:
            raise self.bad(node, "Surface-Decorator", f"missing decorator: {node.name} "
                           "needs @prism(\"global\") or @prism(\"device\")")
        if requires is None:
            raise self.bad(node, "Surface-Decorator", f"missing decorator: {node.name} "
                           "needs a perspective bound @requires(...)")
        missing = [t for t in template if t not in self.template]
        if missing:
            raise self.bad(node, "Template-Instantiate", f"uninstantiated template: "
                           f"{node.name} needs {', '.join(missing)} in # template:")
        self.active = {t: self.template[t] for t in template}
        params = tuple(self.param(a) for a in node.args.args)
        if node.args.vararg or node.args.kwarg or node.args.kwonlyargs:
            raise self.bad(node, "Surface-Signature", "unsupported parameter: only "
                           "annotated positional parameters")
        body = self.block(node.body)
        return S.Function(node.name, kind, requires, template, params, body,
                          self.span(node))

    def _kind(self, dec: py.expr) -> str:
        args = dec.args if isinstance(dec, py.Call) else []
        if (len(args) == 1 and isinstance(args[0], py.Constant)
                and args[0].value in ("global", "device")):
            return str(args[0].value)
        raise self.bad(dec, "Surface-Decorator", "bad decorator: @prism takes "
                       "\"global\" or \"device\"")

    def requires(self, dec: py.expr) -> S.Requires:
        assert isinstance(dec, py.Call)
        bound = tuple(self.persp(a) for a in dec.args)
        smem = 0
        for kw in dec.keywords:
            if kw.arg != "smem":
                raise self.bad(kw.value, "Surface-Decorator", f"bad decorator: "
                               f"@requires has no keyword {kw.arg}")
            smem = self.const_int(kw.value)
        if not bound:
            raise self.bad(dec, "Surface-Decorator", "bad decorator: an empty "
                           "perspective bound")
        return S.Requires(bound, smem, self.span(dec))

    def template_params(self, dec: py.expr) -> tuple[str, ...]:
        names = [n.value for n in py.walk(dec) if isinstance(n, py.Constant)
                 and isinstance(n.value, str)]
        if not names:
            raise self.bad(dec, "Surface-Decorator", "bad decorator: @template names "
                           "no parameter")
        return tuple(names)

    def param(self, a: py.arg) -> S.Param:
        if a.annotation is None:
            raise self.bad(a, "Surface-Signature", f"missing perspective: parameter "
                           f"{a.arg} needs `: type @ level[n]`")
        ty, persp = self.annotation(a.annotation)
        if persp is None:
            raise self.bad(a, "Surface-Signature", f"missing perspective: parameter "
                           f"{a.arg} needs `@ level[n]`")
        return S.Param(a.arg, ty, persp, self.span(a))

    # --------------------------------------------------------------- types, persps

    def persp(self, node: py.expr) -> S.Persp:
        if (isinstance(node, py.Subscript) and isinstance(node.value, py.Name)
                and node.value.id in S.LEVELS):
            n = self.const_int(node.slice)
            if n < 1:
                raise self.bad(node, "Surface-Perspective", f"bad perspective: "
                               f"{node.value.id}[{n}] needs a positive size")
            return S.Persp(node.value.id, n, self.span(node))
        if isinstance(node, py.Name) and node.id in S.LEVELS:
            raise self.bad(node, "Printed-Empty-Level", f"printed notation: {node.id} "
                           "without a size")
        raise self.bad(node, "Surface-Perspective", f"bad perspective: "
                       f"{py.unparse(node)} is not level[n] (grid, block, warp, "
                       "warpgroup, thread)")

    def annotation(self, node: py.expr) -> tuple[S.SType, S.Persp | None]:
        if isinstance(node, py.BinOp) and isinstance(node.op, py.MatMult):
            return self.type(node.left), self.persp(node.right)
        return self.type(node), None

    def type(self, node: py.expr) -> S.SType:
        span = self.span(node)
        if isinstance(node, py.Name) and node.id in _BASES:
            return S.SType(node.id, span=span)
        if isinstance(node, py.Call) and isinstance(node.func, py.Name):
            f = node.func.id
            if f in ("ptr", "const", "constexpr", "shared") and len(node.args) == 1:
                inner = self.type(node.args[0])
                if f == "ptr":
                    return _replace(inner, pointer=True, span=span)
                if f == "shared":
                    return _replace(inner, shared=True, span=span)
                return _replace(inner, const=True, constexpr=f == "constexpr",
                                span=span)
        if isinstance(node, py.Subscript):
            inner = self.type(node.value)
            return _replace(inner, dims=inner.dims + (self.const_int(node.slice),),
                            span=span)
        raise self.bad(node, "Surface-Type", f"bad type: {py.unparse(node)}")

    def const_int(self, node: py.expr) -> int:
        """An integer constant expression (sizes, bounds): literals, template
        parameters, + - * / %."""
        match node:
            case py.Constant(value=int(v)) if not isinstance(v, bool):
                return v
            case py.Name(id=name) if name in self.active:
                return self.active[name]
            case py.UnaryOp(op=py.USub(), operand=o):
                return -self.const_int(o)
            case py.BinOp(left=a, op=op, right=b) if type(op) in _BINOPS:
                x, y = self.const_int(a), self.const_int(b)
                sym = _BINOPS[type(op)]
                if sym in ("/", "%") and y == 0:
                    raise self.bad(node, "Surface-Constant", "bad constant: division "
                                   "by zero")
                return _fold(sym, x, y)
        raise self.bad(node, "Surface-Constant", f"not a constant: "
                       f"{py.unparse(node)} must be an integer known before typing")

    # ------------------------------------------------------------------ statements

    def block(self, body: list[py.stmt]) -> tuple[S.Stmt, ...]:
        return tuple(self.stmt(s) for s in body)

    def stmt(self, node: py.stmt) -> S.Stmt:
        span = self.span(node)
        match node:
            case py.AnnAssign(target=py.Name(id=name), annotation=ann, value=v):
                ty, persp = self.annotation(ann)
                init = self.expr(v) if v is not None else None
                return S.Decl(name, ty, persp, init, span)
            case py.Assign(targets=[t], value=v):
                return S.Assign(self.lvalue(t), self.expr(v), None, span)
            case py.Assign():
                raise self.bad(node, "Surface-Assign", "unsupported assignment: one "
                               "target only")
            case py.AugAssign(target=t, op=op, value=v) if type(op) in _BINOPS:
                return S.Assign(self.lvalue(t), self.expr(v), _BINOPS[type(op)], span)
            case py.Expr(value=py.Call() as c):
                call = self.expr(c)
                assert isinstance(call, S.CallExpr)
                return S.ExprStmt(call, span)
            case py.If(test=t, body=b, orelse=o):
                return S.If(self.expr(t), self.block(b), self.block(o), span)
            case py.While(test=t, body=b, orelse=[]):
                return S.While(self.expr(t), self.block(b), span)
            case py.For(target=py.Name(id=v), iter=it, body=b, orelse=[]):
                start, stop, step = self.range_args(it)
                return S.For(v, start, stop, step, self.block(b), span)
            case py.Break():
                return S.Break(span)
            case py.Continue():
                return S.Continue(span)
            case py.Return(value=v):
                return S.Return(self.expr(v) if v is not None else None, span)
            case py.Pass():
                return S.Pass(span)
            case py.With(items=[item], body=b):
                return self.with_stmt(item, self.block(b), node)
            case py.Match(subject=subj, cases=cases):
                return self.split(subj, cases, node)
        raise self.bad(node, "Surface-Statement", f"unsupported statement: "
                       f"{type(node).__name__.lower()}")

    def lvalue(self, node: py.expr) -> S.Expr:
        e = self.expr(node)
        if not isinstance(e, S.Name | S.Subscript | S.Attr):
            raise self.bad(node, "Surface-Assign", f"bad assignment target: "
                           f"{py.unparse(node)}")
        return e

    def range_args(self, it: py.expr) -> tuple[S.Expr, S.Expr, S.Expr]:
        if (isinstance(it, py.Call) and _call_name(it) == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords):
            args = [self.expr(a) for a in it.args]
            one = S.Num(1, self.span(it))
            zero = S.Num(0, self.span(it))
            if len(args) == 1:
                return zero, args[0], one
            return args[0], args[1], args[2] if len(args) == 3 else one
        raise self.bad(it, "Surface-For", "unsupported loop: only for v in "
                       "range(start, stop[, step])")

    def with_stmt(self, item: py.withitem, body: tuple[S.Stmt, ...],
                  node: py.stmt) -> S.Stmt:
        ctx, var, span = item.context_expr, item.optional_vars, self.span(node)
        name = _call_name(ctx)
        if name == "group" and isinstance(ctx, py.Call) and len(ctx.args) == 1:
            if var is not None:
                raise self.bad(node, "Surface-Group", "bad group: `as` takes no name")
            return S.Group(self.persp(ctx.args[0]), body, span)
        if name in ("partition", "claim") and isinstance(ctx, py.Call):
            if not isinstance(var, py.Name):
                raise self.bad(node, "Surface-Partition", f"bad {name}: needs "
                               "`as NEW_NAME`")
            if len(ctx.args) != 1 or not isinstance(ctx.args[0], py.Name):
                raise self.bad(ctx, "Surface-Partition", f"bad {name}: the first "
                               "argument is the pointer it narrows")
            kw = {k.arg: k.value for k in ctx.keywords}
            src = ctx.args[0].id
            if name == "claim":
                return self.claim(src, var.id, kw, body, ctx, span)
            return self.partition(src, var.id, kw, body, ctx, span)
        raise self.bad(ctx, "Surface-With", f"unsupported with: "
                       f"{py.unparse(ctx)} (group, partition or claim)")

    def partition(self, src: str, tgt: str, kw: dict[str | None, py.expr],
                  body: tuple[S.Stmt, ...], ctx: py.expr, span: Span) -> S.Stmt:
        dim_node = kw.pop("dimension", None) or kw.pop("p", None)
        if dim_node is None:
            raise self.bad(ctx, "Surface-Partition", "bad partition: needs "
                           "dimension=level[n] (or p=level[n])")
        offset = kw.pop("offset", None)
        fn = kw.pop("f", None)
        if kw:
            raise self.bad(ctx, "Surface-Partition", f"bad partition: unknown keyword "
                           f"{next(iter(kw))}")
        if (offset is None) == (fn is None):
            raise self.bad(ctx, "Surface-Partition", "bad partition: give exactly one "
                           "of offset=e and f=index function")
        index = None
        if fn is not None:
            e = self.expr(fn)
            if not isinstance(e, S.Lambda):
                raise self.bad(fn, "Surface-Partition", "bad partition: f= must be a "
                               "lambda (a named one is inlined by the elaborator)")
            index = e
        return S.Partition(src, tgt, self.persp(dim_node),
                           self.expr(offset) if offset is not None else None,
                           index, body, span)

    def claim(self, src: str, tgt: str, kw: dict[str | None, py.expr],
              body: tuple[S.Stmt, ...], ctx: py.expr, span: Span) -> S.Stmt:
        scope = kw.pop("scope", None) or kw.pop("p", None)
        if scope is None:
            raise self.bad(ctx, "Surface-Claim", "bad claim: needs scope=level[n]")
        offset = kw.pop("offset", None)
        if kw:
            raise self.bad(ctx, "Surface-Claim", f"bad claim: unknown keyword "
                           f"{next(iter(kw))}")
        off = self.expr(offset) if offset is not None else S.Num(0, span)
        return S.Claim(src, tgt, self.persp(scope), off, body, span)

    def split(self, subj: py.expr, cases: list[py.match_case],
              node: py.stmt) -> S.Stmt:
        if not (isinstance(subj, py.Call) and _call_name(subj) == "split"
                and len(subj.args) == 1 and isinstance(subj.args[0], py.Name)
                and subj.args[0].id in S.LEVELS):
            raise self.bad(subj, "Surface-Split", f"unsupported match: "
                           f"{py.unparse(subj)} (only match split(level))")
        out = []
        for c in cases:
            pat = c.pattern
            if not (isinstance(pat, py.MatchValue) and c.guard is None):
                raise self.bad(pat, "Surface-Split", "bad split: each case is a "
                               "number of units")
            n = self.const_int(pat.value)
            if n < 1:
                raise self.bad(pat, "Surface-Split", "bad split: a case needs a "
                               "positive number of units")
            out.append(S.Case(n, self.block(c.body), self.span(pat)))
        return S.Split(subj.args[0].id, tuple(out), self.span(node))

    # ----------------------------------------------------------------- expressions

    def expr(self, node: py.expr) -> S.Expr:
        span = self.span(node)
        match node:
            case py.Constant(value=bool(v)):
                return S.BoolConst(v, span)
            case py.Constant(value=int(v) | float(v)):
                return S.Num(v, span)
            case py.Name(id="true" | "True"):
                return S.BoolConst(True, span)
            case py.Name(id="false" | "False"):
                return S.BoolConst(False, span)
            case py.Name(id=name) if name in self.active:
                return S.Num(self.active[name], span)
            case py.Name(id=name):
                return S.Name(name, span)
            case py.BinOp(left=a, op=op, right=b) if type(op) in _BINOPS:
                return S.Bin(_BINOPS[type(op)], self.expr(a), self.expr(b), span)
            case py.UnaryOp(op=py.USub(), operand=o):
                return S.Un("-", self.expr(o), span)
            case py.UnaryOp(op=py.Not(), operand=o):
                return S.Un("!", self.expr(o), span)
            case py.BoolOp(op=op, values=vs):
                sym = "&&" if isinstance(op, py.And) else "||"
                out = self.expr(vs[0])
                for v in vs[1:]:
                    out = S.Bin(sym, out, self.expr(v), span)
                return out
            case py.Compare(left=a, ops=[op], comparators=[b]) if type(op) in _CMPOPS:
                return S.Bin(_CMPOPS[type(op)], self.expr(a), self.expr(b), span)
            case py.Compare():
                raise self.bad(node, "Surface-Expression", "unsupported comparison: "
                               "one operator at a time")
            case py.Subscript(value=v, slice=py.Tuple(elts=es)):
                return S.Subscript(self.expr(v), tuple(self.expr(e) for e in es), span)
            case py.Subscript(value=v, slice=s):
                return S.Subscript(self.expr(v), (self.expr(s),), span)
            case py.Attribute(value=v, attr=a) if a in ("x", "y", "z", "w"):
                return S.Attr(self.expr(v), a, span)
            case py.Call(func=f, args=args, keywords=kws):
                fname = _dotted(f)
                if fname is None:
                    raise self.bad(f, "Surface-Expression", f"bad call: "
                                   f"{py.unparse(f)}")
                name = fname
                if name == "id" and not args and not kws:
                    return S.Id(span)
                if name == "unsafe":  # raw CUDA text: kept out of the tree
                    return S.CallExpr("unsafe", (), (), span)
                kw = tuple((k.arg or "", self.expr(k.value)) for k in kws)
                return S.CallExpr(name, tuple(self.expr(a) for a in args), kw, span)
            case py.IfExp(test=t, body=a, orelse=b):
                return S.Ternary(self.expr(t), self.expr(a), self.expr(b), span)
            case py.Lambda(args=a, body=b):
                return S.Lambda(tuple(x.arg for x in a.args), self.expr(b), span)
            case py.Set(elts=[e]):
                return S.ListInit(self.expr(e), span)
            case py.List(elts=es):
                return S.CallExpr("list", tuple(self.expr(e) for e in es), (), span)
        raise self.bad(node, "Surface-Expression", f"unsupported expression: "
                       f"{py.unparse(node)}")


def _fold(sym: str, x: int, y: int) -> int:
    """C's integer operators (division truncates toward zero)."""
    match sym:
        case "+":
            return x + y
        case "-":
            return x - y
        case "*":
            return x * y
        case "/":
            return abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        case "%":
            return x - y * _fold("/", x, y)
        case "&":
            return x & y
        case "|":
            return x | y
        case "<<":
            return x << y if 0 <= y < 64 else 0
        case _:
            return x >> y if 0 <= y < 64 else 0


def _replace(t: S.SType, **kw: object) -> S.SType:
    from dataclasses import replace

    return replace(t, **kw)  # type: ignore[arg-type]  # SType's own fields


def _call_name(node: py.expr) -> str | None:
    return _dotted(node.func) if isinstance(node, py.Call) else _dotted(node)


def _dotted(node: py.expr) -> str | None:
    if isinstance(node, py.Name):
        return node.id
    if isinstance(node, py.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None
