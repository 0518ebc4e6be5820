"""The gpusem pytest plugin (entry point `pytest11`; issue 18): a fixture that runs a
short campaign against a target and fails the test with the bundle paths.

    def test_mycc_has_no_wrong_code(gpusem_campaign):
        gpusem_campaign("mycc", budget_s=30, max_programs=300)

    @pytest.mark.gpusem(target="mycc", prop="compile", max_programs=200)
    def test_mycc_compile(gpusem_campaign):
        gpusem_campaign()          # the marker's arguments are the defaults

The campaign writes its bundles under `--gpusem-out` (default: the test's tmp_path),
so a CI job can upload them; the failure message names each finding's bundle and the
`gpusem replay` command. Options: `--gpusem-seed` (default 0), `--gpusem-budget`
(seconds, overrides every campaign's budget).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("gpusem")
    group.addoption("--gpusem-out", default=None,
                    help="Folder for the campaigns' bundles (default: tmp_path).")
    group.addoption("--gpusem-seed", type=int, default=0, help="Campaign seed.")
    group.addoption("--gpusem-budget", type=float, default=None,
                    help="Seconds per campaign (overrides the tests' budgets).")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "gpusem(target, prop, budget_s, max_programs, ...): defaults for "
        "the gpusem_campaign fixture of this test")


@pytest.fixture
def gpusem_campaign(request: Any, tmp_path: Path) -> Any:
    """A function `run(target=..., prop=None, budget_s=30, max_programs=None, **kw)`:
    runs the campaign (`gpusem.api.fuzz`) and fails the test if it finds anything
    or compares no program (exit code 4); returns the `CampaignResult` when it
    compared programs and found nothing."""
    marker = request.node.get_closest_marker("gpusem")
    defaults = dict(marker.kwargs) if marker is not None else {}
    config = request.config

    def run(target: str | None = None, prop: str | None = None, **kw: Any) -> Any:
        from gpusem import api

        args = defaults | kw
        target = target or args.pop("target", "bundl")
        args.pop("target", None)
        prop = prop or args.pop("prop", None)
        args.pop("prop", None)
        out = config.getoption("--gpusem-out")
        out_dir = Path(out) / request.node.name if out else tmp_path / "gpusem-out"
        budget = config.getoption("--gpusem-budget")
        args.setdefault("budget_s", 30.0)
        if budget is not None:
            args["budget_s"] = budget
        args.setdefault("seed", config.getoption("--gpusem-seed"))
        result = api.fuzz(target, (prop,) if prop else (), out_dir=str(out_dir), **args)
        result.report.write(out_dir=str(out_dir))
        if result.summary.findings or result.summary.failed:
            lines = [f"gpusem: {len(result.summary.findings)} finding(s) against "
                     f"{target} (exit code {result.exit_code}); summary: "
                     f"{out_dir / 'summary.txt'}"]
            for f in result.summary.findings:
                lines.append(f"  {f.kind}: {f.signature}\n    bundle: {f.bundle}\n"
                             f"    replay: gpusem replay {f.bundle}")
            lines += [f"  failed: {why}" for why in result.summary.failed]
            pytest.fail("\n".join(lines), pytrace=False)
        if result.exit_code == api.EXIT_NOTHING_CHECKED:  # no silent green (32.1)
            pytest.fail(f"gpusem: nothing checked against {target} (exit code "
                        f"{result.exit_code}): {result.summary.programs} programs, "
                        f"none compared; summary: {out_dir / 'summary.txt'}",
                        pytrace=False)
        return result

    return run
