"""Emit an Exo-GPU proc (Python source for Exo's own `@proc` front end) from a GPU IR
procedure, for everything both sides can express.

GPU IR is the paper's syntax, which is Exo's surface syntax (Figures 1-2 are written
in it), so the emitter is a printer with a few rewrites (`compiler/gpuir_exo/
dialect.py`): `proc` -> `@proc def`; a size parameter divided by a constant in the body
gets `assert N % d == 0` (Exo's front end needs divisibility to be stated); the Await
count of an mbarrier in the dialect's form; instruction calls in Exo's spelling.

The result keeps, per emitted line, the span of the GPU IR statement it came from, so
a hazard Exo reports at `line:col` of the emitted file maps back to the GPU IR line
(`ExoSource.origin`). Constructs Exo cannot express (or we have not mapped) raise
`Unexpressible` naming the construct; docs/exo.md lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import affine
from gpusem.calculus.gpuir.printer import (
    print_arg,
    print_bexpr,
    print_cexpr,
    print_dexpr,
    print_mem,
    print_unit,
    print_zread,
)
from gpusem.calculus.gpuir.walk import walk
from gpusem.calculus.span import NO_SPAN, Span
from gpusem.compiler.gpuir_exo.dialect import (
    HOST_COPIES,
    INSTR_TO_EXO,
    SAME_MEMORIES,
    SM80_NAMES,
    SM90_NAMES,
    SYNC_TLS,
    Dialect,
    commit_group_memory,
)
from gpusem.compiler.gpuir_exo.emit_tma import (
    TMA_INSTRS,
    TmaPlan,
    warp_barriers,
    warp_body_refusal,
    warp_issued,
)
from gpusem.compiler.gpuir_exo.emit_wgmma import (
    WGMMA_INSTRS,
    WgmmaRefused,
    wgmma_text,
    zero_feeds_mma,
)

INDENT = "    "


class Unexpressible(BadInput):
    """A GPU IR construct with no Exo-GPU counterpart in the chosen dialect."""

    def __init__(self, construct: str, span: Span = NO_SPAN, dialect: str = ""):
        self.construct = construct
        super().__init__(f"not expressible in Exo-GPU ({dialect}): {construct}",
                         rule="EmitExo", span=span)


@dataclass(frozen=True)
class ExoSource:
    """An emitted Exo module: its text, the proc to check, the keyword sizes of
    `sync_check`, and the GPU IR span each emitted line came from."""

    text: str
    proc: str
    sizes: dict[str, int]
    dialect: Dialect
    lines: dict[int, Span] = field(default_factory=dict)

    def origin(self, line: int) -> Span | None:
        """The GPU IR statement behind emitted line `line` (1-based)."""
        return self.lines.get(line)

    def standalone(self) -> str:
        """The module plus a `__main__` that runs Exo's checker and compiler on it:
        one file that reproduces a finding with Exo alone (`python program_exo.py`)."""
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return (self.text + "\n\nif __name__ == \"__main__\":\n"
                f"    {self.proc}.sync_check({sizes})\n"
                "    print(\"sync_check: accepted\")\n"
                f"    ext_compile_procs_to_strings([{self.proc}], \"out\")\n"
                "    print(\"compile: accepted\")\n")


def emit_proc(proc: A.Proc, defines: Mapping[str, int] | None = None,
              dialect: Dialect = "pldi26",
              preconditions: tuple[str, ...] = ()) -> ExoSource:
    """The Exo module for `proc`; `defines` are the sizes `sync_check` is called with
    (every control parameter needs one). `preconditions`: conditions on the sizes to
    state as `assert`s (GPU IR has none; the reader keeps those of an Exo proc, whose
    effect checker needs them to prove accesses in bounds)."""
    em = _Emitter(proc, dialect)
    em.run(preconditions)
    sizes = {p.name: int((defines or {})[p.name]) for p in proc.ctrl_params
             if p.name in (defines or {})}
    return ExoSource(em.text(), proc.name, sizes, dialect, em.origins)


class _Emitter:
    def __init__(self, proc: A.Proc, dialect: Dialect):
        self.proc, self.dialect = proc, dialect
        self.out: list[str] = []
        self.origins: dict[int, Span] = {}
        self.names: set[str] = set()
        self.cg_tl: dict[str, str] = {}  # commit group -> the sync-tl arrived on it
        self.mbarriers: set[str] = set()
        # TMA (pldi26 only, compiler/gpuir_exo/emit_tma.py): the tensor maps to
        # hoist and each call's text; `threads` counts the enclosing thread-level
        # scopes, `tma_warp` is set inside a one-thread loop emitted as a warp.
        self.tma = TmaPlan(proc) if dialect == "pldi26" else None
        self.warp_zs = warp_barriers(proc)
        self.allocs = {s.name: s for s in walk(proc.body) if isinstance(s, A.Alloc)}
        self.params = {p.name: p for p in proc.data_params}
        self.threads = 0
        self.tma_warp = False

    # ------------------------------------------------------------------ driver
    def run(self, preconditions: tuple[str, ...] = ()) -> None:
        self._scan()
        p = self.proc
        params = ", ".join(self._param(x) for x in p.params)
        self.line("@proc", p.span, 0)
        self.line(f"def {p.name}({params}):", p.span, 0)
        asserts = [f"{size} % {d} == 0" for size, d in sorted(self._divisors())]
        for cond in asserts + [c for c in preconditions if c not in asserts]:
            self.line(f"assert {cond}", p.span, 1)
        for text in self.tma.hoisted() if self.tma else []:
            self.line(text, p.span, 1)
        self.body(p.body, 1)

    def text(self) -> str:
        head = ["from __future__ import annotations", "from exo import *",
                "from exo.platforms.cuda import *"]
        mems = {m.name for m in _memories(self.proc)}
        if "CudaCommitGroup" in mems and self.dialect == "endgame":
            mems |= {"Sm80_CommitGroup", "Sm90_CommitGroup"}  # where endgame has them
        if self.names & SM80_NAMES or self.cg_tl or any(m.startswith("Sm80") for m in mems):
            head.append("from exo.platforms.Sm80 import *")
        if (self.names & SM90_NAMES or any(m.startswith("Sm90") for m in mems)
                or any(n.startswith("Sm90_") for n in self.names)):
            head.append("from exo.platforms.Sm90 import *")
        if self.dialect == "endgame" and self.mbarriers:
            head.append("from exo import ring_buffer_by")
        shift = len(head) + 1
        self.origins = {k + shift: v for k, v in self.origins.items()}
        return "\n".join(head + [""] + self.out) + "\n"

    def line(self, text: str, span: Span, depth: int) -> None:
        self.out.append(INDENT * depth + text)
        self.origins[len(self.out)] = span

    def _scan(self) -> None:
        """Which barriers are commit groups (of which arrive sync-tl) and mbarriers,
        and which platform names are used (for the imports)."""
        kinds = {s.name: s.mem.name for s in walk(self.proc.body)
                 if isinstance(s, A.BarrierAlloc)}
        for s in walk(self.proc.body):
            match s:
                case A.Arrive(tl=tl, barriers=zs):
                    self.names.add(self._tl(tl, s.span))
                    for z in zs:
                        if kinds.get(z.name) == "CudaCommitGroup":
                            self.cg_tl.setdefault(z.name, tl)
                case A.Await(tl=tl) | A.Fence(pre=tl):
                    self.names.add(self._tl(tl, s.span))
                    if isinstance(s, A.Fence):
                        self.names.add(self._tl(s.post, s.span))
                case A.InstrCall(instr=g):
                    self.names.add(g)
        self.mbarriers = {n for n, m in kinds.items() if m == "CudaMbarrier"}
        if self.dialect == "endgame":
            self._one_shot(self.proc.body, 0, {})

    def _one_shot(self, body: tuple[A.Stmt, ...], loops: int, seen: dict) -> None:
        """endgame's mbarriers are one-shot ring-buffer slots (REPORT 6.5); GPU IR
        has no `ring_buffer_by`, so only an mbarrier arrived on once (outside any
        seq loop) maps: reuse, the paper's `~0` phases, is unexpressible there."""
        for s in body:
            if isinstance(s, A.Arrive):
                for z in s.barriers:
                    if z.name in self.mbarriers:
                        seen[z.name] = seen.get(z.name, 0) + 1 + loops
                        if seen[z.name] > 1:
                            raise Unexpressible(
                                f"mbarrier {z.name} arrived on more than once (endgame: "
                                "one-shot ring-buffer slots; GPU IR has no "
                                "ring_buffer_by)", s.span, self.dialect)
            inner = getattr(s, "body", None)
            if inner:
                seq = isinstance(s, A.For) and s.mode is A.LoopMode.SEQ
                self._one_shot(inner, loops + (1 if seq else 0), seen)

    def _divisors(self) -> set[tuple[str, int]]:
        sizes = {p.name for p in self.proc.ctrl_params if p.kind is A.CtrlKind.SIZE}
        found: set[tuple[str, int]] = set()

        def visit(c: A.CExpr) -> None:
            if isinstance(c, A.CBin):
                if c.op in ("/", "%") and isinstance(c.rhs, A.CInt):
                    found.update((n, c.rhs.value) for n in _vars(c.lhs) & sizes
                                 if c.rhs.value > 1)
                visit(c.lhs)
                visit(c.rhs)

        for s in walk(self.proc.body):
            if isinstance(s, A.For):
                visit(s.lo)
                visit(s.hi)
        return found

    # -------------------------------------------------------------- statements
    def body(self, body: tuple[A.Stmt, ...], depth: int) -> None:
        for i, s in enumerate(body):
            if (isinstance(s, A.InstrCall) and s.instr == "Sm90_wgmma_zero_d_f32"
                    and self.dialect == "pldi26" and not zero_feeds_mma(body, i)):
                raise Unexpressible("a wgmma zero not followed by an mma on its "
                                    "accumulator (Exo's Sm90_zero_scale_d_f32 only "
                                    "zeroes at the next mma)", s.span, self.dialect)
            self.stmt(s, depth)

    def stmt(self, s: A.Stmt, d: int) -> None:
        sp = s.span
        match s:
            case A.For() if warp_issued(s, self.warp_zs):
                self._tma_warp(s, d)
            case A.For(var=v, lo=lo, hi=hi, mode=mode, unit=unit, body=b):
                bounds = f"{print_cexpr(lo)}, {print_cexpr(hi)}"
                if unit is not None:
                    bounds += f", unit={print_unit(unit)}"
                self.line(f"for {v} in {mode.value}({bounds}):", sp, d)
                self._nested(b, d, mode is A.LoopMode.CUDA_THREADS)
            case A.CudaDeviceFunction():
                self.line(f"with CudaDeviceFunction({self._launch(s)}):", sp, d)
                self.body(s.body, d + 1)
            case A.CudaWarps(lo=lo, hi=hi, name=name, body=b):
                args = [] if lo is None else [str(lo), str(hi)]
                if name is not None:
                    args.append(f'name="{name}"')
                self.line(f"with CudaWarps({', '.join(args)}):", sp, d)
                self._nested(b, d, True)
            case A.If(cond=c, body=b):
                self.line(f"if {print_bexpr(c)}:", sp, d)
                self.body(b, d + 1)
            case A.Assign(name=n, idx=idx, rhs=e):
                self.line(f"{n}{_points(idx)} = {_dexpr(e)}", sp, d)
            case A.Reduce(name=n, idx=idx, rhs=e):
                self.line(f"{n}{_points(idx)} += {_dexpr(e)}", sp, d)
            case A.WindowStmt(name=n, source=src, mem=m):
                if m.name == "Sm90_tensorMap":
                    if self.tma is None:
                        raise Unexpressible("special window Sm90_tensorMap (endgame's "
                                            "TMA is not mapped)", sp, self.dialect)
                    return  # folded into the TMA calls that use it (emit_tma.py)
                self.line(f"{n} = {print_dexpr(src)}", sp, d)
            case A.Alloc(name=n, dtype=t, shape=sh, mem=m):
                self.line(f"{n}: {t.value}{_shape(sh)} @ {self._memory(m)}", sp, d)
            case A.BarrierAlloc():
                self.line(self._barrier_alloc(s), sp, d)
            case A.Free():
                raise Unexpressible("an explicit free (Exo inserts its own)", sp,
                                    self.dialect)
            case A.Fence(pre=pre, post=post):
                self.line(f"Fence({self._tl(pre, sp)}, {self._tl(post, sp)})", sp, d)
            case A.Arrive(tl=tl, n=n, barriers=zs):
                targets = ", ".join(self._zread(z) for z in zs)
                self.line(f"Arrive({self._tl(tl, sp)}, {n}) >> {targets}", sp, d)
            case A.Await(barrier=z, tl=tl, n=n):
                count = self._await_count(z, n, sp)
                self.line(f"Await({self._zread(z)}, {self._tl(tl, sp)}, {count})", sp,
                          d)
            case A.InstrCall():
                self._instr(s, d)

    def _nested(self, body: tuple[A.Stmt, ...], d: int, threads: bool) -> None:
        self.threads += threads
        self.body(body, d + 1)
        self.threads -= threads

    def _tma_warp(self, s: A.For, d: int) -> None:
        """A one-thread loop issuing TMA: Exo's TMA is issued by a warp."""
        if self.tma is None:
            raise Unexpressible("TMA (endgame's Sm90_tma_* instructions are not "
                                "mapped)", s.span, self.dialect)
        why = warp_body_refusal(s) or (
            "a TMA issued below CTA level" if self.threads else None)
        if why is not None:
            raise Unexpressible(why, s.span, self.dialect)
        self.line("with CudaWarps(0, 1):", s.span, d)
        self.tma_warp = True
        self._nested(s.body, d, True)
        self.tma_warp = False

    def _param(self, p: A.Param) -> str:
        match p:
            case A.CtrlParam(name=n, kind=k):
                return f"{n}: {k.value}"
            case A.DataParam(name=n, dtype=t, shape=sh, mem=m):
                return f"{n}: {t.value}{_shape(sh)} @ {self._memory(m)}"
        raise AssertionError(p)

    def _launch(self, s: A.CudaDeviceFunction) -> str:
        args = []
        if s.block_dim is not None:
            args.append(f"blockDim={s.block_dim}")
        if s.cluster_dim != 1:
            args.append(f"clusterDim={s.cluster_dim}")
        if s.warp_config:
            ws = []
            for w in s.warp_config:
                extra = (f", setmaxnreg_dec={w.setmaxnreg_dec}" if w.setmaxnreg_dec
                         else "") + (f", setmaxnreg_inc={w.setmaxnreg_inc}"
                                     if w.setmaxnreg_inc else "")
                ws.append(f'CudaWarpConfig("{w.name}", {w.nwarps}{extra})')
            args.append(f"warp_config=[{', '.join(ws)}]")
        return ", ".join(args)

    def _memory(self, m: A.MemExpr) -> str:
        if m.name == "Sm90_SmemSwizzled" and m.args == (0,):
            return "CudaSmemLinear"  # no swizzle; Exo's Sm90_SmemSwizzled refuses 0
        if m.name in SAME_MEMORIES or m.name.startswith(("Sm80_Rmem", "Sm90_Rmem",
                                                         "Sm90_SmemSwizzled")):
            return print_mem(m)
        raise Unexpressible(f"memory {m.name}", m.span, self.dialect)

    def _barrier_alloc(self, s: A.BarrierAlloc) -> str:
        m = s.mem.name
        if m == "CudaCommitGroup":
            mem = commit_group_memory(self.dialect, self.cg_tl.get(s.name, ""))
        elif m == "CudaMbarrier" and self.dialect == "endgame":
            # endgame: an mbarrier is a managed ring buffer; one slot per element,
            # re-armed by each Arrive (errata/docs: "endgame mbarrier dialect").
            shape = [print_cexpr(c) for c in s.shape] or ["1"]
            shape[-1] += " @ ring_buffer_by(1)"
            return f"{s.name}: barrier[{', '.join(shape)}] @ CudaMbarrier"
        else:
            mem = self._memory(s.mem)
        return f"{s.name}: barrier{_shape(s.shape)} @ {mem}"

    def _zread(self, z: A.ZRead) -> str:
        if self.dialect == "endgame" and z.name in self.mbarriers and not z.coords:
            return f"{z.name}[0]"
        return print_zread(z)

    def _await_count(self, z: A.ZRead, n: int, span: Span) -> str:
        if z.name not in self.mbarriers:
            return str(n)
        if self.dialect == "endgame":
            if n != -1:
                raise Unexpressible(f"Await(.., {n}) on an mbarrier (endgame has "
                                    "one-shot ring-buffer slots: only ~0)", span,
                                    self.dialect)
            return "0"
        return f"~{-n - 1}" if n < 0 else str(n)

    def _tl(self, name: str, span: Span) -> str:
        got = SYNC_TLS[self.dialect].get(name)
        if got is None:
            raise Unexpressible(f"sync timeline {name}", span, self.dialect)
        return got

    def _instr(self, s: A.InstrCall, d: int) -> None:
        sp = s.span
        if s.instr in TMA_INSTRS:
            self._tma_call(s, d)
            return
        if s.instr in WGMMA_INSTRS:
            self._wgmma_call(s, d)
            return
        if s.instr not in INSTR_TO_EXO:
            raise Unexpressible(f"instruction {s.instr}{_WHY.get(s.instr[:12], '')}",
                                sp, self.dialect)
        exo = INSTR_TO_EXO[s.instr]
        if s.instr in HOST_COPIES:  # Exo's name and argument order: sizes, dst, src
            self.line(f"{exo}({', '.join(print_arg(a) for a in s.args)})", sp, d)
            return
        if exo is None:  # cuda_copy_f32: a loop of assignments does the same
            dst, src = s.args
            assert isinstance(dst, A.DRead) and isinstance(src, A.DRead)
            self._copy_loop(dst, src, d, sp)
            return
        dst, src = s.args
        assert isinstance(dst, A.DRead) and isinstance(src, A.DRead)
        n = _extent(dst)
        if n is None:
            raise Unexpressible("a cp.async window of non-constant extent", sp,
                                self.dialect)
        text = f"{exo}({print_dexpr(dst)}, {print_dexpr(src)}, size={n})"
        if s.barrier is not None:
            text += f" >> {self._zread(s.barrier)}"
        self.line(text, sp, d)

    def _tma_call(self, s: A.InstrCall, d: int) -> None:
        if self.tma is None:
            raise Unexpressible(f"instruction {s.instr} (endgame's Sm90_tma_* "
                                "instructions are not mapped)", s.span, self.dialect)
        if id(s) in self.tma.errors:
            raise Unexpressible(self.tma.errors[id(s)], s.span, self.dialect)
        if not self.tma_warp:
            raise Unexpressible("a TMA call outside a one-thread loop at CTA level "
                                "(Exo's TMA is issued by a warp)", s.span, self.dialect)
        text = self.tma.calls[id(s)]
        if s.barrier is not None:
            text += f" >> {self._zread(s.barrier)}"
        self.line(text, s.span, d)

    def _wgmma_call(self, s: A.InstrCall, d: int) -> None:
        if self.dialect != "pldi26":
            raise Unexpressible(f"instruction {s.instr} (endgame's MMAs are "
                                "ThunderKittens tiles: not mapped)", s.span,
                                self.dialect)
        try:
            self.line(wgmma_text(s, self.allocs, self.params), s.span, d)
        except WgmmaRefused as e:
            raise Unexpressible(str(e), s.span, self.dialect) from None

    def _copy_loop(self, dst: A.DRead, src: A.DRead, d: int, sp: Span) -> None:
        n = _extent(dst)
        if n is None:
            raise Unexpressible("a copy window of non-constant extent", sp,
                                self.dialect)
        self.line(f"for i_copy in seq(0, {n}):", sp, d)
        self.line(f"{_at(dst, 'i_copy')} = {_at(src, 'i_copy')}", sp, d + 1)


# Why the atomics of GPU IR have no Exo counterpart (issue 26): Exo-GPU's library has
# no atomic instruction of its own operands: its atomics are
# `Sm80_mma_atomic_reduce_d_*` (an mma accumulator tile in `Sm80_RmemMatrixD`
# registers, atomicAdd per element). Declaring an `@instr` of our own in the emitted
# module would test our declaration, not Exo's library. (The TMA reductions map:
# emit_tma.py.)
_WHY = {"cuda_atomic_": " (Exo-GPU's only atomics are Sm80_mma_atomic_reduce_d_*, "
        "from an mma accumulator tile: no atomic of a plain value)"}


def _memories(proc: A.Proc) -> list[A.MemExpr]:
    out = [p.mem for p in proc.data_params]
    out += [s.mem for s in walk(proc.body) if isinstance(s, A.Alloc | A.BarrierAlloc |
                                                         A.WindowStmt)]
    return out


def _vars(c: A.CExpr) -> set[str]:
    match c:
        case A.CVar(name=n):
            return {n}
        case A.CBin(lhs=l, rhs=r):
            return _vars(l) | _vars(r)
    return set()


def _points(idx: tuple[A.CExpr, ...]) -> str:
    return f"[{', '.join(print_cexpr(c) for c in idx)}]" if idx else ""


def _shape(sh: tuple[A.CExpr, ...]) -> str:
    return f"[{', '.join(print_cexpr(c) for c in sh)}]" if sh else ""


def _dexpr(e: A.DExpr) -> str:
    return print_dexpr(e)


def _extent(w: A.DRead) -> int | None:
    """The length of the one interval coordinate of a 1-D window (None when not a
    constant)."""
    ivs = [c for c in w.coords if isinstance(c, A.WInterval)]
    if len(ivs) != 1 or ivs[0].lo is None or ivs[0].hi is None:
        return None
    a, b = affine(ivs[0].lo), affine(ivs[0].hi)
    if a is None or b is None or a.coeffs != b.coeffs:
        return None
    return b.const - a.const


def _at(w: A.DRead, it: str) -> str:
    """`w` with its interval coordinate replaced by the point `lo + it`."""
    cs = []
    for c in w.coords:
        if isinstance(c, A.WInterval):
            lo = "0" if c.lo is None else print_cexpr(c.lo)
            cs.append(f"{lo} + {it}")
        else:
            cs.append(print_cexpr(c.index))
    return f"{w.name}[{', '.join(cs)}]"
