"""Issue 13, "a campaign round is generated twice": the campaign before and after, same
seeds, same target, one command.

    python scripts/measure_double_work.py [--programs 300] [--fault floor-division]

Before: fuzz/campaign.py as on `main` before the change (loaded from git, commit
BEFORE): a round with a new signature was generated again by hypothesis to shrink.
After: this checkout (the round generated once; shrinking replays the failing example's
choice sequence). Both run the bundl `compile` property with a seeded fault, counting
every program the strategy draws and every `check`, and report the shrunk sizes (the
quality must not drop). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "7eb008b"  # main before the campaign work (issue 13/15/18)


def counting(base: type) -> type:
    class Counting(base):  # type: ignore[misc, valid-type]
        draws = checks = 0

        def strategy(self, prop):
            def seen(p):
                type(self).draws += 1
                return p
            return super().strategy(prop).map(seen)

        def check(self, program, prop="compile"):
            type(self).checks += 1
            return super().check(program, prop)
    return Counting


def run(campaign_cls, register, name: str, args, out: str) -> dict:
    from gpusem.fuzz.bundl.target import BundlTarget

    cls = counting(BundlTarget)
    register(name, cls)
    c = campaign_cls(name, prop="compile", budget_s=3600, max_programs=args.programs,
                     seed=args.seed, out_dir=out, round_size=args.round_size)
    # the same cap on hypothesis's shrinking of one finding in both (30 s)
    c._hunt_too_long = lambda since: time.monotonic() - since >= 30.0
    t0 = time.monotonic()
    s = c.run()
    return {"seconds": round(time.monotonic() - t0, 1), "programs": s.programs,
            "draws": cls.draws, "checks": cls.checks,
            "findings": sorted((f.signature, f.size) for f in s.findings)}


def old_campaign():
    text = subprocess.run(["git", "show", f"{BEFORE}:fuzz/campaign.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_campaign.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("old_campaign", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_campaign"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.Campaign


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=300)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--fault", default="floor-division")
    args = ap.parse_args()
    os.environ["GPUSEM_FAULT"] = args.fault
    os.environ.setdefault("GPUSEM_SHRINK_S", "10")
    from gpusem.fuzz.campaign import Campaign
    from gpusem.fuzz.targets import register_target

    with tempfile.TemporaryDirectory() as tmp:
        before = run(old_campaign(), register_target, "bundl-before", args, tmp + "/b")
        after = run(Campaign, register_target, "bundl-after", args, tmp + "/a")
    print(json.dumps({"command": "python " + " ".join(sys.argv), "fault": args.fault,
                      "before": before, "after": after,
                      "draws_ratio": round(after["draws"] / before["draws"], 3),
                      "checks_ratio": round(after["checks"] / before["checks"], 3),
                      "time_ratio": round(after["seconds"] / before["seconds"], 3)},
                     indent=1))


if __name__ == "__main__":
    main()
