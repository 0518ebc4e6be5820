"""The dataflow graph of a control region (seed 002, Sec 8.3 and 8.5): the kernel
invocations `let (r1, ..) = run K(v1, ..)` of a region, with the relations def, use,
into and indep of 8.5, and the SOAC compatibility the text gives in words (l.1296):

  "Horizontal fusion may occur between all pairs of identical SOACs, and vertical
  fusion may occur between MAP flowing into any SOAC but ONCE, between FILTERs,
  between REDUCE and subsequent ONCE, and between FILTER or PERMUTE flowing into
  REDUCE."

A control region here is a maximal chain of lets whose right-hand sides are `run`s
(Note: the paper's regions also hold scalar CPU code, moved into ONCE kernels by 9.1;
any other let ends our region, which only misses fusions, never makes a wrong one).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from gpusem.calculus.lambdacu import ast


@dataclass(frozen=True)
class Invocation:
    """I = <K, u, d> (8.5), with its position in the region."""

    index: int
    kernel: ast.Kernel
    args: tuple[ast.Atom, ...]
    defs: tuple[str, ...]

    @property
    def uses(self) -> frozenset[str]:
        return frozenset(a.name for a in self.args if isinstance(a, ast.Var))

    @property
    def soac(self) -> str | None:
        """K's one SOAC (8.5: "prior to fusion, all kernel declarations contain only
        a single SOAC application"); None for a kernel of several."""
        body = self.kernel.body
        if isinstance(body, ast.KLet) and isinstance(body.body, ast.KRet):
            return body.app.soac
        return None


@dataclass(frozen=True)
class Region:
    invocations: tuple[Invocation, ...]

    @cached_property
    def into(self) -> frozenset[tuple[int, int]]:
        """I1 into_v I2: I1 def v and I2 use v."""
        return frozenset((a.index, b.index) for a in self.invocations
                         for b in self.invocations
                         if a.index < b.index and set(a.defs) & b.uses)

    @cached_property
    def reaches(self) -> frozenset[tuple[int, int]]:
        """The transitive closure of into."""
        pairs = set(self.into)
        changed = True
        while changed:
            new = {(a, d) for a, b in pairs for c, d in pairs if b == c} - pairs
            pairs |= new
            changed = bool(new)
        return frozenset(pairs)

    def indep(self, i: int, j: int) -> bool:
        """No dataflow, even indirect, in either direction."""
        return (i, j) not in self.reaches and (j, i) not in self.reaches

    def siblings(self, i: int, j: int) -> bool:
        """I1 ‖ I2 (HFUSE-SIBS): independent and sharing an input."""
        a, b = self.invocations[i], self.invocations[j]
        return self.indep(i, j) and bool(a.uses & b.uses)

    def preds(self, i: int) -> list[int]:
        return sorted(a for a, b in self.into if b == i)


def compatible_v(producer: str | None, consumer: str | None) -> bool:
    """¬incompat_v: which SOAC may flow into which in one fused kernel."""
    return ((producer == "MAP" and consumer not in (None, "ONCE"))
            or (producer == consumer == "FILTER")
            or (producer == "REDUCE" and consumer == "ONCE")
            or (producer in ("FILTER", "PERMUTE") and consumer == "REDUCE"))


def compatible_h(a: str | None, b: str | None) -> bool:
    """¬incompat_h: identical SOACs."""
    return a is not None and a == b


def shared_reads(r: Region, i: int, j: int) -> int:
    """sr(i, j) of 8.4: the arrays both read, and one for a producer-consumer edge."""
    a, b = r.invocations[i], r.invocations[j]
    return len(a.uses & b.uses) + int((i, j) in r.into or (j, i) in r.into)
