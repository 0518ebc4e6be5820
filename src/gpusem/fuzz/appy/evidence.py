"""Attribution by evidence in the emitted module (issue 24): before a failing APPy
kernel is blamed on a component, read what appyc generated.

A lost update on the GPU that Triton's interpreter does not show looks like Triton's
fault (right in the interpreter, wrong on the GPU), but the interpreter runs a grid's
programs one after another, so a read-modify-write that should be atomic is right
there by accident. If the source says `#pragma atomic` and the module has no
`tl.atomic_*` call, appyc dropped the pragma: the module is wrong, Triton compiled it
faithfully.
"""

from __future__ import annotations

import re

ATOMIC_CALL = re.compile(r"\btl\.atomic_(add|max|min|and|or|xor|xchg|cas)\s*\(")


def source_has_atomic(feats: set[str]) -> bool:
    """The kernel's source has a `#pragma atomic` update (coverage.py's constructs)."""
    return any(f == "atomic" or f.startswith("atomic_") for f in feats)


def atomic_dropped(feats: set[str], module: str) -> str:
    """The evidence that appyc dropped an atomic pragma ("" when there is none)."""
    if not module or not source_has_atomic(feats) or ATOMIC_CALL.search(module):
        return ""
    return ("the source has `#pragma atomic`; the generated module has no tl.atomic_* "
            "call (its update is tl.load + tl.store)")
