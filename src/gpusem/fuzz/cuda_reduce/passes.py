"""The structural passes of the CUDA reducer: whole lines, comments, preprocessor arms,
unused definitions, includes and balanced `{...}` statements. Each is a verb
(`sites.Pass`); the expression-level ones are in `passes_expr.py`.

None of them decides what may go: each proposes, and the interestingness test and the
guards (`oracles.py`) decide. So a cast or a qualifier the finding needs stays because
the test fails without it, not because a pass knows about it.
"""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

from gpusem.fuzz.cuda_reduce.sites import (
    Alternative,
    Pass,
    Site,
    drop,
    replace,
    source,
    statement_end,
)
from gpusem.fuzz.cuda_reduce.tokens import Token, code_tokens, match_brackets, tokenize

_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_INCLUDE = re.compile(r'#\s*include\s*([<"])([^>"]+)[>"]')
_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_][A-Za-z_0-9]*)")


def remove_lines(text: str) -> list[Site]:
    """One site per line holding code; the reducer removes them in chunks (ddmin)."""
    sites: list[Site] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            sites.append((((pos, pos + len(line), ""),),))
        pos += len(line)
    return sites


def remove_comments(text: str) -> list[Site]:
    """All comments at once, then each alone (a `#line`-like use of one is rare)."""
    comments = [t for t in tokenize(text) if t.kind == "comment"]
    each: list[Site] = [(((t.start, t.end, " " if t.text.startswith("/*") else ""),),)
                        for t in comments]
    if len(each) < 2:
        return each
    return [(tuple(alt[0][0] for alt in each),), *each]


def pick_preprocessor_arms(text: str) -> list[Site]:
    """Each `#if ... #elif/#else ... #endif` group: keep one arm (its directives gone)
    or none. Resolves the runtime's `#if GS_CUDA` and include guards."""
    pps = [t for t in tokenize(text) if t.kind == "pp"]
    sites: list[Site] = []
    stack: list[list[Token]] = []
    for t in pps:
        word = t.text[1:].lstrip().split(None, 1)[0] if t.text[1:].strip() else ""
        if word.startswith("if"):
            stack.append([t])
        elif word in ("elif", "else") and stack:
            stack[-1].append(t)
        elif word == "endif" and stack:
            group = stack.pop() + [t]
            sites.append(_arms(group))
    return sorted(sites, key=lambda s: s[0][0][0])


def _arms(group: list[Token]) -> Site:
    """Alternatives for one conditional group: drop it all, or keep arm k."""
    start, end = group[0].start, group[-1].end
    alts: list[Alternative] = [((start, end, ""),)]
    for a, b in pairwise(group):
        alts.append(((start, a.end, ""), (b.start, end, "")))
    return tuple(alts)


def _top_level_items(tokens: list[Token], pairs: dict[int, int]) \
        -> list[tuple[int, int]]:
    """(first, last) token of each top-level declaration or definition: it ends at a
    `;` or at the `}` of a body (a body is a `{` that does not follow `=`)."""
    items, start, k = [], 0, 0
    while k < len(tokens):
        t = tokens[k]
        if t.kind == "pp":
            items.append((k, k))
            if start == k:  # else a directive inside a declaration: it goes on
                start = k + 1
        elif t.text in ("(", "[") and k in pairs:
            k = pairs[k]
        elif t.text == "{" and k in pairs:
            close = pairs[k]
            after = close + 1
            if (k > 0 and tokens[k - 1].text == "=") or \
                    (after < len(tokens) and tokens[after].text == ";"):
                k = close  # an initializer or a struct: its `;` ends the item
            else:
                items.append((start, close))
                start, k = close + 1, close + 1
                continue
        elif t.text == ";":
            items.append((start, k))
            start = k + 1
        k += 1
    return items


def _declared(tokens: list[Token], first: int, last: int) -> str | None:
    """The name an item declares: a `#define`'s, or the identifier before the first
    `(` (a function) or before `[`/`=`/`;` (a variable), `main` never."""
    t = tokens[first]
    if t.kind == "pp":
        m = _DEFINE.match(t.text)
        return m.group(1) if m else None
    name = None
    for k in range(first, last + 1):
        tk = tokens[k]
        if tk.text in ("(", "[", "=", ";", "{"):
            break
        if tk.kind == "ident":
            name = tk.text
    return None if name in (None, "main") else name


def remove_unused_functions_and_macros(text: str) -> list[Site]:
    """Every top-level definition whose name nothing else mentions: all of them at once
    first, then each alone; forward declarations go with their definition."""
    tokens = code_tokens(text)
    pairs = match_brackets(tokens)
    items = _top_level_items(tokens, pairs)
    uses: dict[str, int] = {}
    for t in tokens:
        words = _WORD.findall(t.text) if t.kind == "pp" else \
            [t.text] if t.kind == "ident" else []
        for w in words:
            uses[w] = uses.get(w, 0) + 1
    by_name: dict[str, list[tuple[int, int]]] = {}
    for first, last in items:
        name = _declared(tokens, first, last)
        if name is not None:
            by_name.setdefault(name, []).append((first, last))
    unused: list[Site] = []
    for name, spans in by_name.items():
        inside = sum(1 for first, last in spans for k in range(first, last + 1)
                     for w in (_WORD.findall(tokens[k].text) if tokens[k].kind == "pp"
                               else [tokens[k].text]) if w == name)
        if uses.get(name, 0) <= inside:
            unused.append((tuple(drop(tokens, a, b) for a, b in spans),))
    unused.sort(key=lambda s: s[0][0][0])
    if len(unused) < 2:
        return unused
    return [(tuple(e for s in unused for e in s[0]),), *unused]


def inline_the_runtime(search: tuple[Path, ...] = ()) -> Pass:
    """`#include`s: a system header is dropped (kept only when the test needs it); a
    quoted one found under `search` is dropped or replaced by its text, so the file
    stands alone and the other passes cut what of it is unused."""

    def sites(text: str) -> list[Site]:
        out: list[Site] = []
        for t in tokenize(text):
            m = _INCLUDE.match(t.text) if t.kind == "pp" else None
            if not m:
                continue
            alts = [((t.start, t.end, ""),)]
            if m.group(1) == '"':
                for folder in search:
                    f = folder / m.group(2)
                    if f.is_file():
                        alts.append(((t.start, t.end, f.read_text()),))
                        break
            out.append(tuple(alts))
        return out

    return Pass("inline_the_runtime", sites)


_HEADS = frozenset({"if", "for", "while", "switch"})


def remove_blocks(text: str) -> list[Site]:
    """Balanced statements: an `if` (with its `else`), a loop, a `{...}` block, a
    function's body. Alternatives: remove it, keep its body only (unwrap), keep the
    `else` arm only, drop the `else` arm, empty a function body."""
    tokens = code_tokens(text)
    pairs = match_brackets(tokens)
    sites: list[Site] = []
    for k, t in enumerate(tokens):
        site: Site | None = None
        if t.kind == "ident" and t.text in _HEADS and k + 1 < len(tokens) \
                and tokens[k + 1].text == "(" and k + 1 in pairs:
            site = _statement_site(text, tokens, pairs, k, pairs[k + 1] + 1)
        elif t.text == "{" and k in pairs and k > 0:
            before = tokens[k - 1].text
            if before in (";", "{", "}", ":"):  # a plain block
                site = _statement_site(text, tokens, pairs, k, k)
            elif before == ")" and _is_function_body(tokens, pairs, k):
                close = pairs[k]
                if close > k + 1:
                    site = ((replace(tokens, k + 1, close - 1, ""),),)
        if site:
            sites.append(site)
    return sites


def _is_function_body(tokens: list[Token], pairs: dict[int, int], k: int) -> bool:
    opener = pairs.get(k - 1)
    return opener is not None and opener > 0 and tokens[opener - 1].kind == "ident" \
        and tokens[opener - 1].text not in _HEADS


def _body(tokens: list[Token], pairs: dict[int, int], b: int) \
        -> tuple[int, int, int] | None:
    """A statement body starting at tokens[b]: (first, last) of what it holds and its
    own last token."""
    if b >= len(tokens):
        return None
    if tokens[b].text == "{" and b in pairs:
        return b + 1, pairs[b] - 1, pairs[b]
    end = statement_end(tokens, pairs, b)
    return (b, end, end) if end is not None else None


def _statement_site(text: str, tokens: list[Token], pairs: dict[int, int], head: int,
                    b: int) -> Site | None:
    body = _body(tokens, pairs, b)
    if body is None:
        return None
    first, last, end = body
    inner = source(text, tokens, first, last) if first <= last else ""
    alts = [(drop(tokens, head, end),)]
    if tokens[head].text != "switch":
        alts.append((replace(tokens, head, end, inner),))
    if tokens[head].text == "if" and end + 1 < len(tokens) \
            and tokens[end + 1].text == "else":
        arm = _body(tokens, pairs, end + 2)
        if arm is not None:
            e_first, e_last, e_end = arm
            e_inner = source(text, tokens, e_first, e_last) if e_first <= e_last else ""
            alts = [(drop(tokens, head, e_end),),
                    (replace(tokens, head, e_end, inner),),
                    (replace(tokens, head, e_end, e_inner),),
                    (drop(tokens, end + 1, e_end),)]
    return tuple(alts)


def structural_passes(search: tuple[Path, ...] = ()) -> list[Pass]:
    return [Pass("remove_comments", remove_comments),
            Pass("pick_preprocessor_arms", pick_preprocessor_arms),
            Pass("remove_unused_functions_and_macros",
                 remove_unused_functions_and_macros),
            inline_the_runtime(search),
            Pass("remove_blocks", remove_blocks),
            Pass("remove_lines", remove_lines, chunked=True)]
