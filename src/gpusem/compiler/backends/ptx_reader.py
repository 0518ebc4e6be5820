"""A small reader of the PTX NVVM emits: functions, parameters, variables, instructions.

Enough of the PTX ISA's grammar (Chapter 4, "Syntax"; Chapter 9, "Instruction Set")
for the static checks of `ptx_check.py`: each `.entry` / `.func` with its parameters,
the state-space variables declared at module scope and inside bodies (`.shared`,
`.local`, `.global`, `.const`), and every instruction as guard, opcode (split at its
dots), operands and the PTX line it is on. Labels are kept, so a reader of a finding
can place it; the checks themselves do not need the control-flow graph (see
`ptx_check.points_to`). Anything the reader does not recognise in a body is skipped
line by line, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_FUNC = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$]*)\s*\(?")
_PARAM = re.compile(r"\.param\s+(?:\.[\w:]+\s+(?:\d+\s+)?)*([A-Za-z_$%][\w$]*)")
_VAR = re.compile(r"^\s*(?:\.(?:visible|extern|weak)\s+)*\.(shared|local|global|const)"
                  r"\b[^;]*?([A-Za-z_$%][\w$]*)\s*(?:\[[^\]]*\])*\s*(?:=[^;]*)?;")
_LABEL = re.compile(r"^\s*([A-Za-z_$%][\w$]*)\s*:")
_GUARD = re.compile(r"^@(!?)(%?[\w$]+)\s+")
REGISTER = re.compile(r"%[\w$]+")
_PIECES = re.compile(r"([{};])")
_OPCODE = re.compile(r"^[a-z][\w.:]*$")
_GROUPS = frozenset("[{()}]")  # operand text with none of these splits at its commas


@dataclass(frozen=True, slots=True)
class Instruction:
    """One PTX instruction: `@guard opcode operands;` on line `line` (1-based)."""

    line: int
    text: str  # as written, without the trailing `;`
    guard: str  # "" or e.g. "%p1" / "!%p1"
    opcode: tuple[str, ...]  # "ld.global.nc.u32" -> ("ld", "global", "nc", "u32")
    operands: tuple[str, ...]

    @property
    def op(self) -> str:
        return self.opcode[0]

    def has(self, *modifiers: str) -> bool:
        """Whether every one of `modifiers` is among the opcode's dotted parts."""
        return all(m in self.opcode[1:] for m in modifiers)


@dataclass(frozen=True, slots=True)
class Function:
    """A `.entry` (kernel) or `.func` with its parameters in order and its body."""

    name: str
    kernel: bool
    params: tuple[str, ...]
    variables: dict[str, str]  # name -> state space, declared in the body
    instructions: tuple[Instruction, ...]
    labels: dict[str, int]  # label -> line
    line: int


@dataclass(frozen=True, slots=True)
class Module:
    version: str  # the `.version` directive ("" when absent)
    target: str
    variables: dict[str, str]  # module-scope name -> state space
    functions: tuple[Function, ...]

    @property
    def kernels(self) -> tuple[Function, ...]:
        return tuple(f for f in self.functions if f.kernel)


def read_ptx(text: str) -> Module:
    """The module of a PTX text. Line numbers are the text's own (comments are blanked,
    never removed, so lines do not move)."""
    code = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    lines = code.split("\n")
    version = _directive(code, "version")
    target = _directive(code, "target")
    variables: dict[str, str] = {}
    functions: list[Function] = []
    i = 0
    while i < len(lines):
        match = _FUNC.search(lines[i])
        if match is None:
            if (var := _VAR.match(lines[i])) is not None:
                variables[var.group(2)] = var.group(1)
            i += 1
            continue
        function, i = _function(lines, i, match.group(1) == "entry", match.group(2))
        functions.append(function)
    return Module(version, target, variables, tuple(functions))


def _directive(code: str, name: str) -> str:
    match = re.search(rf"^\s*\.{name}\s+([^\n]+)", code, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _function(lines: list[str], start: int, kernel: bool,
              name: str) -> tuple[Function, int]:
    """The function declared on `lines[start]`; (it, the index after its body). A
    prototype without a body (`.extern .func ...;`) has no instructions."""
    header: list[str] = []
    i = start
    while (i < len(lines) and "{" not in lines[i]
           and not lines[i].rstrip().endswith(";")):
        header.append(lines[i])
        i += 1
    if i >= len(lines) or "{" not in lines[i]:
        last = lines[min(i, len(lines) - 1)]
        params = tuple(_PARAM.findall(" ".join([*header, last])))
        return Function(name, kernel, params, {}, (), {}, start + 1), i + 1
    header.append(lines[i].split("{", 1)[0])
    params = tuple(_PARAM.findall(" ".join(header)))
    body, variables, labels, end = _body(lines, i)
    function = Function(name, kernel, params, variables, tuple(body), labels,
                        start + 1)
    return function, end


def _body(lines: list[str], open_at: int):
    """Instructions, variables and labels from the `{` on `lines[open_at]` to its
    matching `}`; nested `{ }` (scoped register blocks) are read through."""
    body: list[Instruction] = []
    variables: dict[str, str] = {}
    labels: dict[str, int] = {}
    depth, i = 0, open_at
    pending, pending_line = "", 0
    while i < len(lines):
        text = lines[i]
        if i == open_at:
            text = text.split("{", 1)[1]
            depth = 1
        while not pending.strip() and (label := _LABEL.match(text)) is not None:
            labels[label.group(1)] = i + 1  # before the statement's line is taken
            text = text[label.end():]
        for piece in _PIECES.split(text):
            if piece in "{}" and pending.strip():  # a vector operand `{%r1, %r2}`
                pending += piece
            elif piece == "{":
                depth += 1
            elif piece == "}":
                depth -= 1
                if depth == 0:
                    return body, variables, labels, i + 1
            elif piece == ";":
                _statement(pending, pending_line, body, variables, labels)
                pending = ""
            elif piece.strip():
                if not pending.strip():
                    pending_line = i + 1
                pending += " " + piece
        i += 1
    return body, variables, labels, i


def _statement(text: str, line: int, body: list[Instruction],
               variables: dict[str, str], labels: dict[str, int]) -> None:
    text = text.strip()
    while (label := _LABEL.match(text)) is not None:
        labels[label.group(1)] = line
        text = text[label.end():].strip()
    if not text:
        return
    if text.startswith("."):
        if (var := _VAR.match(text + ";")) is not None:
            variables[var.group(2)] = var.group(1)
        return  # .reg, .pragma, .loc and other directives
    guard = ""
    if (g := _GUARD.match(text)) is not None:
        guard = g.group(1) + g.group(2)
        text = text[g.end():]
    text = " ".join(text.split())
    head, _, rest = text.partition(" ")
    if not head or not _OPCODE.match(head):
        return
    body.append(Instruction(line, (f"@{guard} " if guard else "") + text, guard,
                            tuple(head.split(".")), _operands(rest)))


def _operands(text: str) -> tuple[str, ...]:
    """Comma-separated operands; `[...]` and `{...}` groups stay whole."""
    if _GROUPS.isdisjoint(text):  # most instructions: no group to keep whole
        parts = [p.strip() for p in text.split(",")]
        return tuple(parts if parts[-1] else parts[:-1])
    out, depth, cur = [], 0, ""
    for c in text:
        if c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return tuple(out)
