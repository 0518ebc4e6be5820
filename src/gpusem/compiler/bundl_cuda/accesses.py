"""Which memories a KIR statement reads and writes: the read/write classification of
Prism's data-control-flow graph (Section 5), used by `place_sync`.

Memories are identified by their *root*: the global parameter or shared allocation a
pointer was derived from (partition / claim / lower views and pointer offsets alias
their source). Thread-private arrays (`KLocalArray`) are left out: no other thread can
observe them. A statement whose accesses cannot be known (a call, a primitive, a nested
barrier, a pointer of unknown origin) is `unknown` and conflicts with everything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.traverse import bodies, exprs_of, map_expr

UNKNOWN = "?"


@dataclass
class Accesses:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    unknown: bool = False

    def __or__(self, other: Accesses) -> Accesses:
        return Accesses(self.reads | other.reads, self.writes | other.writes,
                        self.unknown or other.unknown)

    def conflicts(self, later: Accesses) -> bool:
        """Must a barrier after `self` stay before `later`? (RAW, WAR, WAW)"""
        if self.unknown or later.unknown:
            return True
        touched = self.reads | self.writes
        return bool(later.writes & touched) or bool(later.reads & self.writes)

    @property
    def empty(self) -> bool:
        return not (self.reads or self.writes or self.unknown)


class Roots:
    """Pointer variable -> the memory it views (None: thread-private)."""

    def __init__(self, private: frozenset[str] = frozenset()) -> None:
        self.of: dict[str, str | None] = {name: None for name in private}

    def learn(self, s: K.KStmt) -> None:
        match s:
            case K.KLocalArray(name):
                self.of[name] = None
            case K.KSharedAlloc(name):
                self.of[name] = name
            case K.KDecl(name, ctype, init) if ctype.endswith("*") and init is not None:
                self.of[name] = self.root(init)

    def root(self, pointer: K.KExpr) -> str | None:
        match pointer:
            case K.KVar(name):
                return self.of.get(name, name)
            case K.KPtrAdd(inner, _):
                return self.root(inner)
        return UNKNOWN


def accesses(s: K.KStmt, roots: Roots) -> Accesses:
    """Everything `s` (and the statements inside it) may read or write."""
    acc = Accesses()
    _collect(s, roots, acc)
    return acc


def _collect(s: K.KStmt, roots: Roots, acc: Accesses) -> None:
    roots.learn(s)
    match s:
        case K.KCall() | K.KPrim() | K.KBarrier():
            acc.unknown = True
        case K.KStore(pointer):
            _add(acc.writes, roots.root(pointer), acc)
        case K.KCopy(dst, src):
            _add(acc.writes, roots.root(dst), acc)
            _add(acc.reads, roots.root(src), acc)
    for e in exprs_of(s):
        if isinstance(e, K.KLoad):
            _add(acc.reads, roots.root(e.pointer), acc)
    for body in bodies(s):
        for inner in body:
            _collect(inner, roots, acc)


def _add(into: set[str], root: str | None, acc: Accesses) -> None:
    if root == UNKNOWN:
        acc.unknown = True
    elif root is not None:
        into.add(root)


__all__ = ["Accesses", "Roots", "accesses", "map_expr"]
