"""Parse APPy source (Python text with `#pragma` comments) into `calculus.appy.ast`.

The program is read as text, never imported or executed: `ast` gives the statements,
`tokenize` the comments (Python's `ast` drops them). A `#pragma` line belongs to the
statement that follows it (Alg. 3 of seed 003, "link a pragma to the node following
it"). Directive grammar (Sections 3.1-3.4 and 4.2):

  loop    ::= 'parallel' 'for' clause* | 'simd' ['(' INT ')'] | 'sequential' 'for'
  clause  ::= 'simd' ['(' INT ')'] | 'reduction' '(' '+' ':' names ')'
            | 'to' '(' names ')' | 'from' '(' names ')'       (each at most once)
  stmt    ::= ['atomic'] {slice '=>' prop (',' prop)*}
  prop    ::= 'parallel' | 'simd' | 'reduce' '(' 'sum' ')'
            | 'reduction' '(' 'sum' ':' name ')' | 'le' '(' INT ')'

Unknown or malformed directives, and directives attached to nothing, are `BadInput`.
"""

from __future__ import annotations

import ast as pyast
import io
import re
import tokenize
from typing import Any, Iterator, cast

from gpusem.calculus import budgets
from gpusem.calculus.appy import ast as A
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import Span

_BINOPS = {pyast.Add: "+", pyast.Sub: "-", pyast.Mult: "*", pyast.Div: "/",
           pyast.FloorDiv: "//", pyast.Mod: "%", pyast.BitAnd: "&", pyast.BitOr: "|"}
_CMPOPS = {pyast.Lt: "<", pyast.LtE: "<=", pyast.Gt: ">", pyast.GtE: ">=",
           pyast.Eq: "==", pyast.NotEq: "!="}
_FUNC_MODULES = ("np", "numpy", "appy", "torch")

# A Python syntax node that has a source position.
Located = pyast.stmt | pyast.expr | pyast.arg


def parse_program(source: str, filename: str = "<appy>") -> A.Function:
    """The first function of `source`, with its directives linked."""
    try:
        tree = pyast.parse(source, filename)
    except SyntaxError as err:
        raise BadInput(f"syntax error: {err.msg}", span=Span(
            filename, err.lineno or 1, err.offset or 1, err.lineno or 1,
            err.offset or 1)) from None
    except (ValueError, RecursionError, MemoryError) as err:  # NUL bytes, nesting
        raise BadInput(f"syntax error: {type(err).__name__}: {err}",
                       span=Span(filename, 1, 1, 1, 1)) from None
    _check_depth(tree, filename)
    pragmas = _pragma_lines(source, filename)
    funcs = [n for n in tree.body if isinstance(n, pyast.FunctionDef)]
    if not funcs:
        raise BadInput("no function: the file defines no APPy function",
                       span=Span(filename, 1, 1, 1, 1))
    p = _Parser(filename, pragmas)
    fn = p.function(funcs[0])
    later = [n.lineno for n in tree.body if n.lineno > funcs[0].lineno]
    end = min(later) if later else len(source.splitlines()) + 1
    stray = sorted(ln for ln in pragmas if ln not in p.used
                   and funcs[0].lineno <= ln < end)
    if stray:
        raise BadInput(f"dangling pragma: '{pragmas[stray[0]]}' precedes no loop or "
                       "assignment", span=Span(filename, stray[0], 1, stray[0], 1))
    return fn


def _check_depth(tree: pyast.AST, filename: str) -> None:
    """The nesting budget (`gpusem.calculus.budgets`) over Python's syntax tree,
    walked iteratively before the recursive reading of it."""
    limit = budgets.current().nesting
    stack: list[tuple[pyast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
            raise BadInput(f"nesting too deep: more than {limit} levels of nested "
                           f"statements and expressions, the nesting budget "
                           f"({budgets.FLAGS['nesting']})", rule="Budget",
                           span=Span(filename, line, col, line, col))
        stack.extend((c, depth + 1) for c in pyast.iter_child_nodes(node))


def _pragma_lines(source: str, filename: str) -> dict[int, str]:
    """line -> directive text (after `#pragma`), for every pragma comment."""
    out: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                text = tok.string[1:].strip()
                if text.startswith("pragma"):
                    if not re.match(r"pragma\s", text + " "):
                        raise BadInput("malformed pragma: '#pragma' needs a space",
                                       span=Span(filename, tok.start[0],
                                                 tok.start[1] + 1, tok.start[0],
                                                 tok.start[1] + 1))
                    out[tok.start[0]] = text[len("pragma"):].strip()
    except tokenize.TokenError as err:
        raise BadInput(f"syntax error: {err.args[0] if err.args else err}",
                       span=Span(filename, 1, 1, 1, 1)) from None
    return out


class _Parser:
    def __init__(self, filename: str, pragmas: dict[int, str]):
        self.filename = filename
        self.pragmas = pragmas
        self.used: set[int] = set()

    def span(self, n: Located) -> Span:
        return Span(self.filename, n.lineno, n.col_offset + 1,
                    n.end_lineno or n.lineno, (n.end_col_offset or 0))

    def bad(self, n: Located, msg: str) -> BadInput:
        return BadInput(f"unsupported syntax: {msg}", span=self.span(n))

    # ------------------------------------------------------------------- program
    def function(self, f: pyast.FunctionDef) -> A.Function:
        if f.args.vararg or f.args.kwarg or f.args.kwonlyargs:
            raise self.bad(f, "only positional parameters")
        body = self.block(f.body)
        arrays = {s.array for st in A.walk_stmts(body) for s in _subscripts(st)}
        params = tuple(A.Param(a.arg, a.arg in arrays, self.span(a)) for a in f.args.args)
        return A.Function(f.name, params, body, self.span(f))

    def block(self, stmts: list[pyast.stmt]) -> tuple[A.Stmt, ...]:
        out = []
        for s in stmts:
            if isinstance(s, pyast.Pass) or (
                    isinstance(s, pyast.Expr) and isinstance(s.value, pyast.Constant)):
                continue  # `pass` and docstrings carry no meaning
            out.append(self.stmt(s, self.pragma_before(s)))
        return tuple(out)

    def pragma_before(self, s: pyast.stmt) -> tuple[int, str] | None:
        line = s.lineno - 1
        if line in self.pragmas:
            self.used.add(line)
            return line, self.pragmas[line]
        return None

    # ---------------------------------------------------------------- statements
    def stmt(self, s: pyast.stmt, pragma: tuple[int, str] | None) -> A.Stmt:
        sp = self.span(s)
        match s:
            case pyast.For(target=pyast.Name(id=var), iter=it, body=body, orelse=[]):
                start, stop, step = self.range_args(it)
                d = None if pragma is None else parse_loop_directive(pragma[1], sp)
                return A.For(var, start, stop, step, self.block(body), d, sp)
            case pyast.Assign(targets=[target], value=value):
                atomic, tp = self.stmt_pragma(pragma, sp)
                return A.Assign(self.target(target), self.expr(value), None, atomic, tp,
                                sp)
            case pyast.AugAssign(target=target, op=op, value=value):
                if type(op) not in _BINOPS:
                    raise self.bad(s, "augmented operator")
                atomic, tp = self.stmt_pragma(pragma, sp)
                return A.Assign(self.target(target), self.expr(value),
                                _BINOPS[type(op)], atomic, tp, sp)
            case pyast.If(test=test, body=body, orelse=orelse):
                if pragma is not None:
                    raise BadInput("misplaced pragma: a directive on an 'if'", span=sp)
                return A.If(self.expr(test), self.block(body), self.block(orelse), sp)
            case pyast.Return(value=value):
                if pragma is not None:
                    raise BadInput("misplaced pragma: a directive on a 'return'", span=sp)
                return A.Return(None if value is None else self.expr(value), sp)
            case _:
                raise self.bad(s, type(s).__name__.lower())

    def stmt_pragma(self, pragma: tuple[int, str] | None,
                    sp: Span) -> tuple[bool, A.TensorPragma | None]:
        if pragma is None:
            return False, None
        return parse_stmt_directive(pragma[1], sp)

    def range_args(self, it: pyast.expr) -> tuple[A.Expr, A.Expr, A.Expr]:
        if not (isinstance(it, pyast.Call) and isinstance(it.func, pyast.Name)
                and it.func.id == "range" and 1 <= len(it.args) <= 3 and not it.keywords):
            raise self.bad(it, "a loop must iterate over range(...) (Section 3.1)")
        args = [self.expr(a) for a in it.args]
        if len(args) == 1:
            return A.Const(0), args[0], A.Const(1)
        if len(args) == 2:
            return args[0], args[1], A.Const(1)
        return args[0], args[1], args[2]

    def target(self, t: pyast.expr) -> A.Name | A.Subscript:
        e = self.expr(t)
        if not isinstance(e, (A.Name, A.Subscript)):
            raise self.bad(t, "assignment target")
        return e

    # --------------------------------------------------------------- expressions
    def expr(self, e: pyast.expr) -> A.Expr:
        sp = self.span(e)
        match e:
            case pyast.Constant(value=bool()):
                raise self.bad(e, "boolean constant")
            case pyast.Constant(value=int() | float() as v):
                return A.Const(v, sp)
            case pyast.Constant(value=None):
                return A.NewAxis(sp)
            case pyast.Name(id=name):
                return A.Name(name, sp)
            case pyast.Attribute(value=pyast.Name(id="appy"), attr="MVL"):
                return A.Mvl(sp)
            case pyast.UnaryOp(op=pyast.USub(), operand=x):
                inner = self.expr(x)
                if isinstance(inner, A.Const):
                    return A.Const(-inner.value, sp)
                return A.Neg(inner, sp)
            case pyast.BinOp(op=op, left=a, right=b) if type(op) in _BINOPS:
                return A.BinOp(_BINOPS[type(op)], self.expr(a), self.expr(b), sp)
            case pyast.Compare(left=a, ops=[op], comparators=[b]) if type(op) in _CMPOPS:
                return A.Compare(_CMPOPS[type(op)], self.expr(a), self.expr(b), sp)
            case pyast.IfExp(test=c, body=t, orelse=o):
                return A.Where(self.expr(c), self.expr(t), self.expr(o), True, sp)
            case pyast.Subscript(value=pyast.Name(id=arr), slice=ix):
                elts = ix.elts if isinstance(ix, pyast.Tuple) else [ix]
                return A.Subscript(arr, tuple(self.index(i) for i in elts), sp)
            case pyast.Call():
                return self.call(e, sp)
            case _:
                raise self.bad(e, type(e).__name__.lower())

    def index(self, i: pyast.expr) -> A.Expr:
        if isinstance(i, pyast.Slice):
            if i.upper is None or i.step is not None:
                raise self.bad(i, "a slice needs an upper bound and no step "
                               "(sliced index notation, Section 4.1)")
            lo = None if i.lower is None else self.expr(i.lower)
            return A.Slice(lo, self.expr(i.upper), self.span(i))
        return self.expr(i)

    def call(self, e: pyast.Call, sp: Span) -> A.Expr:
        name = _func_name(e.func)
        if name is None:
            raise self.bad(e, "call of a non-function")
        kw = {k.arg: k.value for k in e.keywords}
        if name == "float" and len(e.args) == 1 and isinstance(e.args[0], pyast.Constant):
            try:
                # any constant: float() of a non-number raises, reported below
                value = e.args[0].value
                return A.Const(float(value), sp)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise self.bad(e, "float() of a non-number") from None
        args = tuple(self.expr(a) for a in e.args)
        if name == "where" and len(args) == 3 and not kw:
            return A.Where(*args, span=sp)
        if name in ("vidx", "vindex") and len(args) in (2, 3):
            bound = args[2] if len(args) == 3 else (
                self.expr(kw["bound"]) if "bound" in kw else None)
            return A.Vidx(args[0], args[1], bound, sp)
        if name in A.PRODUCT_FUNS and len(args) == 2 and not kw:
            return A.Call(name, args, None, sp)
        if name in A.UNARY_FUNS and len(args) == 1 and not kw:
            return A.Call(name, args, None, sp)
        if name in A.BINARY_FUNS and len(args) == 2 and not kw:
            return A.Call(name, args, None, sp)
        if name in A.REDUCE_FUNS and len(args) == 1 and set(kw) <= {"axis"}:
            axis = None
            if "axis" in kw:
                ax = kw["axis"]
                if not (isinstance(ax, pyast.Constant) and isinstance(ax.value, int)):
                    raise self.bad(e, "axis must be an integer constant")
                axis = ax.value
            return A.Call(name, args, axis, sp)
        if name in ("max", "min") and len(args) == 2 and not kw:
            return A.Call("maximum" if name == "max" else "minimum", args, None, sp)
        raise BadInput(f"unknown function: {name}/{len(args)}", span=sp)


def _func_name(f: pyast.expr) -> str | None:
    match f:
        case pyast.Name(id=n):
            return n
        case pyast.Attribute(value=pyast.Name(id=m), attr=n) if m in _FUNC_MODULES:
            return n
    return None


def _subscripts(stmt: A.Stmt) -> Iterator[A.Subscript]:
    exprs: list[A.Expr] = []
    match stmt:
        case A.Assign(target=t, value=v):
            exprs = [t, v]
        case A.If(cond=c):
            exprs = [c]
        case A.For(start=a, stop=b, step=c):
            exprs = [a, b, c]
        case A.Return(value=v):
            exprs = [] if v is None else [v]
    for e in exprs:
        for sub in A.walk_expr(e):
            if isinstance(sub, A.Subscript):
                yield sub


# ------------------------------------------------------------------- directives

_LOOP = re.compile(r"^(?:(?P<par>parallel\s+for)(?P<clauses>(?:\s.*)?)|(?P<seq>sequential\s+for)"
                   r"|simd(?:\s*\(\s*(?P<w2>\d+)\s*\))?)$")
_NAMES = r"[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*"
_CLAUSE = re.compile(r"\s*(?:(?P<simd>simd)(?:\s*\(\s*(?P<w>\d+)\s*\))?"
                     r"|reduction\s*\(\s*\+\s*:\s*(?P<red>" + _NAMES + r")\s*\)"
                     r"|to\s*\(\s*(?P<to>" + _NAMES + r")\s*\)"
                     r"|from\s*\(\s*(?P<frm>" + _NAMES + r")\s*\))")


def _names(text: str) -> tuple[str, ...]:
    return tuple(r.strip() for r in text.split(","))


def parse_loop_directive(text: str, sp: Span) -> A.LoopDirective:
    """A loop directive (Sections 3.1-3.2), or BadInput naming what is wrong."""
    m = _LOOP.match(text.strip())
    if m is None:
        raise BadInput(f"unknown directive: '#pragma {text}' on a loop", span=sp)
    if m["seq"]:
        return A.SequentialFor(sp)
    if not m["par"]:
        w = m["w2"]
        return A.Simd(int(w) if w else None, sp)
    rest, kw = m["clauses"] or "", dict[str, object]()
    while rest.strip():
        c = _CLAUSE.match(rest)
        if c is None:
            raise BadInput(f"unknown directive: '#pragma {text}' on a loop", span=sp)
        key = next(k for k in ("simd", "red", "to", "frm") if c[k])
        if key in kw:
            raise BadInput(f"malformed directive: clause '{key}' given twice", span=sp)
        if key == "simd":
            kw["simd"], kw["width"] = True, int(c["w"]) if c["w"] else None
        else:
            kw[key] = _names(c[key])
        rest = rest[c.end():]
    return A.ParallelFor(bool(kw.get("simd")), cast(int | None, kw.get("width")),
                         cast(tuple[str, ...], kw.get("red", ())),
                         cast(tuple[str, ...], kw.get("to", ())),
                         cast(tuple[str, ...], kw.get("frm", ())), sp)


_PROP = re.compile(r"^(parallel|simd|reduce\(\s*sum\s*\)|reduction\(\s*sum\s*:\s*\w+\s*\)"
                   r"|le\(\s*(\d+)\s*\))$")


def parse_stmt_directive(text: str, sp: Span) -> tuple[bool, A.TensorPragma | None]:
    """`atomic` and/or a tensor pragma `slice=>props ...` (Sections 3.4, 4.2)."""
    words = text.split()
    atomic = bool(words) and words[0] == "atomic"
    words = words[1:] if atomic else words
    if not words:
        if not atomic:
            raise BadInput("unknown directive: empty '#pragma'", span=sp)
        return True, None
    dims = []
    for w in words:
        if "=>" not in w:
            raise BadInput(f"unknown directive: '{w}' on an assignment "
                           "(expected 'atomic' or slice=>properties)", span=sp)
        dims.append(_dim_props(w, sp))
    return atomic, A.TensorPragma(tuple(dims), sp)


def _dim_props(word: str, sp: Span) -> A.DimProps:
    sl_text, _, props_text = word.partition("=>")
    try:
        sl = cast(pyast.Subscript, pyast.parse(f"_[{sl_text}]", mode="eval").body).slice
    except SyntaxError:
        sl = None
    if not isinstance(sl, pyast.Slice) or sl.upper is None or sl.step is not None:
        raise BadInput(f"malformed directive: '{sl_text}' is not a slice lo:hi", span=sp)
    p = _Parser(sp.file, {})
    lo = None if sl.lower is None else p.expr(sl.lower)
    slice_ = A.Slice(lo, p.expr(sl.upper))
    kw: dict[str, Any] = {}
    for prop in re.split(r",(?![^(]*\))", props_text) if props_text else []:
        m = _PROP.match(prop.strip())
        if m is None:
            raise BadInput(f"unknown directive: property '{prop}' "
                           "(parallel, simd, reduce(sum), le(C))", span=sp)
        key = prop.strip().split("(")[0]
        if key in ("parallel", "simd"):
            kw[key] = True
        elif key in ("reduce", "reduction"):
            kw["reduce"] = "sum"
        else:
            kw["le"] = int(m.group(2))
            if kw["le"] <= 0 or kw["le"] & (kw["le"] - 1):
                raise BadInput(f"malformed directive: le({kw['le']}) must be a "
                               "positive power of two", span=sp)
    if not props_text:
        raise BadInput(f"malformed directive: '{word}' has no properties", span=sp)
    return A.DimProps(slice_, span=sp, **kw)


__all__ = ["parse_loop_directive", "parse_program", "parse_stmt_directive"]
