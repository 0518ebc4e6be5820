"""The names a `.cu` text declares, for a free check before a compiler run: a candidate
that removes the last declaration of a name it still uses cannot compile, so when the
test (or a guard) needs the text to compile, the reducer rejects it without running
`nvcc` (as `_balanced` rejects unbalanced brackets).

Measured on the bloated-T1 reduction of tests/fuzz/test_cuda_reduce_nvcc.py: 12 of the
19 candidates of `remove_lines` the test refused removed a `#define`, a `typedef`, a
function or a variable the rest still used (scripts/measure_cuda_reduce_t1.py).

Found, textually (`code_tokens`; no parser): a `#define`'s name, and the declarator
names of a statement that starts with two words (`int x = 0, *p;`, `typedef T U;`,
`__global__ void k(...) {`, `static const int a[8] = {...};`, `struct S {`): the last
identifier before the declarator's first `=`, `[`, `(`, `,`, `;`, `{` or `:`. Not
found (never a reason to reject): names declared by a macro's expansion, enumerators,
lambdas' parameters. A function's parameters and a `for` header's variables count
(and a constructor's arguments: more names than are, which only lets a candidate
through). A use is an identifier in code outside directives, not a member's name
after `.` or `->`. So the check errs one way, by letting a candidate through to the
compiler; the other way (a name the candidate no longer declares that a system header
also declares) loses that one reduction, never a wrong result.
"""

from __future__ import annotations

import re

from gpusem.fuzz.cuda_reduce.passes_expr import KEYWORDS
from gpusem.fuzz.cuda_reduce.tokens import Token

_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_][A-Za-z_0-9]*)")
# statements that start with a word but declare nothing
_NOT_DECLARATIONS = frozenset({
    "return", "if", "else", "for", "while", "do", "switch", "case", "default", "goto",
    "break", "continue", "delete", "throw", "using", "namespace", "template",
    "sizeof", "new", "this", "true", "false", "nullptr", "asm", "__asm__", "__asm"})
_DECLARATOR_END = frozenset({"=", "[", "(", ",", ";", "{", ":"})
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_STATEMENT_START = frozenset({";", "{", "}"})


def declared_names(tokens: list[Token]) -> set[str]:
    """The names the text of `tokens` (`code_tokens`) declares (see the module
    docstring)."""
    names: set[str] = set()
    start = True
    for k, t in enumerate(tokens):
        if t.kind == "pp":
            m = _DEFINE.match(t.text)
            if m:
                names.add(m.group(1))
            start = True
            continue
        if start and t.kind == "ident" and t.text not in _NOT_DECLARATIONS:
            names.update(_declarators(tokens, k))
        # a `for` header's first clause is a statement too
        start = t.text in _STATEMENT_START or (t.text == "(" and k > 0
                                               and tokens[k - 1].text == "for")
    return names


def _declarators(tokens: list[Token], k: int) -> list[str]:
    """The names declared by the statement starting at tokens[k] (none when it is not
    a declaration: fewer than two words before its first declarator ends)."""
    out: list[str] = []
    words, last = 0, None
    n = len(tokens)
    while k < n:
        t = tokens[k]
        if t.kind == "ident":
            words, last = words + 1, t.text
        elif t.kind == "string" and t.text == '"C"':  # extern "C"
            pass
        elif t.text in ("*", "&", "&&"):
            last = None  # the declarator's name follows
        elif t.text in _DECLARATOR_END:
            if last is None or (words < 2 and not out):
                return out  # not a declaration (or no name here)
            out.append(last)
            if t.text in (";", "{", ":"):
                return out  # the end, a body or an initialiser list: one name more
            if t.text == "(":
                out += _parameters(tokens, k)
            if t.text in ("=", "[", "("):
                k = _skip(tokens, k)  # an initialiser, an array size, parameters
                if k < n and tokens[k].text == "{":
                    return out  # a function's body
                continue
            last = None  # `,`: the next declarator
        elif t.kind != "pp":
            return out  # `<`, `::`, an operator: not (or no longer) a declaration
        else:
            return out
        k += 1
    return out


def _skip(tokens: list[Token], k: int) -> int:
    """From a declarator's `=`, `[` or `(` at tokens[k]: the index of the token that
    ends it (the `,` or `;` after an initialiser, the token after `]` or `)`)."""
    depth, first = 0, tokens[k].text
    k += first == "="
    while k < len(tokens):
        t = tokens[k].text
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
            if depth < 0:
                return k
            if depth == 0 and first != "=":
                return k + 1
        elif depth == 0 and t in (",", ";"):
            return k
        k += 1
    return k


def _parameters(tokens: list[Token], k: int) -> list[str]:
    """The names the parenthesised list after a declarator's name may declare (a
    function's parameters): each top-level piece's last identifier before its `=`,
    `[` or end. A constructor's arguments count too (`dim3 g(x, y)` "declares" x and
    y): more names declared only ever lets a candidate through."""
    out: list[str] = []
    depth, last = 0, None
    for t in tokens[k + 1:]:
        if t.kind == "pp":
            break
        if depth == 0 and t.kind == "ident":
            last = t.text
        elif t.text in _OPEN:
            depth += 1
        elif t.text in _CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and t.text in (",", "="):
            if last is not None:
                out.append(last)
            last = None
    if last is not None:
        out.append(last)
    return out


def loses_a_declaration(base: set[str], tokens: list[Token]) -> bool:
    """Whether the candidate (`tokens`, `code_tokens`) still uses a name of `base`
    (`declared_names` of the text it was cut from) that it no longer declares."""
    used = {t.text for k, t in enumerate(tokens) if t.kind == "ident"
            and not (k and tokens[k - 1].text in (".", "->"))}  # a member's name
    # a keyword or a type "declared" by a nameless parameter (`f(void)`) is no name
    return bool((base & used) - declared_names(tokens) - KEYWORDS)
