"""The committed robustness campaign (issue 15): N generated and mutated inputs through
every verb that reads a program, split over J worker processes
(`python -m tests.robust.campaign`), with a watchdog: a worker whose current input has
not finished 90 s after its deadline (a hang in C code that the in-process SIGALRM
cannot interrupt) is killed, the input counted as a hang and kept, and a fresh worker
goes on with the rest of that worker's share.

    nice -n 10 python scripts/robust_campaign.py --inputs 100000 --jobs 2 \\
        --out results/robustness_campaign.json

Writes the tally (runs per verb, exit code and input origin; failures by kind with
up to five reproducers each), the command, the machine and inputs/s. Exit 1 if any
run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.robust.harness import Tally  # after the path


class Worker:
    def __init__(self, index: int, share: int, seed: int, tmp: Path, deadline: float):
        self.index, self.left, self.seed = index, share, seed
        self.tmp, self.deadline, self.restarts = tmp, deadline, 0
        self.proc: subprocess.Popen | None = None
        self.results: list[Path] = []
        self.start()

    @property
    def progress(self) -> Path:
        return self.tmp / f"w{self.index}.progress"

    def start(self) -> None:
        out = self.tmp / f"w{self.index}.{self.restarts}.json"
        self.results.append(out)
        self.progress.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.robust.campaign", "--inputs", str(self.left),
             "--seed", str(self.seed + 7919 * self.restarts), "--out", str(out),
             "--progress", str(self.progress), "--deadline", str(self.deadline)],
            cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=open(self.tmp / f"w{self.index}.err", "a"))  # noqa: SIM115
        self.last_change = time.monotonic()
        self.last_mtime = 0.0

    def stalled(self) -> bool:
        mtime = self.progress.stat().st_mtime if self.progress.exists() else 0.0
        if mtime != self.last_mtime:
            self.last_mtime, self.last_change = mtime, time.monotonic()
        return time.monotonic() - self.last_change > self.deadline + 90

    def kill_and_restart(self, hangs: list[dict]) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        state = json.loads(self.progress.read_text())
        done = state["done"]
        hangs.append({**state["input"], "failure": "hang",
                      "detail": "killed by the driver: no progress"})
        # the killed worker's tally is lost; count what it ran as runs without
        # failures except the hang (its failures would have been written at its end)
        self.lost_runs = getattr(self, "lost_runs", 0) + done + 1
        self.left -= done + 1
        self.restarts += 1
        if self.left > 0:
            self.start()
        else:
            self.proc = None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--deadline", type=float, default=60.0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    start = time.time()
    hangs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gpusem-robust-driver-") as tmp:
        shares = [args.inputs // args.jobs + (j < args.inputs % args.jobs)
                  for j in range(args.jobs)]
        workers = [Worker(j, n, args.seed * 1000 + j, Path(tmp), args.deadline)
                   for j, n in enumerate(shares)]
        while any(w.proc is not None for w in workers):
            time.sleep(5)
            for w in workers:
                if w.proc is None:
                    continue
                if w.proc.poll() is not None:
                    w.proc = None
                elif w.stalled():
                    w.kill_and_restart(hangs)
        tally = Tally()
        for w in workers:
            for result in w.results:
                if result.exists():
                    tally.merge(json.loads(result.read_text()))
        lost = sum(getattr(w, "lost_runs", 0) for w in workers)
        errors = {w.index: (Path(tmp) / f"w{w.index}.err").read_text()[-2000:]
                  for w in workers if (Path(tmp) / f"w{w.index}.err").exists()}
    tally.runs += lost
    tally.failures["hang"] += len(hangs)
    tally.examples.extend(hangs[:5])
    wall = time.time() - start
    doc = {
        "issue": 15,
        "command": " ".join(["python", "scripts/robust_campaign.py", *sys.argv[1:]]),
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT,
                                 capture_output=True, text=True, check=False
                                 ).stdout.strip(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "jobs": args.jobs, "seed": args.seed, "deadline_s": args.deadline,
        "wall_s": round(wall, 1), "inputs_per_s": round(tally.runs / wall, 2),
        **tally.as_dict(),
        "worker_stderr": {k: v for k, v in errors.items() if v.strip()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: doc[k] for k in ("runs", "wall_s", "inputs_per_s",
                                          "failures")}))
    sys.exit(1 if tally.failed else 0)


if __name__ == "__main__":
    main()
