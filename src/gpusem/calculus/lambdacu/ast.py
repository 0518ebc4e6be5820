"""lambda-cu abstract syntax (seed 002, Section 5, l.430-566): one frozen, slotted
dataclass per production, each with its source span (not compared: two programs that
differ only in layout are equal).

    prog ::= kern1 .. kernn func1 .. funcm                          `Program`
    kern ::= kernel k(x1, .., xn) {kexp}                            `Kernel`
    kexp ::= let x1, .., xn = soac arg1 .. argk [s]  kexp           `KLet`
           | ret x1 .. xn                                           `KRet`
    arg  ::= Λ | (rop1, .., ropn)                                   `Thunk`, `Rops`
    Λ    ::= {x1, .., xn => gexp using xs1, .., xsm}                `Thunk`
    gexp ::= let x1, .., xn = gexp1 in gexp2                        `GLet`
           | prim x1 .. xn | if x then gexp1 else gexp2             `GPrim`, `GIf`
           | ret x1 .. xn | xs[x] | gatm                     `GRet`, `GSub`, `GAtom`
    func ::= function f(x1, .., xn) {cexp}                          `Function`
    cexp ::= let (x1, .., xn) = cexp1 in cexp2                      `CLet`
           | if catm then cexp1 else cexp2 | f(catm1, .., catmn)    `CIf`, `CCall`
           | prim catm1 .. catmn | (catm1, .., catmn)               `CPrim`, `CTuple`
           | run k(catm1, .., catmn) | cmd(catm1, .., catmn)        `CRun`, `CCmd`
    gatm ::= x | b            catm ::= x | b | bs                  `Var`, `Lit`

Note (extensions and readings, each in proofs_notes/errata.md, "lambda-cu"):
  - the SOAC application carries its size `s` (the rules of 6.2 and every kernel of
    Sec 7 have it; the grammar of 5.2 omits it): an int literal, an int variable or
    `#xs`, the length of an array (`Size`); ONCE takes none (SOAC-ONCE);
  - parameters and results carry types, as the kernels of Sec 7 write them
    (`xs : [X]`, `-> [Z]`), so that the checker can decide well-formedness;
  - primitive arguments, subscripts and `ret` take atoms (a literal or a variable),
    not only variables: the CPU rules read atoms through -->a, and a thunk that must
    bind every constant with `let` first says the same thing at greater length;
  - `if` in a thunk is written `if x then g1 else g2`, as the rules GPU-IF-* print it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from gpusem.calculus.lambdacu.values import Arr, Scalar, Type
from gpusem.calculus.span import NO_SPAN, Span

_SPAN = field(default=NO_SPAN, compare=False, repr=False)

SOACS = ("ONCE", "MAP", "PERMUTE", "REDUCE", "SCAN", "FILTER", "PARTITION")
ROPS = ("iadd", "imul", "imax", "imin", "iand", "ior", "ixor", "fadd", "fmul",
        "fmax", "fmin", "band", "bor", "bxor", "id")
COMMANDS = ("print",)


# -------------------------------------------------------------------------- atoms


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal b or bs; also the values the CPU rules substitute (CPU-FUNC-APP)."""

    value: Scalar | Arr
    span: Span = _SPAN


Atom = Union[Var, Lit]


@dataclass(frozen=True, slots=True)
class Len:
    """`#xs`: the length of an array, as a SOAC size (Sec 7)."""

    name: str
    span: Span = _SPAN


Size = Union[Var, Lit, Len]

# ----------------------------------------------------------------- thread code: gexp


@dataclass(frozen=True, slots=True)
class GLet:
    names: tuple[str, ...]
    rhs: GExp
    body: GExp
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GPrim:
    op: str
    args: tuple[Atom, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GIf:
    cond: Atom
    then: GExp
    else_: GExp
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GRet:
    atoms: tuple[Atom, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GSub:
    array: str
    index: Atom
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GAtom:
    atom: Atom
    span: Span = _SPAN


GExp = Union[GLet, GPrim, GIf, GRet, GSub, GAtom]

# ------------------------------------------------------------------ kernels: kexp


@dataclass(frozen=True, slots=True)
class Thunk:
    """Λ = {x1, .., xn => gexp using xs1, .., xsm}."""

    params: tuple[str, ...]
    body: GExp
    using: tuple[str, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Rops:
    """A tuple of reduction operators (rop1, .., ropn)."""

    ops: tuple[str, ...]
    span: Span = _SPAN


Arg = Union[Thunk, Rops]


@dataclass(frozen=True, slots=True)
class SoacApp:
    soac: str  # one of SOACS
    args: tuple[Arg, ...]
    size: Size | None  # ONCE has none (SOAC-ONCE)
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KLet:
    names: tuple[str, ...]
    app: SoacApp
    body: KExp
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KRet:
    names: tuple[str, ...]
    span: Span = _SPAN


KExp = Union[KLet, KRet]


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    type: Type
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Kernel:
    name: str
    params: tuple[Param, ...]
    ret: Type
    body: KExp
    span: Span = _SPAN


# ---------------------------------------------------------------- CPU code: cexp


@dataclass(frozen=True, slots=True)
class CLet:
    names: tuple[str, ...]
    rhs: CExp
    body: CExp
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CIf:
    cond: Atom
    then: CExp
    else_: CExp
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CCall:
    fn: str
    args: tuple[Atom, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CPrim:
    op: str
    args: tuple[Atom, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CTuple:
    """(catm1, .., catmn); with literal atoms only, a CPU value (the rules' v)."""

    atoms: tuple[Atom, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CRun:
    kernel: str
    args: tuple[Atom, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CCmd:
    cmd: str  # one of COMMANDS
    args: tuple[Atom, ...]
    span: Span = _SPAN


CExp = Union[CLet, CIf, CCall, CPrim, CTuple, CRun, CCmd]


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    params: tuple[Param, ...]
    ret: Type
    body: CExp
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Program:
    kernels: tuple[Kernel, ...]
    functions: tuple[Function, ...]
    span: Span = _SPAN

    def kernel(self, name: str) -> Kernel | None:
        return next((k for k in self.kernels if k.name == name), None)

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.name == name), None)


def is_value(e: CExp) -> bool:
    """A CPU expression that is a value: a tuple of literals."""
    return isinstance(e, CTuple) and all(isinstance(a, Lit) for a in e.atoms)
