"""The expression-level passes of the CUDA reducer: simpler expressions, fewer casts
and qualifiers, smaller constants, arrays and launches, short names; and
`clang_format_lite`, the whitespace normaliser run once at the end.

As in `passes.py`, a pass proposes and the interestingness test decides: a
`__restrict__` or a `const` the finding needs survives because removing it makes the
test fail.
"""

from __future__ import annotations

import re

from gpusem.fuzz.cuda_reduce.sites import (
    UNARY,
    Alternative,
    Pass,
    Site,
    drop,
    is_operand_end,
    replace,
    source,
    split_top,
)
from gpusem.fuzz.cuda_reduce.tokens import (
    Token,
    code_tokens,
    int_value,
    match_brackets,
    tokenize,
)

_KEYWORDS = frozenset(["alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const", "constexpr", "continue", "decltype", "default", "delete", "do", "double", "else", "enum", "explicit", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected", "public", "register", "return", "short", "signed", "sizeof", "static", "static_cast", "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "reinterpret_cast", "const_cast", "dynamic_cast", "main", "__global__", "__device__", "__host__", "__shared__", "__constant__", "__restrict__", "__forceinline__", "__noinline__", "__align__", "__launch_bounds__", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "printf", "memcpy", "memcmp", "memset", "malloc", "free", "exit"])
_TYPES = frozenset(["int", "unsigned", "signed", "char", "short", "long", "float", "double", "void", "bool", "size_t", "const", "volatile", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t"])
_QUALIFIERS = frozenset({"const", "volatile", "__restrict__", "__restrict", "static",
                         "inline", "__forceinline__", "__noinline__", "register",
                         "constexpr", "__inline__"})
_ATTRIBUTES = frozenset({"__align__", "__launch_bounds__", "__maxnreg__"})
# C++'s binary operators, loosest first
_PRECEDENCE = [frozenset(ops.split()) for ops in
               ("? :", "||", "&&", "|", "^", "&", "== !=", "< > <= >=", "<< >>",
                "+ -", "* / %")]
_HEADS = frozenset({"if", "while", "switch", "for", "sizeof", "return"})
# no name a file declares (declared.py: never a reason to reject a candidate)
KEYWORDS = _KEYWORDS | _TYPES | _QUALIFIERS


def _expression_alts(text: str, tokens: list[Token], pairs: dict[int, int], i: int,
                     j: int) -> list[Alternative]:
    """Replace tokens[i..j] by 0, by 1, by one of its top-level operands, or drop a
    leading unary operator."""
    if j <= i:
        return []
    alts: list[Alternative] = [(replace(tokens, i, j, "0"),),
                               (replace(tokens, i, j, "1"),)]
    for level in _PRECEDENCE:  # the operands of the loosest-binding operator
        pieces = split_top(tokens, pairs, i, j, level)
        if len(pieces) > 1:
            alts += [(replace(tokens, i, j, source(text, tokens, a, b)),)
                     for a, b in pieces]
            break
    if tokens[i].text in UNARY:
        alts.append((drop(tokens, i, i),))
    return alts


def simplify_expressions(text: str) -> list[Site]:
    """Parenthesised expressions, call arguments, right-hand sides and returned
    values: each replaced by 0, 1 or one of its operands."""
    tokens = code_tokens(text)
    pairs = match_brackets(tokens)
    spans: list[tuple[int, int]] = []
    for k, t in enumerate(tokens):
        if t.text == "(" and k in pairs:
            close = pairs[k]
            prev = tokens[k - 1] if k else None
            if prev is not None and prev.text == "for":
                continue
            args = split_top(tokens, pairs, k + 1, close - 1, frozenset({","}))
            if prev is not None and prev.kind == "ident" and prev.text not in _HEADS:
                # a definition's parameters are declarations, not expressions: each
                # alternative (`f(0, int b) {`) failed to compile in the bloated-T1
                # reduction (12 of its 29 candidates here)
                if close + 1 >= len(tokens) or tokens[close + 1].text != "{":
                    spans += args
            elif prev is not None and prev.text == ">>>" and len(args) > 1:
                continue  # a launch's arguments: one value for all is the wrong arity
            elif not _is_cast(tokens, pairs, k):
                spans.append((k + 1, close - 1))
        elif t.text in ("=", "return") and (t.text == "return" or t.kind == "punct"):
            end = k + 1
            while end < len(tokens) and tokens[end].text not in (";", ",", ")", "}"):
                end = pairs[end] + 1 if tokens[end].text in "([{" and end in pairs \
                    else end + 1
            if tokens[k + 1].text != "{":
                spans.append((k + 1, end - 1))
    sites = [tuple(alts) for i, j in sorted(set(spans))
             if (alts := _expression_alts(text, tokens, pairs, i, j))]
    return sites


def _is_cast(tokens: list[Token], pairs: dict[int, int], k: int) -> bool:
    """`(type)` followed by an operand: a C-style cast."""
    close = pairs[k]
    inner = tokens[k + 1:close]
    if not inner or close + 1 >= len(tokens):
        return False
    typeish = all(t.kind == "ident" or t.text in ("*", "&", "::") for t in inner)
    named = inner[0].text in _TYPES or inner[-1].text == "*" or \
        inner[0].text.endswith("_t") or inner[0].text.startswith("gs_")
    nxt = tokens[close + 1]
    operand = nxt.kind in ("ident", "number", "char") or nxt.text in ("(", "-", "!",
                                                                      "~", "&")
    before = tokens[k - 1] if k else None
    return typeish and named and operand and not (before and is_operand_end(before))


def remove_casts_and_qualifiers(text: str) -> list[Site]:
    """C-style casts, `static_cast<T>(...)`, qualifiers (`const`, `__restrict__`,
    `static`, ...), `extern "C"` and attributes such as `__align__(16)`: each
    removed alone."""
    tokens = code_tokens(text)
    pairs = match_brackets(tokens)
    sites: list[Site] = []
    for k, t in enumerate(tokens):
        if t.text == "(" and k in pairs and _is_cast(tokens, pairs, k):
            sites.append(((drop(tokens, k, pairs[k]),),))
        elif t.text in _QUALIFIERS:
            sites.append(((drop(tokens, k, k),),))
        elif t.text == "extern" and k + 1 < len(tokens) and tokens[k + 1].kind \
                == "string":
            sites.append(((drop(tokens, k, k + 1),),))
        elif t.text in _ATTRIBUTES and k + 1 in pairs:
            sites.append(((drop(tokens, k, pairs[k + 1]),),))
        elif t.text.endswith("_cast") and k + 1 < len(tokens) \
                and tokens[k + 1].text == "<":
            close = next((m for m in range(k + 2, len(tokens))
                          if tokens[m].text == ">"), None)
            if close is not None:
                sites.append(((drop(tokens, k, close),),))
    return sites


def shrink_constants(text: str) -> list[Site]:
    """Integer literals: 0, 1 or half, written in decimal (never larger)."""
    sites: list[Site] = []
    for t in code_tokens(text):
        v = int_value(t.text) if t.kind == "number" else None
        if v is None or (v <= 1 and t.text in ("0", "1")):
            continue
        suffix = t.text[len(t.text.rstrip("uUlL")):]
        values = [0, 1, v // 2] if v > 1 else [v]
        alts = [((t.start, t.end, f"{w}{suffix}"),) for w in dict.fromkeys(values)
                if f"{w}{suffix}" != t.text]
        if alts:
            sites.append(tuple(alts))
    return sites


def shrink_arrays_and_launch(text: str) -> list[Site]:
    """Brace initialisers keep their first half or first element; a launch's grid and
    block become 1 and its optional arguments (shared memory, stream) go."""
    tokens = code_tokens(text)
    pairs = match_brackets(tokens)
    sites: list[Site] = []
    for k, t in enumerate(tokens):
        if t.text == "{" and k in pairs and k and tokens[k - 1].text in ("=", "]"):
            items = split_top(tokens, pairs, k + 1, pairs[k] - 1, frozenset({","}))
            if len(items) > 1:
                half = items[(len(items) + 1) // 2 - 1][1]
                sites.append(((replace(tokens, k + 1, pairs[k] - 1,
                                       source(text, tokens, k + 1, half)),),
                              (replace(tokens, k + 1, pairs[k] - 1,
                                       source(text, tokens, *items[0])),)))
        elif t.text == "<<<":
            close = next((m for m in range(k + 1, len(tokens))
                          if tokens[m].text == ">>>"), None)
            if close is None:
                continue
            args = split_top(tokens, pairs, k + 1, close - 1, frozenset({","}))
            for a, b in args[:2]:
                if source(text, tokens, a, b) != "1":
                    sites.append(((replace(tokens, a, b, "1"),),))
            if len(args) > 2:
                sites.append(((replace(tokens, args[1][1] + 1, close - 1, ""),),))
    return sites


def rename_identifiers(text: str) -> list[Site]:
    """Each name the file declares (a parameter, a variable, a function, a macro),
    longer than one letter, becomes the first free one of a, b, c, ...: every use at
    once. First all of them at once (each its own letter, the text the one-at-a-time
    walk ends with when it keeps every rename): a rename rarely changes what a test
    sees, and a test that keeps all (9 of 9 in the bloated-T1 reduction of
    tests/fuzz/test_cuda_reduce_nvcc.py) then costs one candidate, not one per name;
    where one rename is refused, this costs one candidate more."""
    all_tokens = tokenize(text)
    code = [t for t in all_tokens if t.code]
    taken = {t.text for t in code if t.kind == "ident"}
    declared: list[str] = []
    for k, t in enumerate(code):
        if t.kind != "ident" or len(t.text) < 2 or t.text in _KEYWORDS \
                or t.text in declared or t.text.startswith("__"):
            continue
        prev = code[k - 1] if k else None
        if prev is not None and (prev.text in ("*", "&") or prev.kind == "ident"
                                 and prev.text not in ("return", "else", "case")):
            declared.append(t.text)
    free = [c for c in "abcdefghijklmnopqrstuvwxyz" if c not in taken]
    sites: list[Site] = []
    for name in declared:
        if not free:
            break
        short = free[0]
        alt = tuple((t.start, t.end, short) for t in code
                    if t.kind == "ident" and t.text == name)
        sites.append((alt,))
    if len(sites) < 2:
        return sites
    letter = dict(zip(declared, free, strict=False))
    every = tuple((t.start, t.end, letter[t.text]) for t in code
                  if t.kind == "ident" and t.text in letter)
    return [(every,), *sites]


def expression_passes() -> list[Pass]:
    return [Pass("simplify_expressions", simplify_expressions),
            Pass("remove_casts_and_qualifiers", remove_casts_and_qualifiers),
            Pass("shrink_arrays_and_launch", shrink_arrays_and_launch),
            Pass("shrink_constants", shrink_constants),
            Pass("rename_identifiers", rename_identifiers)]


def clang_format_lite(text: str) -> str:
    """Whitespace normalised: comments kept, blank lines and trailing spaces gone,
    runs of spaces inside a line squeezed, a lone `{` joined to the line before, and
    each line indented two spaces per open brace. Never changes a token."""
    lines: list[str] = []
    continued = False  # the line before ended in `\`: this one belongs to it
    for raw in text.splitlines():
        if continued:
            lines.append(raw)
            continued = raw.endswith("\\")
            continue
        continued = raw.endswith("\\")
        line = " ".join(raw.split()) if not _in_literal(raw) else raw.strip()
        if _plain(line):  # `( int* a )` -> `(int* a)`, left by a removed qualifier
            line = _TIGHT_CLOSE.sub(r"\1", _TIGHT_OPEN.sub(r"\1", line))
        if not line:
            continue
        if line == "{" and lines and not lines[-1].lstrip().startswith(("#", "//")):
            lines[-1] += " {"
            continue
        lines.append(line)
    out, depth, continued = [], 0, False
    for line in lines:
        if continued:
            out.append(line)
            continued = line.endswith("\\")
            continue
        continued = line.endswith("\\")
        toks = [t for t in tokenize(line) if t.code]
        opens = sum(t.text == "{" for t in toks)
        closes = sum(t.text == "}" for t in toks)
        lead = 0
        for t in toks:
            if t.text != "}":
                break
            lead += 1
        indent = 0 if line.startswith("#") else max(0, depth - lead)
        out.append("  " * indent + line)
        depth = max(0, depth + opens - closes)
    return "\n".join(out) + "\n"


_TIGHT_OPEN = re.compile(r"([(\[])\s+")
_TIGHT_CLOSE = re.compile(r"\s+([)\],;])")


def _plain(line: str) -> bool:
    """Code only: no directive, literal or comment whose spaces could matter."""
    return not line.startswith("#") and all(
        t.kind not in ("string", "char", "comment", "pp") for t in tokenize(line))


def _in_literal(line: str) -> bool:
    """Squeezing spaces would change a string or character literal on this line."""
    return any(t.kind in ("string", "char") and "  " in t.text for t in tokenize(line))
