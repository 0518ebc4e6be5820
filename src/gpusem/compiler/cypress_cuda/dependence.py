"""Dependence analysis (seed 001, Sec. 4.2.1, l.546-563, Fig. 8): the instantiated task
tree lowered to the event IR of Fig. 7 by an in-order traversal from the entrypoint.

A launch is lowered in the four steps of l.551-557, the copy-in/copy-out discipline:
(1) a fresh tensor per tensor argument, in the memory the callee's instance maps it to;
(2) a copy-in for each argument the callee reads, after the argument's last writers
(true dependence); (3) the callee: a `call` of a leaf variant after the copy-ins, or
the inner variant's body lowered in place on the fresh tensors; (4) a copy-out for each
argument it writes, after the callee's last writes and after every earlier reader and
writer of the caller's tensor (anti and output dependences). `prange` becomes a `pfor`
whose event array is annotated with the processor of the instances it launches; later
operations wait on the array through the broadcast `[:]` (l.559); `srange` a `for`.

Notes (errata "Cypress dependence analysis and Fig. 8b"):
- Operations inside a loop body that depend on events outside it get those events as
  the loop's precondition instead (Fig. 8b l.17: the gemm loop waits on e6, its copy-in
  e8 has `{}`); iterations of a `for` run in order (the event machine's reading).
- A precondition implied by another one of the same set is dropped (Fig. 8b l.26 lists
  e11 only, not the copy-in e8 that also read C).
- Writing a piece of a tensor adds to its last writers instead of replacing them.
- Names: a fresh tensor is the parameter's name with the instance's level (W for a warp,
  R for a thread's registers, a number otherwise), a partition the source tensor's name
  with `p`, events e1, e2, ... in the order the operations start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import Memory, Processor
from gpusem.calculus.errors import BadInput
from gpusem.interpreter.cypress.seq import entrypoint, resolve
from gpusem.interpreter.cypress.views import (
    Partition,
    View,
    partition_by_blocks,
    partition_by_mma,
    root_view,
)


@dataclass
class TensorV:
    name: str          # its IR name
    view: View         # a stand-in of its shape (first point of every range)


@dataclass
class PartV:
    name: str
    base: str          # the IR tensor it partitions
    part: Partition


@dataclass
class LoopV:
    name: str          # the IR loop variable


Value = int | Processor | A.Instr | TensorV | PartV | LoopV


@dataclass
class State:
    """The events an IR tensor's next reader (the writers) and next writer (both)
    wait on."""

    writes: list[E.EvRef] = field(default_factory=list)
    reads: list[E.EvRef] = field(default_factory=list)


@dataclass
class Scope:
    """One block being emitted: its operations, its events, the tensors it created,
    and the events of enclosing blocks its operations waited on (the loop's `pr`)."""

    ops: list[E.Op] = field(default_factory=list)
    events: set[str] = field(default_factory=set)
    ancestors: dict[str, set[str]] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    outer: list[E.EvRef] = field(default_factory=list)
    states: dict[str, State] = field(default_factory=dict)
    touched: dict[str, bool] = field(default_factory=dict)  # outer tensor -> written
    own: set[str] = field(default_factory=set)  # the tensors this block allocates


class Lowering:
    def __init__(self, program: A.Program) -> None:
        self.program = program
        self.n_events = 0
        self.names: set[str] = set()
        self.scopes: list[Scope] = []
        self.loop_vars: list[str] = []

    # ---- names and events -----------------------------------------------------------

    def fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.names:
            n += 1
            name = f"{base}{n}"
        self.names.add(name)
        return name

    def new_event(self) -> str:
        self.n_events += 1
        return f"e{self.n_events}"

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def state(self, tensor: str) -> State:
        """The tensor's state as the current block sees it."""
        for depth in range(len(self.scopes) - 1, -1, -1):
            if tensor in self.scopes[depth].states:
                st = self.scopes[depth].states[tensor]
                if depth == len(self.scopes) - 1:
                    return st
                local = State(list(st.writes), list(st.reads))
                self.scope.states[tensor] = local
                return local
        raise BadInput(f"dependence analysis: unknown tensor {tensor}")

    def preconditions(self, deps: list[E.EvRef]) -> tuple[E.EvRef, ...]:
        """Local events, minus those another one implies; outer ones go to `outer`."""
        sc = self.scope
        local = []
        for d in deps:
            if d.name in sc.events:
                if d not in local:
                    local.append(d)
            elif d not in sc.outer:
                sc.outer.append(d)
        implied = {a for d in local for a in sc.ancestors.get(d.name, set())}
        return tuple(d for d in local if d.name not in implied)

    def emit_event_op(self, op: E.Copy | E.Call | E.Loop) -> None:
        sc = self.scope
        sc.ops.append(op)
        sc.events.add(op.event)
        anc: set[str] = set()
        for d in op.pre:
            anc |= {d.name} | sc.ancestors.get(d.name, set())
            sc.used.add(d.name)
        sc.ancestors[op.event] = anc

    # ---- the traversal --------------------------------------------------------------

    def lower(self, arrays: dict[str, np.ndarray],
              scalars: dict[str, int]) -> E.EventProgram:
        inst = entrypoint(self.program)
        var = self.program.variant(inst.variant)
        if var is None:
            raise BadInput(f"unknown variant: {inst.variant}")
        self.scopes.append(Scope())
        env: dict[str, Value] = {}
        for p in var.params:
            if p.type is None:
                env[p.name] = scalars[p.name]
            else:
                stand_in = root_view(p.name, arrays[p.name])
                env[p.name] = TensorV(self.fresh(p.name), stand_in)
                self.scope.states[p.name] = State()
                self.scope.own.add(p.name)
        self.body(inst, var.body, env)
        top = self.scopes.pop()
        return E.EventProgram(tuple(p.name for p in var.tensor_params),
                              E.Block(tuple(top.ops), self.sinks(top)))

    def body(self, inst: A.TaskMapping, stmts: tuple[A.Stmt, ...],
             env: dict[str, Value]) -> None:
        for s in stmts:
            match s:
                case A.Assign(targets, values, _, _):
                    for t, e in zip(targets, values):
                        env[t] = self.assigned(inst, t, e, env)
                case A.Range(kind, names, extents, inner, _):
                    self.range_(inst, kind, names, extents, inner, env)
                case A.Launch(task, args, span):
                    self.launch(inst, task, args, env, span)
                case A.LeafOp() | A.CallExternal():
                    raise BadInput("dependence analysis: data operations belong to "
                                   "leaf variants, which are called, not lowered")

    def assigned(self, inst: A.TaskMapping, name: str, e: A.Expr,
                 env: dict[str, Value]) -> Value:
        if isinstance(e, A.Tunable):
            return dict(inst.tunables)[name]
        if isinstance(e, A.MakeTensor):
            dims = tuple(self.concrete(d, env) for d in e.dims)
            ir = self.fresh(name)
            self.scope.ops.append(E.Alloc(ir, dims, Memory.NONE))
            self.scope.states[ir] = State()
            self.scope.own.add(ir)
            return TensorV(ir, root_view(ir, np.zeros(dims, np.float32)))
        if isinstance(e, A.PartitionBlocks):
            src = env[e.tensor]
            assert isinstance(src, TensorV)
            sizes = tuple(None if b is None else self.concrete(b, env)
                          for b in e.blocks)
            ir = self.fresh(f"{src.name}p")
            self.scope.ops.append(E.PartBlocks(ir, src.name, sizes))
            return PartV(ir, src.name, partition_by_blocks(src.view, sizes, e.span))
        if isinstance(e, A.PartitionMma):
            src = env[e.tensor]
            proc = self.value(e.proc, env)
            assert isinstance(src, TensorV) and isinstance(proc, Processor)
            ir = self.fresh(f"{src.name}p")
            self.scope.ops.append(E.PartMma(ir, src.name, e.instr.name, e.instr.m, proc,
                                            e.operand))
            return PartV(ir, src.name, partition_by_mma(src.view, e.instr.m, proc,
                                                        e.operand, e.span))
        return self.value(e, env)

    def value(self, e: A.Expr, env: dict[str, Value]) -> Value:
        match e:
            case A.Var(name, _):
                return env[name]
            case A.ProcLit(proc, _):
                return proc
            case A.Instr():
                return e
            case _:
                return self.concrete(e, env)

    def concrete(self, e: A.Expr, env: dict[str, Value]) -> int:
        """An integer expression's value (loop variables at their first point)."""
        match e:
            case A.Num(value, _):
                return value
            case A.Var(name, _):
                v = env[name]
                return 0 if isinstance(v, LoopV) else int(v)  # type: ignore[arg-type]
            case A.BinOp(op, left, right, _):
                a, b = self.concrete(left, env), self.concrete(right, env)
                return {"+": a + b, "-": a - b, "*": a * b, "/": a // b, "//": a // b,
                        "%": a % b}[op]
            case A.Builtin(name, args, _):
                a, b = (self.concrete(x, env) for x in args)
                return -(-a // b) if name == "cdiv" else min(a, b) if name == "min" \
                    else max(a, b)
            case A.ShapeOf(tensor, dim, _):
                t = env[tensor]
                assert isinstance(t, TensorV)
                return t.view.shape[dim]
        raise BadInput("dependence analysis: expected an integer expression")

    def symbolic(self, e: A.Expr, env: dict[str, Value]) -> E.IExpr:
        if isinstance(e, A.Var) and isinstance(env.get(e.name), LoopV):
            v = env[e.name]
            assert isinstance(v, LoopV)
            return E.IVar(v.name)
        if isinstance(e, A.BinOp) and e.op in ("+", "-", "*", "//"):
            left, right = self.symbolic(e.left, env), self.symbolic(e.right, env)
            if not (isinstance(left, E.INum) and isinstance(right, E.INum)):
                return E.IBin(e.op, left, right)  # type: ignore[arg-type]
        return E.INum(self.concrete(e, env))

    def argument(self, e: A.Expr,
                 env: dict[str, Value]) -> tuple[E.Ref, str, View, bool]:
        """A launch argument: its IR reference, base tensor, shape stand-in, whole?"""
        if isinstance(e, A.Var):
            t = env[e.name]
            assert isinstance(t, TensorV)
            return E.Ref(t.name), t.name, t.view, True
        assert isinstance(e, A.Piece)
        p = env[e.partition]
        assert isinstance(p, PartV)
        index = tuple(self.symbolic(i, env) for i in e.index)
        view = p.part.piece(tuple(self.concrete(i, env) for i in e.index), e.span)
        return E.Ref(p.name, index), p.base, view, False

    def launch(self, inst: A.TaskMapping, task: str, args: tuple[A.Expr, ...],
               env: dict[str, Value], span: object) -> None:
        callee = resolve(self.program, inst, task, span)  # type: ignore[arg-type]
        var = self.program.variant(callee.variant)
        assert var is not None
        level = {Processor.WARP: "W", Processor.THREAD: "R"}.get(callee.proc, "")
        callee_env: dict[str, Value] = {}
        fresh: dict[str, tuple[str, E.Ref, str, bool]] = {}
        copy_ins: list[E.EvRef] = []
        mems = iter(callee.mems)
        for p, a in zip(var.params, args):
            if p.type is None:
                callee_env[p.name] = self.concrete(a, env)
                continue
            ref, base, view, whole = self.argument(a, env)
            name = self.fresh(f"{p.name}{level or 1}") if level else self.fresh(p.name)
            self.scope.ops.append(E.Alloc(name, view.shape, next(mems)))  # step (1)
            self.scope.states[name] = State()
            self.scope.own.add(name)
            callee_env[p.name] = TensorV(name, view)
            fresh[p.name] = (name, ref, base, whole)
            if p.name in var.reads:  # step (2)
                st = self.state(base)
                ev = self.new_event()
                self.emit_event_op(E.Copy(ev, (), ref, E.Ref(name),
                                          self.preconditions(st.writes)))
                st.reads.append(E.EvRef(ev))
                self.mark(base, written=False)
                self.scope.states[name].writes = [E.EvRef(ev)]
                copy_ins.append(E.EvRef(ev))
        if var.kind == "Leaf":  # step (3)
            ev = self.new_event()
            self.emit_event_op(E.Call(ev, (), var.name,
                                      tuple(E.Ref(n) for n, *_ in fresh.values()),
                                      self.preconditions(copy_ins)))
            for n, *_ in fresh.values():
                self.scope.states[n].writes = [E.EvRef(ev)]
        else:
            self.body(callee, var.body, callee_env)
        for pname in var.writes:  # step (4)
            name, ref, base, whole = fresh[pname]
            done = self.state(name).writes
            st = self.state(base)
            ev = self.new_event()
            self.emit_event_op(E.Copy(ev, (), E.Ref(name), ref,
                                      self.preconditions(done + st.writes + st.reads)))
            st.writes = [E.EvRef(ev)] if whole else st.writes + [E.EvRef(ev)]
            if whole:
                st.reads = []
            self.mark(base, written=True)

    def range_(self, inst: A.TaskMapping, kind: str, names: tuple[str, ...],
               extents: tuple[A.Expr, ...], body: tuple[A.Stmt, ...],
               env: dict[str, Value]) -> None:
        if not names:
            self.body(inst, body, env)
            return
        name, rest = names[0], names[1:]
        extent = self.symbolic(extents[0], env)
        ir_var = name if name not in self.loop_vars else next(
            c for c in "ijklmnpqrstuvw" if c not in self.loop_vars)
        self.loop_vars.append(ir_var)
        ev = self.new_event()
        inner_env = dict(env)
        inner_env[name] = LoopV(ir_var)
        self.scopes.append(Scope())
        self.range_(inst, kind, rest, extents[1:], body, inner_env)
        sc = self.scopes.pop()
        self.loop_vars.pop()
        env.update({k: v for k, v in inner_env.items() if k not in env})
        parallel = kind == "prange"
        et: E.EventType = ()
        if parallel:
            assert isinstance(extent, E.INum)
            et = ((extent.value, self.launched_proc(inst, body)),)
        pre = self.preconditions(sc.outer)
        self.emit_event_op(E.Loop(ev, et, parallel, ir_var, E.INum(0), extent, pre,
                                  E.Block(tuple(sc.ops), self.sinks(sc))))
        done = E.EvRef(ev, (None,) if parallel else ())
        for tensor, written in sc.touched.items():
            st = self.state(tensor)
            if written:
                st.writes = [done]
                st.reads = []
            else:
                st.reads.append(done)
            self.mark(tensor, written)

    def mark(self, tensor: str, written: bool) -> None:
        """Note that the current block reads or writes a tensor of an enclosing one."""
        sc = self.scope
        if tensor not in sc.own:
            sc.touched[tensor] = sc.touched.get(tensor, False) or written

    def launched_proc(self, inst: A.TaskMapping, body: tuple[A.Stmt, ...]) -> Processor:
        for s in body:
            if isinstance(s, A.Launch):
                return resolve(self.program, inst, s.task, s.span).proc
            if isinstance(s, A.Range):
                return self.launched_proc(inst, s.body)
        return inst.proc

    def sinks(self, sc: Scope) -> tuple[E.EvRef, ...]:
        ops = [o for o in sc.ops if isinstance(o, E.Copy | E.Call | E.Loop)]
        out = []
        for o in ops:
            if o.event not in sc.used:
                index = (None,) if isinstance(o, E.Loop) and o.parallel else ()
                out.append(E.EvRef(o.event, index))
        return tuple(out)


def dependence_analysis(program: A.Program, arrays: dict[str, np.ndarray],
                        scalars: dict[str, int]) -> E.EventProgram:
    """The event IR of a legal program under its mapping, for these input shapes."""
    return Lowering(program).lower(arrays, scalars)
