"""Read the event IR (calculus/cypress/events.py) in the notation of Fig. 8b, as
`event_printer` writes it: one operation a line, a loop's block indented two spaces
under it, each block ending in `yield`. parse . print = id (a test). Malformed text is
one BadInput with its `file:line:col`."""

from __future__ import annotations

import re
from typing import Literal, cast

from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import MEMORIES, PROCESSORS, Processor
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import Span

_NAME = r"[A-Za-z_]\w*"
_ALLOC = re.compile(rf"({_NAME}) = tensor\(\[([0-9, ]*)\], (\w+)\)"
                    r"(?: @ smem\[(\d+)\])?")
_BLOCKS = re.compile(rf"({_NAME}) = partition_by_blocks\(({_NAME}), \((.*)\)\)")
_MMA = re.compile(rf"({_NAME}) = partition_by_mma\(({_NAME}), (WGMMA_(?:SM90_)?"
                  r"(\d+)x\d+x\d+)\(\), (\w+), \"([ABC])\"\)")
_EVENT = re.compile(rf"({_NAME}): (\(\)|\[.*?\]) = (.*)")
_ROLE = r"(?: on (dma|compute))?"
_COPY = re.compile(rf"copy\((.*)\), (\{{.*\}}){_ROLE}")
_CALL = re.compile(rf"call\(({_NAME})((?:, .*?)*)\), (\{{.*\}}){_ROLE}")
_LOOP = re.compile(rf"(pfor|for) ({_NAME}) in \[(.*?), (.*?)\)(?: pipeline (\d+))?, "
                   r"(\{.*\}) do")
_YIELD = re.compile(r"yield (.*)")
_ALIAS = re.compile(rf"({_NAME}) = ({_NAME}(?:\[.*\])?)")
_VEC = re.compile(rf"({_NAME}) = ([a-z]+)_id\((\d+)\) do")


class _Reader:
    def __init__(self, text: str, file: str) -> None:
        self.lines = text.splitlines()
        self.file = file
        self.at = 0
        self.current = 0  # the line being read, for messages

    def bad(self, message: str, col: int = 1) -> BadInput:
        line = min(self.current + 1, max(len(self.lines), 1))
        return BadInput(message, span=Span(self.file, line, col, line, col))

    def program(self) -> E.EventProgram:
        if not self.lines or not self.lines[0].startswith("# params: "):
            raise self.bad("bad event IR: the first line is '# params: NAME, ..'")
        params = tuple(p.strip() for p in self.lines[0][10:].split(",") if p.strip())
        self.at = 1
        body = self.block(0)
        if self.at != len(self.lines):
            self.current = self.at
            raise self.bad("bad event IR: text after the final yield")
        return E.EventProgram(params, body)

    def block(self, depth: int) -> E.Block:
        ops: list[E.Op] = []
        pad = "  " * depth
        while self.at < len(self.lines):
            self.current = self.at
            raw = self.lines[self.at]
            if not raw.startswith(pad) or raw[len(pad):].startswith(" "):
                raise self.bad(f"bad indentation: expected {len(pad)} spaces")
            line = raw[len(pad):]
            m = _YIELD.fullmatch(line)
            if m:
                self.at += 1
                refs = m[1]
                return E.Block(tuple(ops), self.pre(refs if refs.startswith("{")
                                                    else "{" + refs + "}"))
            ops.append(self.op(line, depth))
        self.current = self.at
        raise self.bad("bad event IR: a block ends without yield")

    def op(self, line: str, depth: int) -> E.Op:
        self.current = self.at
        if m := _ALLOC.fullmatch(line):
            self.at += 1
            if m[3] not in MEMORIES:
                raise self.bad(f"unknown memory: {m[3]}")
            shape = tuple(int(x) for x in m[2].split(",") if x.strip())
            return E.Alloc(m[1], shape, MEMORIES[m[3]],
                           None if m[4] is None else int(m[4]))
        if m := _BLOCKS.fullmatch(line):
            self.at += 1
            sizes = tuple(None if x.strip() == "None" else int(x)
                          for x in m[3].split(",") if x.strip())
            return E.PartBlocks(m[1], m[2], sizes)
        if m := _VEC.fullmatch(line):
            self.at += 1
            proc = self.proc(m[2].upper())
            return E.Vec(m[1], proc, int(m[3]), self.region(depth + 1))
        if m := _MMA.fullmatch(line):
            self.at += 1
            return E.PartMma(m[1], m[2], m[3], int(m[4]), self.proc(m[5]),
                             cast(Literal["A", "B", "C"], m[6]))
        if (m := _ALIAS.fullmatch(line)) and not line.startswith("yield"):
            self.at += 1
            return E.Alias(m[1], self.ref(m[2]))
        m = _EVENT.fullmatch(line)
        if m is None:
            raise self.bad("bad event IR: expected an allocation, a partition, "
                           "`ev: et = copy|call|for|pfor ...` or yield")
        event, etype, rest = m[1], self.etype(m[2]), m[3]
        if c := _COPY.fullmatch(rest):
            self.at += 1
            operands = _split(c[1])
            if len(operands) != 2:
                raise self.bad("bad event IR: copy(SRC, DST)")
            return E.Copy(event, etype, self.ref(operands[0]), self.ref(operands[1]),
                          self.pre(c[2]), cast(E.Role, c[3] or ""))
        if c := _CALL.fullmatch(rest):
            self.at += 1
            args = tuple(self.ref(a) for a in _split(c[2][2:])) if c[2] else ()
            return E.Call(event, etype, c[1], args, self.pre(c[3]),
                          cast(E.Role, c[4] or ""))
        if c := _LOOP.fullmatch(rest):
            lo, hi, pre = self.expr(c[3]), self.expr(c[4]), self.pre(c[6])
            pipe = int(c[5]) if c[5] else 0
            if pipe and c[1] == "pfor":
                raise self.bad("bad event IR: only a `for` is pipelined")
            self.at += 1
            body = self.block(depth + 1)
            return E.Loop(event, etype, c[1] == "pfor", c[2], lo, hi, pre, body,
                          pipe)
        raise self.bad("bad event IR: expected copy(..), call(..), for or pfor")

    def region(self, depth: int) -> tuple[E.Op, ...]:
        """The ops of a vectorised loop: indented under its binding, no yield."""
        ops: list[E.Op] = []
        pad = "  " * depth
        while self.at < len(self.lines):
            raw = self.lines[self.at]
            if not raw.startswith(pad) or raw[len(pad):].startswith(" "):
                break
            self.current = self.at
            if _YIELD.fullmatch(raw[len(pad):]):
                raise self.bad("bad event IR: a vectorised loop has no yield")
            ops.append(self.op(raw[len(pad):], depth))
        if not ops:
            self.current = self.at
            raise self.bad("bad event IR: a vectorised loop without operations")
        return tuple(ops)

    def proc(self, name: str) -> Processor:
        if name not in PROCESSORS:
            raise self.bad(f"unknown processor: {name}")
        return PROCESSORS[name]

    def etype(self, text: str) -> E.EventType:
        if text == "()":
            return ()
        dims = re.findall(r"\((\d+), (\w+)\)", text)
        return tuple((int(n), self.proc(p)) for n, p in dims)

    def pre(self, text: str) -> tuple[E.EvRef, ...]:
        inner = text.strip()[1:-1]
        return tuple(self.evref(r) for r in _split(inner) if r.strip())

    def evref(self, text: str) -> E.EvRef:
        m = re.fullmatch(rf"({_NAME})(?:\[(.*)\])?(?:@-([1-9]\d*))?", text.strip())
        if m is None:
            raise self.bad(f"bad event: {text!r}")
        index = tuple(None if i.strip() == ":" else self.expr(i)
                      for i in _split(m[2])) if m[2] else ()
        return E.EvRef(m[1], index, int(m[3]) if m[3] else 0)

    def ref(self, text: str) -> E.Ref:
        m = re.fullmatch(rf"({_NAME})(?:\[(.*)\])?", text.strip())
        if m is None:
            raise self.bad(f"bad operand: {text!r}")
        return E.Ref(m[1], tuple(self.expr(i) for i in _split(m[2]))
                     if m[2] is not None else None)

    def expr(self, text: str) -> E.IExpr:
        """N | x | e (+|-|*|//|%) e, the printer's full parentheses (or
        precedence)."""
        tokens = re.findall(r"\d+|[A-Za-z_]\w*|//|[-+*%()]|\S", text)
        pos = 0

        def peek() -> str:
            return tokens[pos] if pos < len(tokens) else ""

        def atom() -> E.IExpr:
            nonlocal pos
            tok = peek()
            pos += 1
            if tok == "(":
                e = sum_()
                if peek() != ")":
                    raise self.bad(f"bad expression: {text!r}")
                pos += 1
                return e
            if tok.isdigit():
                return E.INum(int(tok))
            if re.fullmatch(_NAME, tok):
                return E.IVar(tok)
            raise self.bad(f"bad expression: {text!r}")

        def product() -> E.IExpr:
            nonlocal pos
            e = atom()
            while peek() in ("*", "//", "%"):
                op = peek()
                pos += 1
                e = E.IBin(cast(Literal["*", "//", "%"], op), e, atom())
            return e

        def sum_() -> E.IExpr:
            nonlocal pos
            e = product()
            while peek() in ("+", "-"):
                op = peek()
                pos += 1
                e = E.IBin(cast(Literal["+", "-"], op), e, product())
            return e

        result = sum_()
        if pos != len(tokens):
            raise self.bad(f"bad expression: {text!r}")
        return result


def _split(text: str) -> list[str]:
    """Split at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [x.strip() for x in out]


def parse_events(text: str, file: str = "<events>") -> E.EventProgram:
    return _Reader(text, file).program()
