"""User text in generated C++: only inside comments that nothing can end early
(issue 15, "a miscompilation from a comment").

Both compilers copy source lines, file names and notes into `//` comments of the
CUDA C++ they emit. Translation phases 1-2 of C++ act on comments too: a `\\` before
the end of the line splices the next line (the next generated statement) into the
comment; a trigraph `??/` is a backslash under -trigraphs (and in C++ before 17); a
carriage return, a vertical tab, a form feed or U+2028 may end the line for one tool
and not for another; non-ASCII bytes depend on the compiler's input charset. So a
comment keeps printable ASCII only, without `\\` and `?`: each other character is
written as <U+XXXX>, so that the comment still says what the source said.
"""

from __future__ import annotations

# Printable ASCII but the backslash (line splices) and the question mark (trigraphs).
_SAFE = frozenset(chr(c) for c in range(0x20, 0x7F)) - {"\\", "?"}


def comment_text(text: str) -> str:
    """`text` with every character a comment cannot safely hold written <U+XXXX>;
    a tab is a space."""
    if _SAFE.issuperset(text):  # nearly every line: nothing to write otherwise
        return text
    return "".join(c if c in _SAFE else " " if c == "\t" else f"<U+{ord(c):04X}>"
                   for c in text)


def comment(text: str) -> str:
    """`// text`, safe: nothing after it on the line and nothing on the next line
    can become part of it."""
    return f"// {comment_text(text)}"


def comment_block(text: str) -> list[str]:
    """One `//` line per line of `text` (split on `\\n` only: every other line
    ending is escaped inside its comment)."""
    return [comment(line) if line else "//" for line in text.split("\n")]
