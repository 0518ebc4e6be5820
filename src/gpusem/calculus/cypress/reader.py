"""Read Fig. 5's Python-embedded notation into `calculus.cypress.ast`.

The text goes through Python's `ast` only: nothing of it is imported or run. A file
holds `@task` functions (Fig. 5a), any number of `TaskMapping(...)` calls in lists,
assignments or expression statements (Fig. 5b), imports and a docstring (ignored).
Anything else is BadInput with its `file:line:col` (docs/cypress.md is the grammar).

Note: Fig. 5a writes `writes["C"]` on l.33, l.45 and l.57 (a subscript, not a keyword:
a typo for `writes=["C"]`, l.1 and l.17 have the `=`); the reader takes only the
keyword form. proofs_notes/errata.md, "Cypress Fig. 5 typos".
"""

from __future__ import annotations

import ast as pyast
import re
from typing import Literal, cast

from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress.machine import MEMORIES, PROCESSORS, Memory, Processor
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import Span

_BINOPS: dict[type[pyast.operator], str] = {
    pyast.Add: "+", pyast.Sub: "-", pyast.Mult: "*", pyast.Div: "/",
    pyast.FloorDiv: "//", pyast.Mod: "%"}
_INSTR = re.compile(r"WGMMA_(?:SM90_)?(\d+)x(\d+)x(\d+)")
_DTYPES = ("f16", "bf16", "f32", "i32")
_MAPPING_KEYS = ("instance", "variant", "proc", "mems", "tunables", "entrypoint",
                 "calls", "warpspecialize", "pipeline")
Located = pyast.stmt | pyast.expr | pyast.arg | pyast.keyword


def read_program(source: str, filename: str = "<cypress>") -> A.Program:
    """The program of `source`: its variants and its mapping."""
    try:
        tree = pyast.parse(source, filename)
    except SyntaxError as error:
        line, col = error.lineno or 1, error.offset or 1
        raise BadInput(f"syntax error: {error.msg}",
                       span=Span(filename, line, col, line, col)) from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise BadInput(f"syntax error: {type(error).__name__}: {error}",
                       span=Span(filename, 1, 1, 1, 1)) from None
    try:
        return _Reader(filename).module(tree)
    except RecursionError:
        raise BadInput("syntax error: nesting too deep",
                       span=Span(filename, 1, 1, 1, 1)) from None


class _Reader:
    def __init__(self, file: str) -> None:
        self.file = file

    def span(self, node: Located) -> Span:
        line = node.lineno
        return Span(self.file, line, node.col_offset + 1,
                    node.end_lineno or line, (node.end_col_offset or 0) + 1)

    def bad(self, node: Located, message: str) -> BadInput:
        return BadInput(message, span=self.span(node))

    # ---- the module -------------------------------------------------------------

    def module(self, tree: pyast.Module) -> A.Program:
        variants: list[A.Variant] = []
        mappings: list[A.TaskMapping] = []
        for i, stmt in enumerate(tree.body):
            if isinstance(stmt, pyast.Import | pyast.ImportFrom):
                continue
            if (i == 0 and isinstance(stmt, pyast.Expr)
                    and isinstance(stmt.value, pyast.Constant)
                    and isinstance(stmt.value.value, str)):
                continue  # the docstring
            if isinstance(stmt, pyast.FunctionDef):
                variants.append(self.variant(stmt))
            elif isinstance(stmt, pyast.Assign | pyast.Expr):
                mappings.extend(self.mapping_list(stmt.value))
            else:
                raise self.bad(stmt, "unexpected statement: a Cypress file holds "
                               "@task functions and TaskMapping(...) values")
        end = tree.body[-1] if tree.body else None
        whole = Span(self.file, 1, 1, end.end_lineno or 1 if end else 1, 1)
        return A.Program(tuple(variants), tuple(mappings), whole)

    def mapping_list(self, node: pyast.expr) -> list[A.TaskMapping]:
        if isinstance(node, pyast.List | pyast.Tuple):
            return [m for elt in node.elts for m in self.mapping_list(elt)]
        if (isinstance(node, pyast.Call) and isinstance(node.func, pyast.Name)
                and node.func.id == "TaskMapping"):
            return [self.mapping(node)]
        raise self.bad(node, "unexpected value: expected TaskMapping(...) or a list "
                       "of them")

    # ---- Fig. 5b: one TaskMapping -----------------------------------------------

    def mapping(self, call: pyast.Call) -> A.TaskMapping:
        if call.args:
            raise self.bad(call.args[0], "bad mapping: TaskMapping takes keywords only")
        kw: dict[str, pyast.expr] = {}
        for k in call.keywords:
            if k.arg not in _MAPPING_KEYS:
                raise self.bad(k, f"bad mapping: unknown attribute {k.arg!r} "
                               f"(one of {', '.join(_MAPPING_KEYS)})")
            if k.arg in kw:
                raise self.bad(k, f"bad mapping: {k.arg} given twice")
            kw[k.arg] = k.value
        for need in ("instance", "variant", "proc", "mems"):
            if need not in kw:
                raise self.bad(call, f"bad mapping: TaskMapping needs {need}=")
        tunables = kw.get("tunables")
        pipeline = kw.get("pipeline")
        return A.TaskMapping(
            instance=self.string(kw["instance"]),
            variant=self.string(kw["variant"]),
            proc=self.processor(kw["proc"]),
            mems=tuple(self.memory(m) for m in self.elements(kw["mems"])),
            tunables=self.tunable_values(tunables) if tunables is not None else (),
            entrypoint=self.flag(kw.get("entrypoint")),
            calls=tuple(self.string(c) for c in self.elements(kw["calls"]))
            if "calls" in kw else (),
            warpspecialize=self.flag(kw.get("warpspecialize")),
            pipeline=self.integer(pipeline) if pipeline is not None else 1,
            span=self.span(call))

    def elements(self, node: pyast.expr) -> list[pyast.expr]:
        if not isinstance(node, pyast.List | pyast.Tuple):
            raise self.bad(node, "bad mapping: expected a list")
        return list(node.elts)

    def string(self, node: pyast.expr) -> str:
        if isinstance(node, pyast.Constant) and isinstance(node.value, str):
            if not node.value.isidentifier():
                raise self.bad(node, f"bad name: {node.value!r} is not an identifier")
            return node.value
        raise self.bad(node, "bad mapping: expected a string")

    def integer(self, node: pyast.expr) -> int:
        if (isinstance(node, pyast.Constant) and type(node.value) is int
                and 0 <= node.value < 2**31):
            return node.value
        raise self.bad(node, "bad integer: expected a literal in [0, 2^31)")

    def flag(self, node: pyast.expr | None) -> bool:
        if node is None:
            return False
        if isinstance(node, pyast.Constant) and isinstance(node.value, bool):
            return node.value
        raise self.bad(node, "bad mapping: expected True or False")

    def processor(self, node: pyast.expr) -> Processor:
        if isinstance(node, pyast.Name) and node.id in PROCESSORS:
            return PROCESSORS[node.id]
        raise self.bad(node, f"unknown processor: expected one of "
                       f"{', '.join(PROCESSORS)}")

    def memory(self, node: pyast.expr) -> Memory:
        if isinstance(node, pyast.Name) and node.id in MEMORIES:
            return MEMORIES[node.id]
        raise self.bad(node, f"unknown memory: expected one of {', '.join(MEMORIES)}")

    def tunable_values(self,
                       node: pyast.expr) -> tuple[tuple[str, A.TunableValue], ...]:
        if not isinstance(node, pyast.Dict):
            raise self.bad(node, "bad mapping: tunables={...} is a dict")
        out: list[tuple[str, A.TunableValue]] = []
        for key, value in zip(node.keys, node.values):
            if key is None:
                raise self.bad(value, "bad mapping: no ** in tunables")
            name = self.string(key)
            if any(name == n for n, _ in out):
                raise self.bad(key, f"bad mapping: tunable {name} given twice")
            is_proc = isinstance(value, pyast.Name)
            given = self.processor(value) if is_proc else self.integer(value)
            out.append((name, given))
        return tuple(out)

    # ---- Fig. 5a: one task variant ----------------------------------------------

    def variant(self, fn: pyast.FunctionDef) -> A.Variant:
        deco = fn.decorator_list[0] if len(fn.decorator_list) == 1 else None
        if not isinstance(deco, pyast.Call):
            raise self.bad(fn, "bad task: a variant has exactly one @task(..) "
                           "decorator")
        if not (isinstance(deco.func, pyast.Name) and deco.func.id == "task"):
            raise self.bad(deco, "bad task: expected @task(NAME, Inner|Leaf, ...)")
        for extra in deco.args[2:]:
            if (isinstance(extra, pyast.Subscript)
                    and isinstance(extra.value, pyast.Name)
                    and extra.value.id in ("reads", "writes")):
                raise self.bad(extra, f"bad task: privileges are keywords: write "
                               f"{extra.value.id}=[...] (Fig. 5a l.33 prints "
                               f"{extra.value.id}[...])")
        if len(deco.args) != 2:
            raise self.bad(deco, "bad task: @task takes a task name and Inner or Leaf")
        task = deco.args[0]
        if not (isinstance(task, pyast.Constant) and isinstance(task.value, str)
                and task.value.isidentifier()):
            raise self.bad(task, "bad task: the task name is a string identifier")
        kind_node = deco.args[1]
        if not (isinstance(kind_node, pyast.Name)
                and kind_node.id in ("Inner", "Leaf")):
            raise self.bad(kind_node, "bad task: expected Inner or Leaf")
        privileges: dict[str, tuple[str, ...]] = {"reads": (), "writes": ()}
        for k in deco.keywords:
            if k.arg not in privileges:
                raise self.bad(k, "bad task: privileges are reads=[..] and writes=[..]")
            privileges[k.arg] = tuple(self.string(e) for e in self.elements(k.value))
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.bad(fn, "bad task: plain positional parameters only")
        params = tuple(self.param(p) for p in a.args)
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise self.bad(fn, "bad task: a parameter named twice")
        body = self.block(fn.body, in_loop=False)
        return A.Variant(fn.name, task.value, cast(Literal["Inner", "Leaf"],
                                                    kind_node.id),
                         privileges["reads"], privileges["writes"], params, body,
                         self.span(fn))

    def param(self, p: pyast.arg) -> A.Param:
        ann = p.annotation
        if isinstance(ann, pyast.Name) and ann.id == "int":
            return A.Param(p.arg, None, self.span(p))
        if ann is None:
            raise self.bad(p, f"bad parameter: {p.arg} needs a type "
                           "(tensor[RANK, DTYPE] or int)")
        return A.Param(p.arg, self.tensor_type(ann), self.span(p))

    def tensor_type(self, ann: pyast.expr) -> A.TensorType:
        if (isinstance(ann, pyast.Subscript) and isinstance(ann.value, pyast.Name)
                and ann.value.id == "tensor" and isinstance(ann.slice, pyast.Tuple)
                and len(ann.slice.elts) == 2):
            rank, dtype = ann.slice.elts
            if (isinstance(rank, pyast.Constant) and type(rank.value) is int
                    and 1 <= rank.value <= 4 and isinstance(dtype, pyast.Name)
                    and dtype.id in _DTYPES):
                return A.TensorType(rank.value, dtype.id, self.span(ann))
        raise self.bad(ann, f"bad type: expected tensor[RANK, DTYPE] (rank 1-4, dtype "
                       f"one of {', '.join(_DTYPES)})")

    def block(self, body: list[pyast.stmt], in_loop: bool) -> tuple[A.Stmt, ...]:
        out: list[A.Stmt] = []
        for i, stmt in enumerate(body):
            if (i == 0 and not in_loop and isinstance(stmt, pyast.Expr)
                    and isinstance(stmt.value, pyast.Constant)):
                continue  # a docstring
            if isinstance(stmt, pyast.Pass):
                continue
            out.append(self.statement(stmt))
        return tuple(out)

    def statement(self, stmt: pyast.stmt) -> A.Stmt:
        if isinstance(stmt, pyast.Assign):
            if len(stmt.targets) != 1:
                raise self.bad(stmt, "bad assignment: one target list")
            return self.assign(stmt, stmt.targets[0], stmt.value, None)
        if isinstance(stmt, pyast.AnnAssign) and stmt.value is not None:
            return self.assign(stmt, stmt.target, stmt.value,
                               self.tensor_type(stmt.annotation))
        if isinstance(stmt, pyast.For):
            return self.range_(stmt)
        if isinstance(stmt, pyast.Expr) and isinstance(stmt.value, pyast.Call):
            return self.call_statement(stmt.value)
        raise self.bad(stmt, "unexpected statement: expected an assignment, a "
                       "launch, a prange/srange loop or a leaf operation")

    def assign(self, stmt: pyast.stmt, target: pyast.expr, value: pyast.expr,
               declared: A.TensorType | None) -> A.Assign:
        targets = target.elts if isinstance(target, pyast.Tuple) else [target]
        values = (value.elts if isinstance(value, pyast.Tuple) and len(targets) > 1
                  else [value])
        if len(targets) != len(values):
            raise self.bad(stmt, f"bad assignment: {len(targets)} names, "
                           f"{len(values)} values")
        names: list[str] = []
        for t in targets:
            if not isinstance(t, pyast.Name):
                raise self.bad(t, "bad assignment: assign to plain names only")
            names.append(t.id)
        return A.Assign(tuple(names), tuple(self.expr(v) for v in values), declared,
                        self.span(stmt))

    def range_(self, stmt: pyast.For) -> A.Range:
        it = stmt.iter
        if not (isinstance(it, pyast.Call) and isinstance(it.func, pyast.Name)
                and it.func.id in ("prange", "srange") and it.args and not it.keywords):
            raise self.bad(stmt.iter, "bad loop: expected prange(..) or srange(..)")
        if stmt.orelse:
            raise self.bad(stmt, "bad loop: no else on a range")
        t = stmt.target
        targets = t.elts if isinstance(t, pyast.Tuple) else [t]
        if not all(isinstance(x, pyast.Name) for x in targets):
            raise self.bad(t, "bad loop: loop variables are plain names")
        if len(targets) != len(it.args):
            raise self.bad(stmt, f"bad loop: {len(targets)} variables, "
                           f"{len(it.args)} extents")
        kind = cast(Literal["prange", "srange"], it.func.id)
        return A.Range(kind, tuple(cast(pyast.Name, x).id for x in targets),
                       tuple(self.expr(e) for e in it.args),
                       self.block(stmt.body, in_loop=True), self.span(stmt))

    def call_statement(self, call: pyast.Call) -> A.Stmt:
        if not isinstance(call.func, pyast.Name):
            raise self.bad(call, "unexpected call: expected launch(..), "
                           "call_external(..) or a leaf operation")
        name = call.func.id
        if call.keywords:
            raise self.bad(call.keywords[0], f"bad call: {name} takes no keywords")
        if name == "launch":
            if not call.args:
                raise self.bad(call, "bad launch: launch(TASK, args...)")
            task = call.args[0]
            if not (isinstance(task, pyast.Constant) and isinstance(task.value, str)):
                raise self.bad(task, "bad launch: the task name is a string")
            return A.Launch(task.value, tuple(self.expr(a) for a in call.args[1:]),
                            self.span(call))
        if name == "call_external":
            if not call.args:
                raise self.bad(call, "bad call: call_external(NAME, args...)")
            return A.CallExternal(self.string(call.args[0]),
                                  tuple(self.expr(a) for a in call.args[1:]),
                                  self.span(call))
        if name in A.LEAF_OPS:
            arity = A.LEAF_OPS[name][0]
            if len(call.args) != arity:
                raise self.bad(call, f"bad call: {name} takes {arity} tensors")
            return A.LeafOp(name, tuple(self.expr(a) for a in call.args),
                            self.span(call))
        raise self.bad(call, f"unknown function: {name} (leaf operations: "
                       f"{', '.join(A.LEAF_OPS)}; or call_external)")

    # ---- expressions --------------------------------------------------------------

    def expr(self, node: pyast.expr) -> A.Expr:
        s = self.span(node)
        if isinstance(node, pyast.Constant) and type(node.value) is int:
            if not 0 <= node.value < 2**31:
                raise self.bad(node, "bad integer: literals lie in [0, 2^31)")
            return A.Num(node.value, s)
        if isinstance(node, pyast.Name):
            if node.id in PROCESSORS:
                return A.ProcLit(PROCESSORS[node.id], s)
            return A.Var(node.id, s)
        if isinstance(node, pyast.BinOp) and type(node.op) in _BINOPS:
            op = cast(Literal["+", "-", "*", "/", "//", "%"], _BINOPS[type(node.op)])
            return A.BinOp(op, self.expr(node.left), self.expr(node.right), s)
        if isinstance(node, pyast.Subscript):
            return self.subscript(node)
        if isinstance(node, pyast.Call) and isinstance(node.func, pyast.Name):
            return self.call_expr(node, node.func.id)
        raise self.bad(node, "unexpected expression")

    def subscript(self, node: pyast.Subscript) -> A.Expr:
        v = node.value
        if (isinstance(v, pyast.Attribute) and v.attr == "shape"
                and isinstance(v.value, pyast.Name)):
            dim = node.slice
            if isinstance(dim, pyast.Constant) and type(dim.value) is int:
                return A.ShapeOf(v.value.id, dim.value, self.span(node))
            raise self.bad(node.slice, "bad shape: T.shape[INT]")
        if isinstance(v, pyast.Name):
            sl = node.slice
            idx = sl.elts if isinstance(sl, pyast.Tuple) else [sl]
            return A.Piece(v.id, tuple(self.expr(i) for i in idx), self.span(node))
        raise self.bad(node, "unexpected subscript: expected P[i, ..] or T.shape[d]")

    def call_expr(self, node: pyast.Call, name: str) -> A.Expr:
        s = self.span(node)
        if node.keywords:
            raise self.bad(node.keywords[0], f"bad call: {name} takes no keywords")
        args = node.args
        if name in ("cdiv", "min", "max") and len(args) == 2:
            b = cast(Literal["cdiv", "min", "max"], name)
            return A.Builtin(b, tuple(self.expr(a) for a in args), s)
        if name == "tunable" and len(args) == 1 and isinstance(args[0], pyast.Name) \
                and args[0].id in ("int", "processor"):
            return A.Tunable(cast(Literal["int", "processor"], args[0].id), s)
        if name == "make_tensor" and args:
            return A.MakeTensor(tuple(self.expr(a) for a in args), s)
        if name == "partition_by_blocks" and len(args) == 2:
            blocks = args[1]
            if not isinstance(blocks, pyast.Tuple):
                raise self.bad(blocks, "bad partition: block sizes are a tuple")
            return A.PartitionBlocks(
                self.tensor_name(args[0]),
                tuple(None if isinstance(b, pyast.Constant) and b.value is None
                      else self.expr(b) for b in blocks.elts), s)
        if name == "partition_by_mma" and len(args) == 4:
            instr = self.expr(args[1])
            op = args[3]
            if not isinstance(instr, A.Instr):
                raise self.bad(args[1], "bad partition: expected WGMMA_MxNxK()")
            if not (isinstance(op, pyast.Constant) and op.value in ("A", "B", "C")):
                raise self.bad(op, 'bad partition: the operand is "A", "B" or "C"')
            return A.PartitionMma(self.tensor_name(args[0]), instr,
                                  self.expr(args[2]),
                                  cast(Literal["A", "B", "C"], op.value), s)
        m = _INSTR.fullmatch(name)
        if m and not args:
            return A.Instr(name, int(m[1]), int(m[2]), int(m[3]), s)
        raise self.bad(node, f"unknown function: {name}")

    def tensor_name(self, node: pyast.expr) -> str:
        if isinstance(node, pyast.Name):
            return node.id
        raise self.bad(node, "bad partition: partition a tensor named by a variable")
