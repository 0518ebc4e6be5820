"""Read Exo-GPU procs (Python source for Exo's `@proc` front end) into gpusem's GPU IR,
with Python's `ast` module only: the source is never imported or run. So Exo's own
`tests/cuda` suite becomes a corpus for gpusem (issue 16, item 2).

`read_file(text)` finds every proc the module's tests instantiate
(`read_env.instances`: factories bound at their call sites, procs inside tests),
translates each body statement by statement into GPU IR text with the
metaprogramming values substituted, and parses that with gpusem's own parser. A proc
that uses something GPU IR cannot express (or the reader does not map) is reported
with the construct and its line, never approximated: docs/exo.md lists them.

The one deliberate loss: calls of test-local instructions without data parameters
(Exo's `excut_trace_*` tracing instrs) touch no memory and are dropped (a loop left
empty goes too); the result says how many.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any

from gpusem.calculus.errors import GpusemError
from gpusem.calculus.gpuir import ast as A
from gpusem.compiler.gpuir_exo.dialect import INSTR_TO_EXO
from gpusem.compiler.gpuir_exo.read_env import (
    Call,
    Instance,
    Sym,
    Unknown,
    evaluate,
    instances,
    unit_text,
)
from gpusem.compiler.gpuir_exo.read_expr import COMPARE_OPS, ExprReader, Unreadable

INDENT = "    "
LOOPS = ("seq", "cuda_tasks", "cuda_threads")
DTYPES = ("f32", "f64", "f16", "i32", "ui16", "i8", "ui8")
MEMORY_FROM_EXO = {"Sm80_CommitGroup": "CudaCommitGroup",
                   "Sm90_TmaCommitGroup": "CudaCommitGroup",
                   "Sm90_WgmmaCommitGroup": "CudaCommitGroup"}
RESERVED = frozenset(LOOPS + ("Fence", "Arrive", "Await", "CudaWarps",
                               "CudaDeviceFunction", "free", "proc"))
INSTR_FROM_EXO = {v: k for k, v in INSTR_TO_EXO.items() if v is not None}


@dataclass
class ReadResult:
    file: str
    test: str
    name: str
    line: int                       # the proc's def
    call_line: int                  # its instantiation
    expects_error: bool
    runs: str = ""                  # what the test asks of Exo
    match: list[str] = field(default_factory=list)
    text: str = ""                  # the GPU IR text
    proc: A.Proc | None = None
    defines: dict[str, int] = field(default_factory=dict)
    reason: str = ""                # why not read
    dropped: int = 0                # tracing calls dropped
    preconditions: tuple[str, ...] = ()  # the proc's asserts on sizes (`N % 32 == 0`,
    # `N > 4`), which GPU IR cannot state: the emitter writes them back for Exo

    @property
    def read(self) -> bool:
        return self.proc is not None


def read_file(source: str, file: str = "<exo>") -> list[ReadResult]:
    module = ast.parse(source, file)
    local_instrs = _tracing_instrs(module)
    out = []
    for inst in instances(module):
        r = ReadResult(file, inst.test, inst.proc.name, inst.proc.lineno,
                       inst.call_line, inst.expects_error, inst.runs, inst.match)
        try:
            tr = _Translator(inst, local_instrs)
            r.text, r.defines, r.dropped = tr.run()
            r.preconditions = tuple(tr.preconditions)
        except Unreadable as err:
            r.reason = str(err)
            out.append(r)
            continue
        try:
            from gpusem.calculus.gpuir.parser import parse_module
            from gpusem.calculus.gpuir.printer import print_proc

            name = f"{file}:{inst.proc.name}"
            r.text = print_proc(parse_module(r.text, name).procs[-1])  # canonical
            r.proc = parse_module(r.text, name).procs[-1]
        except GpusemError as err:
            r.reason = f"gpusem parser: {err.one_line()}"
        out.append(r)
    return out


def _tracing_instrs(module: ast.Module) -> set[str]:
    """Test-local `@instr` classes whose behaviour has no data parameter."""
    out = set()
    for node in module.body:
        if isinstance(node, ast.ClassDef) and any(
                isinstance(d, ast.Name) and d.id == "instr" for d in node.decorator_list):
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "behavior":
                    anns = [ast.unparse(a.annotation) for a in f.args.args
                            if a.annotation is not None]
                    if all(a in ("index", "size") for a in anns):
                        out.add(node.name)
    return out


class _Translator(ExprReader):
    def __init__(self, inst: Instance, tracing: set[str]):
        self.inst, self.env, self.tracing = inst, inst.env, tracing
        self.local: set[str] = set()
        self.renames: dict[str, str] = {}  # shadowing or reserved binders (GPU IR
        # forbids both; Exo allows them): renamed within their loop
        self.sizes: dict[str, list[int]] = {}
        self.lower: dict[str, int] = {}
        self.elem: dict[str, str] = {}  # data name -> element type (f32, i32, ...)
        self.preconditions: list[str] = []
        self.dropped = 0

    def run(self) -> tuple[str, dict[str, int], int]:
        fn = self.inst.proc
        params = [self.param(a) for a in fn.args.args]
        body = self.block(fn.body, 1)
        if not body:
            raise Unreadable("no statement left (only tracing instructions)", fn)
        head = f"proc {fn.name}({', '.join(params)}):"
        return "\n".join([head] + body) + "\n", self.defines(), self.dropped

    def defines(self) -> dict[str, int]:
        """The sizes to check with: the test's own `sync_check(N=...)`, else the
        smallest multiple of every divisor the asserts and loop bounds need."""
        out = {}
        for n, ds in self.sizes.items():
            if isinstance(self.inst.sizes.get(n), int):
                out[n] = self.inst.sizes[n]
                continue
            step = math.lcm(*ds) if ds else 64
            v = step
            while v <= self.lower.get(n, 0) or v < 2 * step and step < 16:
                v += step
            out[n] = v
        return out

    # ----------------------------------------------------------------- params
    def param(self, a: ast.arg) -> str:
        self.local.add(a.arg)
        ann = a.annotation
        if isinstance(ann, ast.Name) and ann.id in ("size", "index"):
            if ann.id == "size":
                self.sizes.setdefault(a.arg, [])
            return f"{a.arg}: {ann.id}"
        if ann is None:
            raise Unreadable(f"parameter {a.arg} without a type", a)
        return f"{a.arg}: {self.data_type(a.arg, ann, 'DRAM')}"

    def data_type(self, name: str, ann: ast.expr, default_mem: str | None) -> str:
        """The GPU IR type of `name`, whose element type is remembered (`elem`)."""
        mem = None
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.MatMult):
            mem = self.memory(ann.right)
            ann = ann.left
        if isinstance(ann, ast.List):
            raise Unreadable("a window parameter ([T][..]): instr-only in Exo", ann)
        shape = ""
        if isinstance(ann, ast.Subscript):
            dims = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            shape = "[" + ", ".join(self.cexpr(d) for d in dims) + "]"
            ann = ann.value
        t = self.name_value(ann)
        if isinstance(ann, ast.Call) or t not in DTYPES + ("barrier",):
            raise Unreadable(f"type {ast.unparse(ann)} (GPU IR types: "
                             f"{', '.join(DTYPES)})", ann)
        mem = mem or default_mem
        if mem is None:
            raise Unreadable("allocation without a memory", ann)
        self.elem[name] = t
        return f"{t}{shape} @ {mem}"

    def name_value(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            v = self.env.get(node.id, Sym(node.id)) if node.id not in self.local \
                else Sym(node.id)
            if isinstance(v, Sym):
                return v.name
            raise Unreadable(f"{node.id} = {v!r} where a name is expected", node)
        return ast.unparse(node)

    def memory(self, node: ast.expr) -> str:
        v = evaluate(node, self.env)
        if isinstance(v, Sym):
            return MEMORY_FROM_EXO.get(v.name, v.name)
        if isinstance(v, Call) and all(isinstance(x, int) for x in v.args):
            return f"{v.name}({', '.join(map(str, v.args))})"
        raise Unreadable(f"memory {ast.unparse(node)}", node)

    # ------------------------------------------------------------- statements
    def block(self, body: list[ast.stmt], d: int) -> list[str]:
        """A block's declarations scope over its rest only: siblings may reuse a
        name (GPU IR forbids shadowing, not reuse)."""
        saved = set(self.local)
        out: list[str] = []
        for s in body:
            out += self.stmt(s, d)
        self.local = saved | set(self.sizes)
        return out

    def stmt(self, s: ast.stmt, d: int) -> list[str]:
        pad = INDENT * d
        match s:
            case ast.Expr(value=ast.Constant()) | ast.Pass():
                return []
            case ast.Assert(test=t):
                self.assertion(t)
                return []
            case ast.For(target=ast.Name(id=v), iter=ast.Call() as it, body=b):
                head = self.loop_head(it)
                saved = dict(self.renames)
                name = v
                if v in self.local or v in RESERVED:
                    name = f"{v}_{s.lineno}"
                    self.renames[v] = name
                else:
                    self.renames.pop(v, None)
                had = v in self.local
                self.local.add(v)
                inner = self.block(b, d + 1)
                self.renames = saved
                if not had:
                    self.local.discard(v)
                return [f"{pad}for {name} in {head}:"] + inner if inner else []
            case ast.With(items=[ast.withitem(context_expr=ast.Name(id=n) as c)],
                          body=b) if isinstance(self.env.get(n), Call):
                head = self.with_value(self.env[n], c)
                inner = self.block(b, d + 1)
                return [f"{pad}with {head}:"] + inner if inner else []
            case ast.With(items=[ast.withitem(context_expr=ast.Call() as c)], body=b):
                head = self.with_head(c)
                inner = self.block(b, d + 1)
                return [f"{pad}with {head}:"] + inner if inner else []
            case ast.If(test=t, body=b, orelse=o):
                return self.if_stmt(t, b, o, d)
            case ast.AnnAssign(target=ast.Name(id=n), annotation=ann, value=None):
                self.local.add(n)
                return [f"{pad}{n}: {self.data_type(n, ann, None)}"]
            case ast.Assign(targets=[tgt], value=v):
                return [pad + self.assign(tgt, v)]
            case ast.AugAssign(target=tgt, op=ast.Add(), value=v):
                return [f"{pad}{self.lhs(tgt)} += {self.dexpr(v)}"]
            case ast.Expr(value=v):
                return [pad + x for x in self.call_stmt(v)]
        raise Unreadable(f"statement {ast.unparse(s).splitlines()[0][:60]}", s)

    def assertion(self, t: ast.expr) -> None:
        match t:
            case ast.Compare(left=ast.BinOp(left=ast.Name(id=n), op=ast.Mod(),
                                            right=r), ops=[ast.Eq()]) if n in self.sizes:
                k = evaluate(r, self.env)
                if isinstance(k, int) and k > 0:
                    self.sizes[n].append(k)
                    self.preconditions.append(f"{n} % {k} == 0")
            case ast.Compare(left=ast.Name(id=n), ops=[op], comparators=[r]) \
                    if n in self.sizes:
                k = evaluate(r, self.env)
                if isinstance(k, int):
                    self.lower[n] = max(self.lower.get(n, 0),
                                        k if isinstance(op, ast.Gt | ast.GtE) else 0)
                    sign = COMPARE_OPS.get(type(op))
                    if sign:
                        self.preconditions.append(f"{n} {sign} {k}")

    def loop_head(self, it: ast.Call) -> str:
        mode = it.func.id if isinstance(it.func, ast.Name) else ""
        if mode not in LOOPS or len(it.args) != 2:
            raise Unreadable(f"loop over {ast.unparse(it)}", it)
        lo, hi = ((self.folded(a) if mode == "cuda_threads" else self.cexpr(a))
                  for a in it.args)
        for a in it.args:
            self.divisors(a)
        if mode != "cuda_threads":
            return f"{mode}({lo}, {hi})"
        unit = next((k.value for k in it.keywords if k.arg == "unit"), None)
        return f"{mode}({lo}, {hi}, unit={self.unit(unit)})"

    def divisors(self, c: ast.expr) -> None:
        for n in ast.walk(c):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div | ast.FloorDiv |
                                                       ast.Mod):
                k = evaluate(n.right, self.env)
                for v in ast.walk(n.left):
                    if isinstance(v, ast.Name) and v.id in self.sizes and isinstance(
                            k, int) and k > 1:
                        self.sizes[v.id].append(k)

    def unit(self, node: ast.expr | None) -> str:
        if node is None:
            return "cuda_thread"
        text = unit_text(evaluate(node, self.env), node)
        if text is None:
            raise Unreadable(f"collective unit {ast.unparse(node)}", node)
        return text

    def with_value(self, v: Call, node: ast.expr) -> str:
        """`with device_fn:` where `device_fn = CudaDeviceFunction(...)` earlier."""
        return self.with_parts(v.name, list(v.args), dict(v.kwargs), node)

    def with_head(self, c: ast.Call) -> str:
        name = c.func.id if isinstance(c.func, ast.Name) else ""
        args: list[Any] = []
        for a in c.args:
            v = evaluate(a.value if isinstance(a, ast.Starred) else a, self.env)
            args += v if isinstance(a, ast.Starred) and isinstance(v, list) else [v]
        kw = {k.arg: evaluate(k.value, self.env) for k in c.keywords}
        return self.with_parts(name, args, kw, c)

    def with_parts(self, name: str, args: list[Any], kw: dict, c: ast.expr) -> str:
        if name == "CudaWarps":
            parts = [str(a) for a in args if a is not None]
            if any(not isinstance(a, int | type(None)) for a in args):
                raise Unreadable(f"CudaWarps bounds {args!r}", c)
            nm = kw.get("name")
            if nm is not None:
                nm = nm.name if isinstance(nm, Sym) else nm
                if not isinstance(nm, str):
                    raise Unreadable(f"CudaWarps name {nm!r}", c)
                parts.append(f'name="{nm}"')
            if args and args[0] is None or len(parts) == 1 and nm is None:
                raise Unreadable("CudaWarps with one bound", c)
            return f"CudaWarps({', '.join(parts)})"
        if name == "CudaDeviceFunction":
            return self.device_function(c, kw)
        raise Unreadable(f"with {ast.unparse(c)}", c)

    def device_function(self, c: ast.expr, kw: dict[str | None, Any]) -> str:
        parts = []
        for k in ("blockDim", "clusterDim"):
            v = kw.get(k)
            if v is not None:
                if not isinstance(v, int):
                    raise Unreadable(f"{k}={v!r}", c)
                parts.append(f"{k}={v}")
        wc = kw.get("warp_config")
        if wc is not None:
            if not isinstance(wc, list):
                raise Unreadable(f"warp_config {wc!r}", c)
            ws = []
            for w in wc:
                if not (isinstance(w, Call) and w.name == "CudaWarpConfig"):
                    raise Unreadable(f"warp_config entry {w!r}", c)
                kws = dict(w.kwargs)
                name, count = (list(w.args) + [kws.get("name"), kws.get("count")])[:2]
                dec = kws.get("setmaxnreg_dec") or 0
                inc = kws.get("setmaxnreg_inc") or 0
                ws.append(f'CudaWarpConfig("{name}", {count}, {dec}, {inc})')
            parts.append(f"warp_config=[{', '.join(ws)}]")
        return f"CudaDeviceFunction({', '.join(parts)})"

    def if_stmt(self, t: ast.expr, b: list[ast.stmt], o: list[ast.stmt], d: int
                ) -> list[str]:
        v = evaluate(t, self.env) if not self._mentions_local(t) else Unknown("")
        if isinstance(v, bool | int | type(None)):
            return self.block(b if v else o, d)
        cond = self.bexpr(t)
        out = []
        then = self.block(b, d + 1)
        if then:
            out += [f"{INDENT * d}if {cond}:"] + then
        other = self.block(o, d + 1)
        if other:  # GPU IR has no else: control values never change, so `not c`
            out += [f"{INDENT * d}if not ({cond}):"] + other
        return out

    def assign(self, tgt: ast.expr, v: ast.expr) -> str:
        if isinstance(tgt, ast.Name) and tgt.id not in self.local:
            self.local.add(tgt.id)  # a window statement
            if isinstance(v, ast.BinOp) and isinstance(v.op, ast.MatMult):
                return f"{tgt.id} = {self.dexpr(v.left)} @ {self.memory(v.right)}"
            raise Unreadable("a plain window statement (GPU IR names a special "
                             "window memory)", v)
        return f"{self.lhs(tgt)} = {self.dexpr(v)}"

    def lhs(self, tgt: ast.expr) -> str:
        if isinstance(tgt, ast.Name | ast.Subscript):
            return self.dexpr(tgt)
        raise Unreadable(f"assignment to {ast.unparse(tgt)}", tgt)

    # --------------------------------------------------------- sync and calls
    def call_stmt(self, v: ast.expr) -> list[str]:
        targets: list[ast.expr] = []
        while isinstance(v, ast.BinOp) and isinstance(v.op, ast.RShift):
            targets.insert(0, v.right)
            v = v.left
        if not isinstance(v, ast.Call) or not isinstance(v.func, ast.Name):
            raise Unreadable(f"expression {ast.unparse(v)[:60]}", v)
        name, args = v.func.id, v.args
        zs = ", ".join(self.dexpr(z) for z in targets)
        match name:
            case "Fence" if targets:
                raise Unreadable("Fence(...) >> z: a Fence names no barrier", v)
            case "Fence" if len(args) == 2:
                return [f"Fence({self.sync_tl(args[0])}, {self.sync_tl(args[1])})"]
            case "Arrive":
                n = self.cexpr(args[1]) if len(args) > 1 else "1"
                return [f"Arrive({self.sync_tl(args[0])}, {n}) >> {zs}"]
            case "Await" if len(args) == 3:
                n = evaluate(args[2], self.env)
                if not isinstance(n, int):
                    raise Unreadable(f"Await count {ast.unparse(args[2])}", v)
                return [f"Await({self.dexpr(args[0])}, {self.sync_tl(args[1])}, {n})"]
        if name in self.tracing:
            self.dropped += 1
            return []
        ours = INSTR_FROM_EXO.get(self.typed_copy(name, args) or name)
        if ours is None:
            raise Unreadable(f"instruction {name} (no GPU IR library counterpart)", v)
        text = f"{ours}({', '.join(self.dexpr(a) for a in args)})"
        return [text + (f" >> {zs}" if zs else "")]

    def typed_copy(self, name: str, args: list[ast.expr]) -> str | None:
        """endgame's host copies are generic over the element type
        (`cudaMemcpyAsync_htod_1d(n, dst, src)`, the type taken from the arrays): the
        typed name the GPU IR library has, from the destination's element type."""
        m = re.fullmatch(r"(cudaMemcpyAsync_(?:htod|dtoh)|cudaMemsetAsync0)_(\d)d", name)
        if m is None or len(args) <= int(m[2]):
            return None
        dst = args[int(m[2])]
        while isinstance(dst, ast.Subscript):
            dst = dst.value
        ty = self.elem.get(dst.id) if isinstance(dst, ast.Name) else None
        return f"{m[1]}_{m[2]}{ty}" if ty else None
