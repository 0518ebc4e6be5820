"""Typing contexts Γ and rule sets for the Bundl type system (Prism, seed 004, A.1-A.2).

Conventions (paper -> Python):
  Γ ::= · | Γ, x :^π τ          -> `Context` (persistent; `extend` returns a new one)
  x :^π τ                       -> `Binding(persp, type)`
  "x cannot be used" inside     -> `Binding.hidden_by` (the rule that hid it: partition,
  partition/claim/lower/async     claim, lower and async_partition replace x by y in
                                  their premise context, Sec 3.4.2)
  π1 ≤ π2                       -> `RuleSet.leq(π1, π2, shape)`
  size(τ) (T-Alloc)             -> `type_size(b)`, in bytes

`RuleSet` holds the differences between the rules as printed (`PAPER`) and the
corrected rules (`FIXED`). Every flag is one entry of proofs_notes/errata.md (section
"typing rules"); keep the two sets differing only through these flags.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Union

from gpusem.calculus.bundl.ast import (
    ArrayType,
    BaseType,
    FunType,
    Machine,
    MemKind,
    Program,
    Type,
)
from gpusem.calculus.bundl.perspective import (
    GRID1,
    Level,
    MachineShape,
    Perspective,
)
from gpusem.calculus.bundl.perspective import (
    leq as persp_leq,
)
from gpusem.calculus.errors import BadInput


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rule variants; each flag is True in FIXED and False in PAPER.

    lexicographic_order  π1 ≤ π2 iff h1 < h2, or h1 = h2 and n1 | n2 (Sec 3.2)
                      instead of A.1's printed "n1 | n2 and h1 ≤ h2".
    var_read_up       T-Var reads any x :^π' with π ≤ π' (Sec 3.4.1 "read up") instead
                      of requiring π' = π exactly (A.2 as printed).
    alloc_shared_block  T-Alloc-Shared requires π = (Block, 1), like S-Alloc-Shared.
    claim_divides     T-Claim requires n' | n (aligned, like T-Split) not n' ≤ n.
    assign_base_only  T-Assn only assigns base types (as T-Decl); no pointer rebinding.
    no_rebinding      a binder may not rebind a name in scope at another type or
                      perspective (η is one flat map that is never popped).
    memcpy_async_dst  T-Memcpy accepts an `async τ[]` destination: the deferred
                      memcpy(x, y) that S-Async-Memcpy stores in Φ must type-check.
    source_runtime_forms  in a source program (not in a runtime state) `free n` needs
                      n = 0 and init/dec/wait appear only as the barrier
                      `init ψ; dec ψ; wait ψ`: alone they underflow Ψ or free twice.
    param_persp       call arguments are checked against each parameter's perspective
                      (write down for primitives, exact for pointers, Sec 3.6).
    """

    name: str
    lexicographic_order: bool
    var_read_up: bool
    alloc_shared_block: bool
    claim_divides: bool
    assign_base_only: bool
    no_rebinding: bool
    memcpy_async_dst: bool
    param_persp: bool
    source_runtime_forms: bool

    def leq(self, a: Perspective, b: Perspective, shape: MachineShape) -> bool:
        """π1 ≤ π2: code or data at `a` is at most as broad as `b`.

        Note: the order itself is `perspective.leq` (its owner's reading, errata
        "order on perspectives"): fixed = Sec 3.2's level-first order, paper = A.1's
        formula. `shape` is unused by both; an alignment-aware order (sizes dividing)
        coincides with the level-first one on every code perspective reachable from
        grid[1] (all are grid[1], block[n | B] or thread[n | T]), see errata
        ("order on perspectives: typing view").
        """
        if a.n <= 0 or b.n <= 0:  # only ASTs built by code can hold these
            return False
        return persp_leq(a, b, "fixed" if self.lexicographic_order else "paper")

    def lt(self, a: Perspective, b: Perspective, shape: MachineShape) -> bool:
        return a != b and self.leq(a, b, shape)


FIXED = RuleSet("fixed", *([True] * 9))
PAPER = RuleSet("paper", *([False] * 9))
RULE_SETS: Mapping[str, RuleSet] = MappingProxyType({"fixed": FIXED, "paper": PAPER})


def rule_set(rules: str | RuleSet) -> RuleSet:
    """`"fixed"` / `"paper"` (or a RuleSet, e.g. FIXED with one flag flipped)."""
    if isinstance(rules, RuleSet):
        return rules
    if rules not in RULE_SETS:
        raise BadInput(f"unknown rule set: {rules} (expected fixed or paper)")
    return RULE_SETS[rules]


def with_flag(rules: RuleSet, **flags: bool) -> RuleSet:
    """A variant of `rules` (tests flip one flag to show what it changes)."""
    return replace(rules, name=f"{rules.name}+" + ",".join(flags), **flags)


def type_size(elem: BaseType) -> int:
    """size(τ) of T-Alloc, in bytes (int and float are 32-bit, bool one byte).

    Note: the paper leaves size(τ) undefined; bytes match CUDA's shared-memory budget
    that `@requires` / `uses m` declares (Sec 3.4.2).
    """
    return 1 if elem is BaseType.BOOL else 4


def show_type(ty: Type) -> str:
    """A type as the concrete syntax writes it (`Shared float[]`, `int`)."""
    match ty:
        case BaseType():
            return ty.value
        case ArrayType(elem, mem):
            return f"{mem.value} {elem.value}[]"
        case FunType(params, persp, uses):
            ps = ", ".join(f"{show_type(p.type)} @ {p.persp}" for p in params)
            return f"fn({ps}) at {persp} uses {uses}"
        case _:
            return f"async {show_type(ty.inner)}"


@dataclass(frozen=True, slots=True)
class Binding:
    """x :^π τ; `hidden_by` names the rule that hides x in the current scope."""

    persp: Perspective
    type: Type
    hidden_by: str | None = None
    renamed_to: str | None = None


class Context:
    """Γ: an immutable map from names to bindings (a later binding shadows).

    `extend` and `hide` return new contexts, so a rule's premise context never leaks
    into its siblings. Contexts are small (a kernel's live names), so copying is cheap.
    """

    __slots__ = ("_env",)

    def __init__(self, env: Mapping[str, Binding] | None = None):
        self._env: dict[str, Binding] = dict(env or {})

    def extend(self, name: str, persp: Perspective, type: Type) -> Context:
        """Γ, x :^π τ."""
        ctx = Context.__new__(Context)
        ctx._env = {**self._env, name: Binding(persp, type)}
        return ctx

    def hide(self, name: str, rule: str, renamed_to: str | None = None) -> Context:
        """Γ with x kept (for its type) but unusable: the premise of `rule` drops x
        (and binds `renamed_to` in its place)."""
        env = dict(self._env)
        old = env[name]
        env[name] = Binding(old.persp, old.type, rule, renamed_to)
        return Context(env)

    def lookup(self, name: str) -> Binding | None:
        return self._env.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._env

    def __iter__(self) -> Iterator[tuple[str, Binding]]:
        return iter(self._env.items())

    def __len__(self) -> int:
        return len(self._env)

    def __repr__(self) -> str:
        body = ", ".join(f"{x} :^{b.persp} {show_type(b.type)}" for x, b in self)
        return f"Context({body})"


def program_context(prog: Program) -> Context:
    """The Γ every body starts from: global arrays at (Grid, 1) as `τ[]^Global`, and
    every function f :^π Fun(params, π, m) at its declared perspective π.

    Raises BadInput for two globals or two functions of one name.
    """
    env: dict[str, Binding] = {}
    for g in prog.globals:
        if g.name in env:
            raise BadInput(f"{g.span}: duplicate global: {g.name}")
        env[g.name] = Binding(GRID1, ArrayType(g.elem, MemKind.GLOBAL))
    for f in prog.fns:
        if f.name in env:
            raise BadInput(f"{f.span}: duplicate name: {f.name} (function)")
        env[f.name] = Binding(f.persp, f.type)
    return Context(env)


# What names a machine: an ast.Machine, a MachineShape, or a (B, T) pair.
MachineLike = Union[Machine, MachineShape, tuple[int, int]]


def machine_shape(machine: MachineLike) -> MachineShape:
    """A MachineShape from an ast.Machine, a MachineShape, or a (B, T) pair."""
    match machine:
        case MachineShape():
            return machine
        case (blocks, threads):
            return MachineShape(blocks, threads)
        case _:
            return MachineShape(machine.blocks, machine.threads)


__all__ = [
    "Binding", "Context", "FIXED", "PAPER", "RuleSet", "GRID1", "Level",
    "machine_shape", "program_context", "rule_set", "show_type", "type_size",
    "with_flag",
]
