"""The order of the README's two-worker run (issue 32): the files of tests/slowest.txt
first, slowest first, each file's tests together (tests/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.conftest import SLOWEST, file_seconds, slowest_files_first

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Item:
    nodeid: str


def test_the_table_names_only_test_files_that_exist() -> None:
    seconds = file_seconds(SLOWEST.read_text())
    assert len(seconds) >= 10, seconds  # a pasted block, not an empty table
    missing = [path for path in seconds if not (ROOT / path).is_file()]
    assert missing == [], f"tests/slowest.txt names files that are gone: {missing}"


def test_a_durations_block_sums_per_file() -> None:
    text = ("1.50s call     tests/a.py::test_x[1-2]\n"
            "0.50s setup    tests/a.py::test_y\n"
            "# a comment, and a line of another shape\n"
            "3 passed in 2.00s\n"
            "2.25s teardown tests/b/c.py::T::test_z\n")
    assert file_seconds(text) == {"tests/a.py": 2.0, "tests/b/c.py": 2.25}


def test_slowest_files_first_and_each_file_together() -> None:
    items = [Item(n) for n in ("tests/a.py::t1", "tests/b.py::t1", "tests/a.py::t2",
                               "tests/c.py::t1", "tests/b.py::t2", "tests/d.py::t1")]
    order = slowest_files_first(items, {"tests/c.py": 5.0, "tests/b.py": 9.0})
    assert [i.nodeid for i in order] == [
        "tests/b.py::t1", "tests/b.py::t2", "tests/c.py::t1",  # the table's, slowest
        "tests/a.py::t1", "tests/a.py::t2", "tests/d.py::t1"]  # the rest, in order
