"""The same seed draws the same programs (issue 31.3): the generator's speed-ups (cached
strategies, cheaper draws) must not change a single program or choice sequence, or
goldens, stored bundles and coverage results would no longer replay.

tests/fuzz/data/draw_hashes.json was made ONCE from main's code before the speed-ups
(`scripts/draw_hashes.py`, whose docstring has the command); this test recomputes the
hashes with this tree's code and never writes the file. It pins the engine generation
mode (`fuzz/hunt.py`); tests/fuzz/data/draw_hashes_direct.json, made once when the
direct mode was added (the command is in the script's docstring too), pins that one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
PINS = {"engine": json.loads((ROOT / "tests/fuzz/data/draw_hashes.json").read_text()),
        "direct": json.loads(
            (ROOT / "tests/fuzz/data/draw_hashes_direct.json").read_text())}


def _script():
    return load_script("draw_hashes")


DRAW = _script()


@pytest.mark.parametrize("mode", sorted(PINS))
def test_the_pin_covers_every_case(mode: str) -> None:
    pin = PINS[mode]
    assert pin["round_size"] == DRAW.ROUND_SIZE
    assert pin.get("generation", "engine") == mode
    cases = [(r["property"], r["seed"], r["round"]) for r in pin["rounds"]]
    assert cases == list(DRAW.CASES)
    assert all(len(r["programs"]) == DRAW.ROUND_SIZE for r in pin["rounds"])


def test_the_two_modes_draw_different_rounds() -> None:
    """The direct pin is not the engine's under another name."""
    for e, d in zip(PINS["engine"]["rounds"], PINS["direct"]["rounds"]):
        assert e["choices"] != d["choices"] and e["programs"] != d["programs"]


@pytest.mark.parametrize(("mode", "stored"),
                         [(m, r) for m in sorted(PINS) for r in PINS[m]["rounds"]],
                         ids=lambda x: x if isinstance(x, str) else
                         f"{x['property']}-s{x['seed']}-r{x['round']}")
def test_a_seed_draws_the_programs_main_drew(mode: str, stored: dict) -> None:
    now = DRAW.round_hashes(stored["property"], stored["seed"], stored["round"], mode)
    changed = [n for n, (a, b) in enumerate(zip(stored["programs"], now["programs"]))
               if a != b]
    assert now["programs"] == stored["programs"], f"programs {changed} differ"
    assert now["choices"] == stored["choices"]
