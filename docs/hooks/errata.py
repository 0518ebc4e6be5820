"""mkdocs hook: the Errata page is proofs_notes/errata.md itself, read at build time
(docs/errata.md is only its place in the site), so the errata are never copied."""

from __future__ import annotations

from pathlib import Path

ERRATA = Path(__file__).resolve().parents[2] / "proofs_notes" / "errata.md"


def on_page_read_source(page, config):  # noqa: ANN001 - mkdocs' hook signature
    if page.file.src_uri == "errata.md":
        return ERRATA.read_text(encoding="utf-8")
    return None
