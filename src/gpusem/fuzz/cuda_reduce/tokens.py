"""A tiny C++ tokenizer and brace matcher for the CUDA reducer: enough of the lexical
grammar to cut a `.cu` text at statement and expression boundaries, never a parser.

A token is a maximal identifier, number, string or character literal, comment,
preprocessor line (with its `\\` continuations), punctuator or run of whitespace; the
concatenation of a text's tokens is the text itself (`tokenize` loses nothing), so a
pass edits spans of the original text and every other byte stays as it was.

Note: what the reducer gets wrong here (a raw string, a digraph, a `>>` closing two
templates) costs a rejected candidate, never a wrong result: every candidate goes
through the interestingness test and the guards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Longest punctuators first, so `<<=` is one token and `<<<` (a launch) is one too.
_PUNCT = sorted(
    ["<<<", ">>>", "<<=", ">>=", "...", "->*", "::", "->", "++", "--", "<<", ">>",
     "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
     "^=", ".*", "##"],
    key=len, reverse=True)
_LEX = re.compile(
    r"(?P<ws>[ \t\r\n\f\v]+)"
    r"|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r"|(?P<string>[uUL]?8?\"(?:[^\"\\\n]|\\.)*\")"
    r"|(?P<char>[uUL]?'(?:[^'\\\n]|\\.)*')"
    r"|(?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*)"
    r"|(?P<ident>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<punct>" + "|".join(re.escape(p) for p in _PUNCT) + r"|.)",
    re.DOTALL)

OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {v: k for k, v in OPEN.items()}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # ws, comment, pp, string, char, number, ident, punct
    text: str
    start: int  # offset in the text
    end: int

    @property
    def code(self) -> bool:
        """Not whitespace, not a comment: what the compiler reads."""
        return self.kind not in ("ws", "comment")


_PP = re.compile(r"#(?:[^\n\\]|\\\n|\\.)*")


def tokenize(text: str) -> list[Token]:
    out: list[Token] = []
    pos, n = 0, len(text)
    while pos < n:
        if text[pos] == "#" and not text[text.rfind("\n", 0, pos) + 1:pos].strip():
            m = _PP.match(text, pos)  # a directive: `#` first on its line
            assert m is not None
            out.append(Token("pp", m.group(), pos, m.end()))
        else:
            m = _LEX.match(text, pos)
            assert m is not None  # the last alternative matches any character
            out.append(Token(m.lastgroup or "punct", m.group(), pos, m.end()))
        pos = m.end()
    return out


def code_tokens(text: str) -> list[Token]:
    """The tokens the compiler reads (whitespace and comments dropped)."""
    return [t for t in tokenize(text) if t.code]


def match_brackets(tokens: list[Token]) -> dict[int, int]:
    """Index of each opening bracket -> index of its closing one (and back), among
    `tokens` (code tokens). Unbalanced brackets are left out: no candidate is made
    from them."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for i, t in enumerate(tokens):
        if t.kind != "punct":
            continue
        if t.text in OPEN:
            stack.append(i)
        elif t.text in CLOSE:
            if stack and tokens[stack[-1]].text == CLOSE[t.text]:
                j = stack.pop()
                pairs[j], pairs[i] = i, j
            else:
                stack.clear()  # broken nesting: stop trusting what is open
    return pairs


def size_key(text: str) -> tuple[int, int, int, int]:
    """One definition of "smaller" (shortlex, as hypothesis orders its choices): fewer
    code tokens, then fewer code characters, then smaller integer literals, then a
    shorter text. Every pass of the fixpoint must make it strictly smaller, so the
    fixpoint ends."""
    toks = code_tokens(text)
    literal = 0
    for t in toks:
        if t.kind == "number":
            v = int_value(t.text)
            literal += min(v, 1 << 20) if v is not None else 0
    return (len(toks), sum(len(t.text) for t in toks), literal, len(text))


_INT = re.compile(r"(0[xX][0-9A-Fa-f]+|0[bB][01]+|[0-9]+)([uUlL]*)")


def int_value(text: str) -> int | None:
    """The value of an integer literal (None: a float or something else)."""
    m = _INT.fullmatch(text)
    if not m:
        return None
    digits = m.group(1).lower()
    if digits.startswith("0x"):
        return int(digits, 16)
    if digits.startswith("0b"):
        return int(digits, 2)
    return int(digits, 8) if len(digits) > 1 and digits[0] == "0" else int(digits)


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line, the newline included."""
    spans, pos = [], 0
    for line in text.splitlines(keepends=True):
        spans.append((pos, pos + len(line)))
        pos += len(line)
    return spans


def count_lines(text: str) -> int:
    """Lines that hold anything but whitespace."""
    return sum(1 for line in text.splitlines() if line.strip())
