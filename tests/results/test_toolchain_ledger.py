"""The toolchain ledger (results/toolchain/LEDGER.md, issue 23: 1,000,000 programs of
the `toolchain` property on GPUs) counts what its committed reports say: each row's
programs equal its JSON's, each of them a campaign of that property alone, and the
total is their sum."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "results" / "toolchain"


def ledger_rows() -> tuple[list[tuple[int, Path]], int]:
    rows, total = [], -1
    for line in (ROOT / "LEDGER.md").read_text().splitlines():
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[3].strip("*").replace(",", "").isdigit():
            continue
        n = int(cells[3].strip("*").replace(",", ""))
        if cells[0].strip("*") == "in all":
            total = n
        else:
            rows.append((n, ROOT / cells[4]))
    return rows, total


def test_every_ledger_row_is_its_report_and_the_total_their_sum() -> None:
    rows, total = ledger_rows()
    assert len(rows) >= 7
    for n, path in rows:
        report = json.loads(path.read_text())
        programs = report.get("counts", {}).get("programs", report.get("programs"))
        assert programs == n, (path, programs, n)
        assert list(report["by_property"]) == ["toolchain"], path
    assert total == sum(n for n, _ in rows)
    assert total >= 1_000_000  # the goal, reached at stop 31
