"""The small textual pre-pass before Python's `ast` reads a Prism file (Sec 3).

Prism is Python-shaped (decorators, `with`, `match`/`case`, `x : τ @ π = e` is an
annotated assignment), so `ast.parse` does the parsing; the pre-pass only
  - strips the listing line numbers of a program copied from the paper (Appendix B
    prints every line with its number), remembering each line's column shift so spans
    still name the file's own columns;
  - rejects, with a named reason, the two printed notations Python would misread:
    `level[]` (rule Printed-Empty-Level: Fig. 6 vs B.1 shows it means `level[1]`) and
    the typesetter's continuation marks `→`/`↪` (rule Printed-Continuation-Mark);
  - reads the `# launch:`, `# template:` and `# arg` header comments (what a host
    passes to the kernel; the paper leaves it out).
User code is never executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpusem.calculus.errors import BadInput
from gpusem.calculus.prism.ast import Arg, Launch
from gpusem.calculus.span import Span

_NUMBERED = re.compile(r"^(\s*\d+ ?)(.*)$")
_EMPTY_LEVEL = re.compile(r"\b(grid|block|thread|warp|warpgroup)\[\s*\]")
_MARKS = ("→", "↪")


@dataclass(frozen=True)
class Prepared:
    """The text for `ast.parse` and, per 1-based line, the columns the pre-pass
    removed from its start."""

    text: str
    shifts: tuple[int, ...]
    launch: Launch | None

    def span(self, file: str, line: int, col: int, end_line: int,
             end_col: int) -> Span:
        """A span of the file from `ast`'s 1-based line and 0-based column."""
        return Span(file, line, col + 1 + self._shift(line), end_line,
                    max(end_col + self._shift(end_line), 1))

    def _shift(self, line: int) -> int:
        return self.shifts[line - 1] if 0 < line <= len(self.shifts) else 0


def prepare(text: str, file: str) -> Prepared:
    lines = text.split("\n")
    numbered = _is_numbered_listing(lines)
    # the listing's number column is as wide as its longest number plus a space
    width = max((len(m.group(1).strip()) for ln in lines
                 if (m := _NUMBERED.match(ln))), default=0)
    out: list[str] = []
    shifts: list[int] = []
    for i, raw in enumerate(lines, 1):
        line, shift = raw, 0
        if numbered:
            m = _NUMBERED.match(raw)
            if m:
                digits = m.group(1).strip()
                rest = raw[raw.index(digits) + len(digits):]
                pad = len(rest) - len(rest.lstrip(" "))
                cut = min(pad, width - len(digits) + 1)
                line = rest[cut:]
                shift = len(raw) - len(line)
        _reject_printed_notation(line, file, i, shift)
        out.append(line)
        shifts.append(shift)
    return Prepared("\n".join(out), tuple(shifts), read_launch(lines, file))


def _is_numbered_listing(lines: list[str]) -> bool:
    """A paper listing: most non-blank lines start with a line number."""
    code = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    hits = sum(1 for ln in code if _NUMBERED.match(ln) and ln.strip()[0].isdigit()
               and not re.match(r"^\s*\d+\s*$", ln))
    return bool(code) and hits * 2 > len(code)


def _reject_printed_notation(line: str, file: str, lineno: int, shift: int) -> None:
    code = line.split("#", 1)[0]
    m = _EMPTY_LEVEL.search(code)
    if m:
        raise BadInput(f"printed notation: {m.group(0)} has no size (the paper's "
                       f"level[] means {m.group(1)}[1], compare Fig. 6 with B.1)",
                       rule="Printed-Empty-Level",
                       span=Span(file, lineno, m.start() + 1 + shift, lineno,
                                 m.end() + shift))
    for mark in _MARKS:
        col = code.find(mark)
        if col >= 0:
            raise BadInput(f"printed notation: continuation mark {mark!r} (a line "
                           "broken by the typesetter)",
                           rule="Printed-Continuation-Mark",
                           span=Span(file, lineno, col + 1 + shift, lineno,
                                     col + 1 + shift))


# ------------------------------------------------------------------ launch header

_LAUNCH = re.compile(r"^#\s*launch:\s*(\w+)\s+blocks\s*=\s*(\d+)\s+threads\s*=\s*(\d+)"
                     r"\s*$")
_TEMPLATE = re.compile(r"^#\s*template:\s*(.*)$")
_ARG = re.compile(r"^#\s*arg\s+(\w+)\s*=\s*(.*)$")
_ARRAY = re.compile(r"^(int|float|uint32_t)\[(\d+)\]\s*(.*)$")


def read_launch(lines: list[str], file: str) -> Launch | None:
    head: tuple[str, int, int, Span] | None = None
    template: list[tuple[str, int]] = []
    args: list[Arg] = []
    for i, raw in enumerate(lines, 1):
        line = raw.strip()
        span = Span(file, i, 1, i, max(len(raw), 1))
        if m := _LAUNCH.match(line):
            head = (m.group(1), int(m.group(2)), int(m.group(3)), span)
        elif m := _TEMPLATE.match(line):
            for item in m.group(1).split():
                name, _, value = item.partition("=")
                if not value.lstrip("-").isdigit():
                    raise BadInput(f"bad header: template value {item!r} is not an "
                                   "integer", rule="Launch-Header", span=span)
                template.append((name, int(value)))
        elif m := _ARG.match(line):
            args.append(_arg(m.group(1), m.group(2).strip(), span))
        elif line.startswith(("# launch", "# arg")):
            raise BadInput(f"bad header: {line!r}", rule="Launch-Header", span=span)
    if head is None:
        if args or template:
            raise BadInput("bad header: # arg / # template without # launch",
                           rule="Launch-Header", span=args[0].span if args else
                           Span(file, 1, 1, 1, 1))
        return None
    kernel, blocks, threads, span = head
    if blocks < 1 or threads < 1:
        raise BadInput("bad header: blocks and threads must be positive",
                       rule="Launch-Header", span=span)
    return Launch(kernel, blocks, threads, tuple(template), tuple(args), span)


def _arg(name: str, text: str, span: Span) -> Arg:
    m = _ARRAY.match(text)
    if m is None:
        return Arg(name, None, 0, (_number(text, span),), False, span)
    elem, size, rest = m.group(1), int(m.group(2)), m.group(3).strip()
    if rest == "iota":
        return Arg(name, elem, size, None, True, span)
    if not rest:
        return Arg(name, elem, size, None, False, span)
    if not (rest.startswith("[") and rest.endswith("]")):
        raise BadInput(f"bad header: array {name} needs iota, [v, ...] or nothing",
                       rule="Launch-Header", span=span)
    values = tuple(_number(v.strip(), span) for v in rest[1:-1].split(",") if v.strip())
    if len(values) != size:
        raise BadInput(f"bad header: array {name} has {len(values)} values, declares "
                       f"{size}", rule="Launch-Header", span=span)
    return Arg(name, elem, size, values, False, span)


def _number(text: str, span: Span) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise BadInput(f"bad header: {text!r} is not a number", rule="Launch-Header",
                       span=span) from None
