"""The same seed draws the same programs (issue 31.3): the generator's speed-ups (cached
strategies, cheaper draws) must not change a single program or choice sequence, or
goldens, stored bundles and coverage results would no longer replay.

tests/fuzz/data/draw_hashes.json was made ONCE from main's code before the speed-ups
(`scripts/draw_hashes.py`, whose docstring has the command); this test recomputes the
hashes with this tree's code and never writes the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
STORED = json.loads((ROOT / "tests/fuzz/data/draw_hashes.json").read_text())


def _script():
    return load_script("draw_hashes")


DRAW = _script()


def test_the_pin_covers_every_case() -> None:
    assert STORED["round_size"] == DRAW.ROUND_SIZE
    cases = [(r["property"], r["seed"], r["round"]) for r in STORED["rounds"]]
    assert cases == list(DRAW.CASES)
    assert all(len(r["programs"]) == DRAW.ROUND_SIZE for r in STORED["rounds"])


@pytest.mark.parametrize("stored", STORED["rounds"],
                         ids=lambda r: f"{r['property']}-s{r['seed']}-r{r['round']}")
def test_a_seed_draws_the_programs_main_drew(stored: dict) -> None:
    now = DRAW.round_hashes(stored["property"], stored["seed"], stored["round"])
    changed = [n for n, (a, b) in enumerate(zip(stored["programs"], now["programs"]))
               if a != b]
    assert now["programs"] == stored["programs"], f"programs {changed} differ"
    assert now["choices"] == stored["choices"]
