"""Start mypy when collection ends, if test_mypy_is_clean is to run (early.py says
why)."""

from __future__ import annotations

from tests.layout import early


def pytest_collection_finish(session) -> None:
    if any(item.nodeid.endswith("test_layout.py::test_mypy_is_clean")
           for item in session.items):
        early.start("mypy", early.MYPY_ARGS)


def pytest_sessionfinish(session, exitstatus) -> None:
    early.stop_all()
