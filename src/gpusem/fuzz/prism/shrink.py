"""Surface-level reduction of a prism finding, after hypothesis's shrinking.

Hypothesis shrinks the generator's choices, but the exchange of `strategies._exchange`
hangs together: the shared array, its warp piece, the partitions of the sequence and
the loop round them are drawn as one shape, and the output line reads what the
exchange computed, so no smaller choice sequence keeps the barrier decision that a
`prism-drop-rule-*` fault breaks (a finding stayed at 56 lines). This reducer edits the
surface text itself, greedily to a fixpoint under a time cap (delta debugging in the
style of C-Reduce), with passes tried largest edit first:

  1. delete a line with its indented block (a device function with its decorators),
     a kernel argument (its `# arg` line and its parameter), or replace a block's
     only statement by `pass` (which frees what it used);
  2. unwrap a compound line: a loop or `with` by its body, an `if` by either arm, a
     `with partition(x, ...) as y` by its body with y renamed x;
  3. fewer blocks (the output array follows);
  4. replace an assignment's right-hand side by one of its sub-expressions;
  5. shrink an integer literal (0, 1, half).

A candidate is kept iff it is strictly smaller (`size_key`: lines first) and the
target's check gives the SAME signature as the finding; a candidate the front end or
the typing rules reject gets the `rejected` signature, so it is never kept. The text is
only parsed (`ast.parse` of one expression), never executed.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable, Iterator

from gpusem.calculus.errors import GpusemError
from gpusem.fuzz.bundl.shrink import ShrinkStats
from gpusem.fuzz.targets import CheckResult

Check = Callable[[str], CheckResult]

_INT = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
_ASSIGN = re.compile(r"^(\s*[^#=]*?(?:[+\-*]?=|:[^=]*=)\s*)(.+)$")
_PARTITION = re.compile(r"with partition\((\w+),.*\) as (\w+):$")
_LAUNCH = re.compile(r"^# launch: (\w+) blocks=(\d+) threads=(\d+)$", re.MULTILINE)


def size_key(text: str) -> tuple[int, int, int]:
    """Lines first (the target's size), then characters, then the literals' sum: a
    literal shrink that keeps the length still counts as progress."""
    lits = sum(abs(int(m.group())) for m in _INT.finditer(text))
    return (text.count("\n"), len(text), lits)


def shrink(text: str, signature: str, check: Check, budget_s: float = 30.0,
           max_tried: int = 1000) -> tuple[str, CheckResult | None, ShrinkStats]:
    """Greedy reduction of `text` while `check` keeps `signature`, within `budget_s`
    seconds and `max_tried` candidates (a test's cap that load does not move)."""
    t0 = time.monotonic()
    best, best_res = text, None
    seen = {text}
    tried = kept = 0
    capped = False
    progress = True
    while progress:
        progress = False
        key = size_key(best)
        for cand in _candidates(best):
            if time.monotonic() - t0 > budget_s or tried >= max_tried:
                capped = True
                break
            if cand in seen or size_key(cand) >= key:
                continue
            seen.add(cand)
            tried += 1
            try:
                res = check(cand)
            except GpusemError:
                continue
            if res.status == "finding" and res.signature == signature:
                best, best_res, progress = cand, res, True
                kept += 1
                break
        if capped:
            break
    stats = ShrinkStats(text.count("\n"), best.count("\n"), tried, kept,
                        round(time.monotonic() - t0, 2), capped)
    return best, best_res, stats


# --------------------------------------------------------------------------- passes


def _candidates(text: str) -> Iterator[str]:
    lines = text.split("\n")
    yield from _deletions(lines)
    yield from _arguments(lines)
    yield from _passes(lines)
    yield from _unwraps(lines)
    yield from _fewer_blocks(text)
    yield from _subexpressions(lines)
    yield from _literals(lines)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block_end(lines: list[str], i: int) -> int:
    """One past the last line of the block that line i heads (i itself if none)."""
    j, ind = i + 1, _indent(lines[i])
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > ind):
        j += 1
    while j > i + 1 and not lines[j - 1].strip():  # trailing blank lines stay
        j -= 1
    return j


def _join(lines: list[str]) -> str:
    return "\n".join(lines)


def _deletions(lines: list[str]) -> Iterator[str]:
    """Outermost first: a block's whole deletion before its parts'."""
    order = sorted(range(len(lines)), key=lambda i: _indent(lines[i]))
    for i in order:
        line = lines[i]
        if not line.strip() or line.startswith(("@", "# launch")):
            continue
        start, end = i, _block_end(lines, i)
        if line.startswith("def "):  # with its decorators and the blank after
            while start > 0 and lines[start - 1].startswith("@"):
                start -= 1
            if end < len(lines) and not lines[end].strip():
                end += 1
        yield _join(lines[:start] + lines[end:])


def _arguments(lines: list[str]) -> Iterator[str]:
    for i, line in enumerate(lines):
        m = re.match(r"# arg (\w+) = ", line)
        if m is None:
            continue
        param = re.compile(rf",?\s*\b{m.group(1)}\s*:[^,)]*\)?")
        for j, d in enumerate(lines):
            if d.startswith("def k(") or d.startswith("def ") and "grid[1]" in d:
                new = param.sub(lambda p: ")" if p.group().endswith(")") else "", d,
                                count=1).replace("(, ", "(").replace("(,", "(")
                rest = lines[:j] + [new] + lines[j + 1:]
                yield _join(rest[:i] + rest[i + 1:])
                break


def _passes(lines: list[str]) -> Iterator[str]:
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s == "pass" or s.endswith(":") or line.startswith(("#", "@")):
            continue
        if i > 0 and lines[i - 1].rstrip().endswith(":") and \
                _indent(lines[i - 1]) < _indent(line) and \
                _block_end(lines, i - 1) == i + 1:
            yield _join(lines[:i] + [" " * _indent(line) + "pass"] + lines[i + 1:])


def _dedent(block: list[str]) -> list[str]:
    return [ln.removeprefix("    ") for ln in block]


def _unwraps(lines: list[str]) -> Iterator[str]:
    for i, line in enumerate(lines):
        s = line.strip()
        if not s.endswith(":") or s.startswith(("def ", "else", "case ", "match ")):
            continue
        end = _block_end(lines, i)
        body = _dedent(lines[i + 1:end])
        rest = lines[end:]
        if s.startswith("if ") and rest and rest[0].strip() == "else:" and \
                _indent(rest[0]) == _indent(line):
            else_end = _block_end(lines, end)
            yield _join(lines[:i] + body + lines[else_end:])
            yield _join(lines[:i] + _dedent(lines[end + 1:else_end])
                        + lines[else_end:])
            continue
        yield _join(lines[:i] + body + rest)
        m = _PARTITION.search(s)
        if m is not None:
            whole, piece = m.group(1), m.group(2)
            renamed = [re.sub(rf"\b{piece}\b", whole, ln) for ln in body]
            yield _join(lines[:i] + renamed + rest)


def _fewer_blocks(text: str) -> Iterator[str]:
    m = _LAUNCH.search(text)
    if m is None or int(m.group(2)) <= 1:
        return
    blocks, threads = int(m.group(2)), int(m.group(3))
    out = text.replace(m.group(0), f"# launch: {m.group(1)} blocks=1 "
                                   f"threads={threads}")
    yield out.replace(f"# arg O = int[{blocks * threads}]",
                      f"# arg O = int[{threads}]")


def _subexpressions(lines: list[str]) -> Iterator[str]:
    for i, line in enumerate(lines):
        m = _ASSIGN.match(line)
        if m is None or line.lstrip().startswith(("#", "@", "with ", "def ")):
            continue
        lhs, rhs = m.group(1), m.group(2)
        try:
            tree = ast.parse(rhs, mode="eval").body
        except SyntaxError:
            continue
        subs = [ast.unparse(n) for n in ast.walk(tree) if n is not tree
                and isinstance(n, ast.expr) and not isinstance(n, ast.operator)]
        for sub in dict.fromkeys(["0", *subs]):
            if sub != rhs:
                yield _join(lines[:i] + [lhs + sub] + lines[i + 1:])


def _literals(lines: list[str]) -> Iterator[str]:
    for i, line in enumerate(lines):
        if line.startswith(("#", "@")) or "offset=" in line or "shared(" in line:
            continue  # sizes and layout: the scaffolding's, not the code's
        for m in _INT.finditer(line):
            v = int(m.group())
            for new in dict.fromkeys([0, 1, v // 2]):
                if abs(new) < abs(v):
                    yield _join(lines[:i] + [line[:m.start()] + str(new)
                                             + line[m.end():]] + lines[i + 1:])
