"""Source spans carried by every syntax node (STYLE 7, 11)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file: 1-based lines and columns, end inclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    def lines(self, source: str) -> list[str]:
        """The source lines this span covers (for error reports and the debugger)."""
        return source.splitlines()[self.line - 1 : self.end_line]


# Nodes built by code (generators, passes) rather than parsed from a file.
NO_SPAN = Span("<generated>", 0, 0, 0, 0)
