"""A static SASS check for toolchain finding T2's class (issue 23; results/toolchain/
FINDINGS.md, T2), no GPU needed: ptxas for sm_90 folds `min(c - x, y)` (or `max`),
with `c` a constant it derived, into Hopper's add-then-min `VIADDMNMX x, -c, y`, which
computes `min(x - c, y)`: the subtraction's operands swap roles.

    check                        fails when
    viaddmnmx-negated-constant   the kernel's PTX computes d = A - X where A = S + c
                                 (an add of the immediate c) and d feeds a min or a
                                 max; its SASS (nvcc -cubin, ptxas -O3, for sm_90a;
                                 `cuobjdump -sass`) has a VIADDMNMX whose immediate is
                                 -c on a register that is not negated; and nothing in
                                 the PTX adds -c (or subtracts c), which would explain
                                 that immediate.

Why these operand roles contradict the PTX: the PTX subtracts the register X from a
value that holds c plus something (in T2, a shuffle of 0 that ptxas knows is 0), so
a right fold negates X and adds +c; an immediate -c on a positive X is `X - c`. This
is a screen for one class, not a proof: a constant ptxas folds from several adds can
look unexplained (a false alarm, which the toolchain property on a GPU then settles),
and a fold into another instruction is not looked at. Each failure names the PTX
lines and the SASS line: evidence a compiler engineer reads.

One nvcc call and one cuobjdump call check a whole round (the kernels in namespaces,
as the toolchain matrix builds them); where nvcc or cuobjdump is missing the check
says so (`Screen.missing`), never a pass.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gpusem.compiler.backends import toolchain_build as tb

CHECK = "viaddmnmx-negated-constant"
_ADD_IMM = re.compile(r"^\s*add\.[su]32\s+(%r\d+),\s*(%r\d+),\s*(-?\d+);", re.M)
_SUB = re.compile(r"^\s*sub\.[su]32\s+(%r\d+),\s*(%r\d+),\s*(%r\d+|-?\d+);", re.M)
_MINMAX = re.compile(r"^\s*(?:min|max)\.[su]32\s+%r\d+,\s*(%r\d+),\s*(%r\d+|-?\d+);",
                     re.M)
_VIADDMNMX = re.compile(r"VIADDMNMX(?:\.\w+)*\s+R\d+,\s*(-?)R\w+,\s*"
                        r"(0x[0-9a-fA-F]+|-?\d+)\s*,")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)", re.M)
_ENTRY_BODY = re.compile(r"\.entry\s+([\w$]+)\s*\((.*?)\n}\n", re.S)


@dataclass(frozen=True)
class Failure:
    check: str
    constant: int
    ptx: tuple[str, ...]
    sass: str

    def one_line(self) -> str:
        return (f"{self.check}: the PTX computes {self.constant} - x into a min/max "
                f"({' | '.join(p.strip() for p in self.ptx)}); the SASS adds "
                f"{-self.constant}: {self.sass.strip()}")


@dataclass
class Screen:
    """Per kernel, its failures; `missing`: why nothing was checked ("" checked)."""

    failures: list[list[Failure]] = field(default_factory=list)
    missing: str = ""


def signed32(text: str) -> int:
    value = int(text, 16) if text.lower().startswith("0x") else int(text)
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def negated_constants(ptx: str) -> dict[int, tuple[str, ...]]:
    """{c: the PTX lines} for each `d = (S + c) - X` feeding a min/max in one
    kernel's PTX, c not explained by an add of -c or a subtraction of c."""
    adds = {m.group(1): (int(m.group(3)), m.group(0)) for m in _ADD_IMM.finditer(ptx)}
    used = {m.group(1) for m in _MINMAX.finditer(ptx)} | {
        m.group(2) for m in _MINMAX.finditer(ptx)}
    out: dict[int, tuple[str, ...]] = {}
    for m in _SUB.finditer(ptx):
        dest, left = m.group(1), m.group(2)
        if dest in used and left in adds and adds[left][0] != 0:
            c, line = adds[left]
            out.setdefault(c, (line, m.group(0)))
    explained = {c for c, _ in adds.values()} | {
        -int(m.group(3)) for m in _SUB.finditer(ptx) if not m.group(3).startswith("%")}
    return {c: lines for c, lines in out.items() if -c not in explained}


def check_kernel(ptx: str, sass: str) -> list[Failure]:
    """The check on one kernel's PTX (its entry) and SASS (its function)."""
    wanted = negated_constants(ptx)
    out = []
    for line in sass.splitlines():
        m = _VIADDMNMX.search(line)
        if m is None or m.group(1) == "-":
            continue
        c = -signed32(m.group(2))
        if c in wanted:
            out.append(Failure(CHECK, c, wanted[c], line.split(";")[0] + ";"))
    return out


def screen(sources: list[tuple[str, str]]) -> Screen:
    """(kernel name, CUDA source) per kernel -> its failures, one nvcc and one
    cuobjdump call for all."""
    cuobjdump, nvcc = tb.find_tool("cuobjdump"), tb.find_tool("nvcc")
    if cuobjdump is None or nvcc is None:
        return Screen([[] for _ in sources],
                      f"{'cuobjdump' if nvcc else 'nvcc'} not found: no SASS to check")
    items = [(i, name, src) for i, (name, src) in enumerate(sources)]
    errors, cubin, lowered = tb.build("nvcc-O3", items)
    ptx, _ = tb.ptx_of_built(items)
    if cubin is None or ptx is None:
        return Screen([[] for _ in sources], "nvcc built none of the kernels")
    bodies = {m.group(1): m.group(0) for m in _ENTRY_BODY.finditer(ptx)}
    sass = _sass_by_function(cubin, cuobjdump)
    out: list[list[Failure]] = []
    for i, _, _ in items:
        entry = lowered.get(i)
        if i in errors or entry is None:
            out.append([])
            continue
        out.append(check_kernel(bodies.get(entry, ""), sass.get(entry, "")))
    return Screen(out)


def _sass_by_function(cubin: bytes, cuobjdump: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="gpusem-sass-") as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        proc = subprocess.run([cuobjdump, "-sass", str(path)], capture_output=True,
                              text=True, check=False, timeout=tb.BUILD_TIMEOUT_S)
    out: dict[str, str] = {}
    parts = _FUNCTION.split(proc.stdout)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        out[name] = body
    return out
