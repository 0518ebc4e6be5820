"""A campaign of the prism target (issue 28 item 5) on the cpu backend, both
properties (elaboration, compile), with the construct coverage; writes the campaign's
JSON report. The target is registered at run time as well, so the script runs before
the `gpusem.targets` entry point of pyproject.toml is installed.

    PYTHONPATH=src python scripts/prism_campaign.py BUDGET_S OUT_DIR REPORT_JSON
    (e.g. 600 /tmp/prism-campaign results/prism/campaign_cpu.json)

Once installed, the same is `gpusem fuzz --target prism --property elaboration
--property compile --budget 10m --coverage --json REPORT_JSON`.
"""

from __future__ import annotations

import sys

from gpusem.fuzz.driver import CampaignSpec, run
from gpusem.fuzz.targets import register_target


def main() -> None:
    budget, out, report = float(sys.argv[1]), sys.argv[2], sys.argv[3]
    register_target("prism", "gpusem.fuzz.prism.target:PrismTarget")
    result = run(CampaignSpec(target="prism", props=("elaboration", "compile"),
                              budget_s=budget, out_dir=out, coverage=True, seed=28))
    result.report.write(json_path=report)
    print(f"exit {result.exit_code}")


if __name__ == "__main__":
    main()
