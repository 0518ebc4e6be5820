"""What a reduction pass proposes: sites, each with alternatives, each a set of edits
of the text (spans replaced), as C-Reduce's passes do; and the helpers the passes
share to read a token list (statement ends, top-level operands).

A pass is a function `text -> list[Site]`, named as a verb (hypothesis's shrink passes
are): the reducer tries a site's alternatives in order, keeps the first that stays
interesting and is smaller (`tokens.size_key`), and then asks the pass again at the
same site index of the new text, so a pass walks a file once per round, front to back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpusem.fuzz.cuda_reduce.tokens import Token

Edit = tuple[int, int, str]  # replace text[start:end] by the string
Alternative = tuple[Edit, ...]
Site = tuple[Alternative, ...]
PassFn = Callable[[str], list[Site]]


@dataclass(frozen=True, slots=True)
class Pass:
    name: str  # a verb: remove_lines, shrink_constants, ...
    sites: PassFn
    # chunked: each site has one alternative and the reducer removes runs of
    # neighbouring sites together, halving the run on failure (ddmin)
    chunked: bool = False


def apply(text: str, alt: Alternative) -> str:
    """The text with the edits of one alternative made (they never overlap)."""
    for start, end, rep in sorted(alt, key=lambda e: e[0], reverse=True):
        text = text[:start] + rep + text[end:]
    return text


def drop(tokens: list[Token], i: int, j: int) -> Edit:
    """Remove tokens[i..j] (inclusive)."""
    return (tokens[i].start, tokens[j].end, "")


def replace(tokens: list[Token], i: int, j: int, text: str) -> Edit:
    return (tokens[i].start, tokens[j].end, text)


def source(text: str, tokens: list[Token], i: int, j: int) -> str:
    """The original text of tokens[i..j], whitespace inside kept."""
    return text[tokens[i].start:tokens[j].end]


STMT_KEYWORDS = frozenset({"if", "for", "while", "switch", "do", "else", "return"})
BINARY = frozenset({"+", "-", "*", "/", "%", "<<", ">>", "<", ">", "<=", ">=", "==",
                    "!=", "&", "|", "^", "&&", "||", "?", ":"})
UNARY = frozenset({"-", "!", "~", "+"})


def is_operand_end(t: Token) -> bool:
    """A token an expression can end with (so a following `-` is binary)."""
    return t.kind in ("ident", "number", "string", "char") or t.text in (")", "]")


def statement_end(tokens: list[Token], pairs: dict[int, int], i: int) -> int | None:
    """Index of the `;` ending the statement that starts at tokens[i] (brackets
    skipped), or None when a `}` closes the scope first."""
    k = i
    while k < len(tokens):
        t = tokens[k]
        if t.text == ";":
            return k
        if t.text in ("(", "[", "{") and k in pairs:
            if t.text == "{" and k == i:
                return pairs[k]
            k = pairs[k] + 1
            continue
        if t.text in (")", "]", "}"):
            return None
        k += 1
    return None


def split_top(tokens: list[Token], pairs: dict[int, int], i: int, j: int,
              seps: frozenset[str]) -> list[tuple[int, int]]:
    """tokens[i..j] cut at the separators `seps` outside brackets: (first, last) of
    each piece, empty pieces left out. A binary operator counts only after an operand
    (so `-x` is one piece)."""
    pieces, start, k = [], i, i
    while k <= j:
        t = tokens[k]
        if t.text in ("(", "[", "{") and k in pairs and pairs[k] <= j:
            k = pairs[k] + 1
            continue
        binary_ok = t.text not in BINARY or (k > i and is_operand_end(tokens[k - 1]))
        if t.kind == "punct" and t.text in seps and binary_ok:
            if k > start:
                pieces.append((start, k - 1))
            start = k + 1
        k += 1
    if start <= j:
        pieces.append((start, j))
    return pieces
