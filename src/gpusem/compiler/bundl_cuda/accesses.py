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


def accesses(s: K.KStmt, roots: Roots, memo: Scripts | None = None) -> Accesses:
    """Everything `s` (and the statements inside it) may read or write.

    With `memo` (one per pass over a program), `s`'s walk is recorded once as a
    script and replayed: `place_sync` asks again for every enclosing statement, so
    unrecorded a statement nested d deep is walked d + 1 times (issue 31.3: half the
    compile time). The replay meets the same statements, pointers and `learn`s in the
    same order, so `roots` and the answer are what the walk gives."""
    acc = Accesses()
    if memo is None:
        _collect(s, roots, acc)
    else:
        _replay(memo.script(s), roots, acc)
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


# A script: `_collect`'s steps as (op, argument) pairs, in its order.
_LEARN, _UNKNOWN, _WRITE, _READ = range(4)
Script = list[tuple[int, object]]


class Scripts:
    """`_collect`'s walk of each statement, recorded once (keyed by identity; the
    statement is kept so that its id is not reused while the memo lives)."""

    def __init__(self) -> None:
        self.of: dict[int, tuple[K.KStmt, Script]] = {}

    def script(self, s: K.KStmt) -> Script:
        hit = self.of.get(id(s))
        if hit is None:
            hit = self.of[id(s)] = (s, self._record(s))
        return hit[1]

    def _record(self, s: K.KStmt) -> Script:
        learns = isinstance(s, (K.KLocalArray, K.KSharedAlloc, K.KDecl))
        out: Script = [(_LEARN, s)] if learns else []  # `learn` ignores the rest
        match s:
            case K.KCall() | K.KPrim() | K.KBarrier():
                out.append((_UNKNOWN, None))
            case K.KStore(pointer):
                out.append((_WRITE, pointer))
            case K.KCopy(dst, src):
                out += [(_WRITE, dst), (_READ, src)]
        out += [(_READ, e.pointer) for e in exprs_of(s) if isinstance(e, K.KLoad)]
        for body in bodies(s):
            for inner in body:
                out += self.script(inner)
        return out


def _replay(script: Script, roots: Roots, acc: Accesses) -> None:
    for op, arg in script:
        if op == _LEARN:
            roots.learn(arg)  # type: ignore[arg-type]
        elif op == _UNKNOWN:
            acc.unknown = True
        else:
            into = acc.writes if op == _WRITE else acc.reads
            _add(into, roots.root(arg), acc)  # type: ignore[arg-type]


def _add(into: set[str], root: str | None, acc: Accesses) -> None:
    if root == UNKNOWN:
        acc.unknown = True
    elif root is not None:
        into.add(root)


__all__ = ["Accesses", "Roots", "Scripts", "accesses", "map_expr"]
