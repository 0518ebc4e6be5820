"""Signatures that keep distinct Bundl compiler bugs apart (issue 18).

A finding's signature decides which findings are "the same bug": one bundle each,
later ones counted. `compile:disagree:disagree` alone put every wrong-code bug in one
class; the signature now also says

- the first differing array (`out`, `x0`, ...);
- the kind of divergence of that cell: `poison` (the backend's uninitialised shared
  memory, byte 0xA5, reached global memory: a read before a write or a missing
  barrier), `stale` (the cell still holds its initial value where the interpreter
  wrote another: a lost or late write), `value` (anything else: an arithmetic, offset
  or ordering bug). (A `misplaced` class, the value of another cell of the array, was
  tried and dropped: with the small values generated programs hold it is a coincidence
  more often than an offset bug, and shrinking could not keep it: a floor-division
  finding classed so shrank from 24 statements to 23 instead of 1);
- the element type of that array (`int`, `float`, `bool`): integer and floating-point
  arithmetic bugs (C division, FMA contraction) stay apart;
- for a crash of the compiler, the pass that raised (the compiler module: `lower_data`,
  `sync`, ...).

The construct nearest the divergence (the innermost partition, claim, lower, split,
group, destruct, while, if or async around the statement that wrote the cell, that
statement's kind: store, memcpy, async-memcpy, and whether it divides or fuses a
multiply-add) is computed too and written to the bundle's trace and the reports, but it
is not part of the signature. A signature is fixed when a finding is first seen and
every shrinking step must keep it, and the shape around the write is mostly the
generator's choice, not the bug's: with the construct in the signature, a campaign with
two seeded faults (floor-division, split-offset-off-by-one; 400 programs, seed 11)
wrote 6 bundles for 2 bugs; with the writing statement's operator class (div / arith),
a floor division computed in a `let` and stored by an addition could not be inlined
by shrinking (28 statements left instead of 1; scripts/measure_double_work.py).
The old signature is a prefix of the new one: bundles written before replay as before
(`fuzz.targets.same_finding`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.walk import child_exprs, child_stmts

POISON_BYTE = 0xA5
CONSTRUCTS = {B.Partition: "partition", B.Claim: "claim", B.Lower: "lower",
              B.Split: "split", B.Group: "group", B.Destruct: "destruct",
              B.While: "while", B.If: "if", B.AsyncPartition: "async"}
OPS = (("fma", "fma"), ("/", "div"), ("%", "div"))


def divergence(prog: B.Program, difference: tuple, expected: dict,
               initial: dict) -> tuple[str, str, int]:
    """For a disagreement: the signature's tail (`ARRAY:TYPE:KIND`), the construct
    nearest the divergence (`partition>store[div]`; reported, not part of the
    signature: see above) and the line of the statement it names."""
    name, i, want, got = difference
    kind = _kind(name, i, want, got, expected, initial)
    elem = next((g.elem.name.lower() for g in prog.globals if g.name == name), "?")
    tail = f"{name}:{elem}:{kind}"
    writer = _last_writer(prog, name, i)
    if writer is None:
        return tail, "none", 0
    stmt, around = writer
    what = {B.ArrAssign: "store", B.Memcpy: "memcpy",
            B.AsyncMemcpy: "async-memcpy"}.get(type(stmt), "write")
    construct = f"{around}>{what}" if around else what
    if isinstance(stmt, B.ArrAssign):
        construct += f"[{_op_class(stmt)}]"
    return tail, construct, stmt.span.line


def compile_pass(err: BaseException) -> str:
    """The compiler module (pass) whose code raised `err`, or `?`."""
    tb = err.__traceback__
    found = "?"
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module.startswith("gpusem.compiler."):
            found = module.rsplit(".", 1)[-1]
        tb = tb.tb_next
    return found


def _kind(name: str, i: int, want: object, got: object, expected: dict,
          initial: dict) -> str:
    if _is_poison(got):
        return "poison"
    start = initial.get(f"g_{name}")
    if start is not None and i < len(start) and _same(start[i].item(), got) \
            and not _same(start[i].item(), want):
        return "stale"
    return "value"


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return struct.pack("<f", float(a)) == struct.pack("<f", float(b))  # type: ignore[arg-type]
    return a == b


def _is_poison(v: object) -> bool:
    pattern = bytes([POISON_BYTE]) * 4
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return struct.pack("<i", v) == pattern if -2**31 <= v < 2**31 else False
    if isinstance(v, float):
        return struct.pack("<f", v) == pattern
    return False


def _last_writer(prog: B.Program, array: str, cell: int) -> tuple[B.Stmt, str] | None:
    """The last statement of `main` (program order) that writes global `array`
    through a name bound to it (lower/partition/claim targets), with its innermost
    enclosing construct. (Writes through a function's array parameter are not
    followed: the call is the construct then, one level up.) A store whose index is
    the literal `cell` of the global itself is preferred: it wrote that cell."""
    last = exact = None
    for stmt, around, aliases in _walk(prog.main, "", {array}):
        if _writes(stmt, aliases):
            last = (stmt, around)
            if isinstance(stmt, B.ArrAssign) and isinstance(stmt.array, B.Var) \
                    and stmt.array.name == array and isinstance(stmt.index, B.IntLit) \
                    and stmt.index.value == cell:
                exact = (stmt, around)
    return exact or last


def _walk(s: B.Stmt, around: str,
          aliases: set[str]) -> Iterator[tuple[B.Stmt, str, set[str]]]:
    yield s, around, aliases
    here = CONSTRUCTS.get(type(s), around)
    inner = aliases
    if isinstance(s, B.Partition | B.Claim | B.Lower | B.AsyncPartition) \
            and s.source in aliases:
        inner = aliases | {s.target}
    for child in child_stmts(s):
        yield from _walk(child, here, inner)


def _writes(s: B.Stmt, aliases: set[str]) -> bool:
    match s:
        case B.ArrAssign(array=a):
            return _base(a) in aliases
        case B.Memcpy(dst=d) | B.AsyncMemcpy(dst=d):
            return d in aliases
    return False


def _base(e: B.Expr) -> str:
    while isinstance(e, B.Index):
        e = e.array
    return e.name if isinstance(e, B.Var) else ""


def _op_class(s: B.ArrAssign) -> str:
    """`fma` or `div` when the writing statement (index or value) has one (the
    operations whose C/CUDA semantics compilers get wrong: rounding, truncation),
    else `arith`: finer classes split one bug over the expressions a generator
    happens to draw."""
    ops = set(_ops(s.index)) | set(_ops(s.value))
    for op, cls in OPS:
        if op in ops:
            return cls
    return "arith"


def _ops(e: B.Expr) -> Iterator[str]:
    if isinstance(e, B.Fma):
        yield "fma"
    if isinstance(e, B.BinOp | B.UnOp):
        yield e.op
    for c in child_exprs(e):
        yield from _ops(c)
