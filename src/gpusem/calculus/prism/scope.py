"""What a surface name means during elaboration (`elaborate.py`): its Bundl name, type
and perspective; the pending partitions and claims that wait for the code perspective
to reach theirs; the declarations deferred past a `destruct` (Sec 3.3-3.5)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpusem.calculus.bundl.ast import BaseType, MemKind
from gpusem.calculus.bundl.perspective import Level, MachineShape, Perspective
from gpusem.calculus.errors import BadInput
from gpusem.calculus.prism import ast as S
from gpusem.calculus.span import Span

_BASES = {"int": BaseType.INT, "uint32_t": BaseType.INT, "uint": BaseType.INT,
          "c_int": BaseType.INT, "float": BaseType.FLOAT, "c_float": BaseType.FLOAT,
          "bool": BaseType.BOOL}


def base_type(t: S.SType) -> BaseType:
    """Prism's scalar types in Bundl: `uint32_t` is Bundl's 32-bit int (values below
    2^31 agree; errata "Prism: unsigned integers")."""
    if t.base not in _BASES:
        raise BadInput(f"unsupported type: {t.base} has no Bundl counterpart",
                       rule="Elab-Type", span=t.span)
    return _BASES[t.base]


def persp_of(p: S.Persp) -> Perspective:
    """level[n] in Bundl: warp[n] = thread[32n], warpgroup[n] = thread[128n] (3.2)."""
    return Perspective(Level[p.base_level.upper()], p.base_n)


@dataclass(frozen=True)
class Sym:
    """A surface name. `kind`: scalar | array | float4 | hidden (a partitioned or
    claimed source, Sec 3.4.2) | deferred (a narrower declaration made at grid code,
    bound after the next destruct)."""

    kind: str
    bname: str
    elem: BaseType
    persp: Perspective
    mem: MemKind | None = None
    dims: tuple[int, ...] = ()
    const: bool = False
    index: S.Lambda | None = None
    fields: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class Pending:
    """A partition or claim whose narrower perspective the code has not reached: it is
    placed (as Bundl's lower / destruct / partition ... at e) where a group or split
    reaches it (elaborate.descend)."""

    kind: str  # partition | claim
    source: str  # Bundl name of the source's view at the current code perspective
    target: str  # surface name
    dim: Perspective
    offset: S.Expr | None
    index: S.Lambda | None
    elem: BaseType
    mem: MemKind
    span: Span


@dataclass(frozen=True)
class Deferred:
    """`x : τ @ π' = e` at grid code with π' narrower than grid: Bundl types
    `partition_id` only below grid[1] (T-Partition-Id), so the declaration is made
    after each destruct of the grid, where its value is the same (errata)."""

    decl: S.Decl


@dataclass
class Names:
    used: set[str] = field(default_factory=set)

    def fresh(self, name: str) -> str:
        base = name.lstrip("_") or "v"
        cand, k = base, 0
        while cand in self.used or cand in _RESERVED:
            k += 1
            cand = f"{base}_{k}"
        self.used.add(cand)
        return cand


_RESERVED = {"machine", "blocks", "threads", "global", "fn", "at", "uses", "main",
             "let", "alloc", "in", "if", "else", "while", "skip", "split", "group",
             "destruct", "partition", "into", "by", "claim", "lower",
             "async_partition", "async_memcpy", "memcpy", "init", "dec", "wait",
             "free", "partition_id", "fma", "true", "false", "int", "float", "bool",
             "iota", "Local", "Shared", "Global", "thread", "block", "grid"}


@dataclass(frozen=True)
class Scope:
    """The elaborator's view at one program point."""

    persp: Perspective
    env: dict[str, Sym]
    shape: MachineShape
    names: Names
    pending: list[Pending] = field(default_factory=list)
    deferred: list[Deferred] = field(default_factory=list)
    brk: str | None = None  # the Bundl flag `break` sets in the innermost loop
    result: str | None = None  # the Bundl variable `return e` assigns (inlining)
    depth: int = 0

    def at(self, persp: Perspective) -> Scope:
        return replace(self, persp=persp, env=dict(self.env),
                       pending=list(self.pending), deferred=list(self.deferred))

    def child(self) -> Scope:
        return self.at(self.persp)

    def lookup(self, name: str, span: Span) -> Sym:
        sym = self.env.get(name)
        if sym is None:
            raise BadInput(f"unknown name: {name}", rule="Elab-Name", span=span)
        if sym.kind == "hidden":
            raise BadInput(f"hidden variable: {name} {sym.why} (Sec 3.4.2: the "
                           "original pointer cannot be used inside)",
                           rule="T-Partition", span=span)
        if sym.kind == "deferred":
            raise BadInput(f"perspective mismatch: {name} lives at {sym.persp}; code "
                           f"at {self.persp} cannot read it (read up, Sec 3.4.1)",
                           rule="T-Var", span=span)
        return sym
