"""The committed robustness campaign (issue 15): N generated and mutated inputs through
every verb that reads a program, split over J worker processes
(`python -m tests.robust.campaign`, each checkpointing its tally every 200 inputs),
with a watchdog: a worker whose current input has not finished 90 s after its
deadline (a hang in C code, which the in-process SIGALRM cannot interrupt) is killed,
the input counted as a hang and kept, and a fresh worker goes on with the rest of that
worker's share.

    nice -n 10 python scripts/robust_campaign.py --inputs 100000 --jobs 2 \\
        --out results/robust/robustness_campaign.json
    python scripts/robust_campaign.py --merge a.json b.json --out merged.json

`--time-limit S` stops the workers after S seconds and keeps what they checkpointed
(the device machine allows 10 minutes a command: run parts with different seeds and
`--merge` them). Writes the tally (runs per verb, exit code and input origin; failures
by kind with up to five reproducers each), the command, the machine and inputs/s.
Exit 1 if any run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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
    def __init__(self, index: int, share: int, seed: int, tmp: Path, deadline: float,
                 memory_gb: float):
        self.index, self.left, self.seed = index, share, seed
        self.tmp, self.deadline, self.restarts = tmp, deadline, 0
        self.memory = int(memory_gb * (1 << 30))
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
        # (here, in the driver: `cap` runs in the child, after the fork)
        self.last_change, self.last_mtime = time.monotonic(), 0.0
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.robust.campaign", "--inputs", str(self.left),
             "--seed", str(self.seed + 7919 * self.restarts), "--out", str(out),
             "--progress", str(self.progress), "--deadline", str(self.deadline)],
            cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=open(self.tmp / f"w{self.index}.err", "a"),  # noqa: SIM115
            preexec_fn=self.cap)  # noqa: PLW1509 - the driver runs no threads

    def cap(self) -> None:
        """An address-space limit: a run that allocates past every budget meets a
        MemoryError (an `out-of-memory` failure, with its input) instead of the
        machine's OOM killer (a lost worker, or someone else's process)."""
        resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))

    def stalled(self) -> bool:
        mtime = self.progress.stat().st_mtime if self.progress.exists() else 0.0
        if mtime != self.last_mtime:
            self.last_mtime, self.last_change = mtime, time.monotonic()
        # one input may take its deadline and a retry at twice it (harness.run_one)
        return time.monotonic() - self.last_change > 3 * self.deadline + 90

    def stop(self) -> dict | None:
        """Kill the worker; the input it was on (from its progress file)."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        if not self.progress.exists():
            return None
        return json.loads(self.progress.read_text())

    def kill_and_restart(self, hangs: list[dict]) -> None:
        state = self.stop()
        assert state is not None  # stalled: it had started an input
        hangs.append({**state["input"], "failure": "hang",
                      "detail": "killed by the driver: no progress"})
        self.restart(state["done"])

    def restart(self, done: int) -> None:
        self.left -= done + 1  # the inputs after its last checkpoint are lost
        self.restarts += 1
        if self.left > 0:
            self.start()

    def ended(self, crashes: list[dict]) -> None:
        """The worker exited: done, or (no final tally) it died during an input."""
        assert self.proc is not None
        code, self.proc = self.proc.returncode, None
        result = self.results[-1]
        runs = json.loads(result.read_text())["runs"] if result.exists() else 0
        if code == 0 and runs >= self.left:
            return
        state = (json.loads(self.progress.read_text()) if self.progress.exists()
                 else {"done": runs, "input": {}})
        err = (self.tmp / f"w{self.index}.err").read_text()[-1500:]
        crashes.append({**state["input"], "failure": "crash",
                        "detail": f"worker exit {code}: {err}"})
        self.restart(state["done"])


def run(args: argparse.Namespace) -> dict:
    start = time.time()
    hangs: list[dict] = []
    crashes: list[dict] = []
    stopped = False
    with tempfile.TemporaryDirectory(prefix="gpusem-robust-driver-") as tmp:
        shares = [args.inputs // args.jobs + (j < args.inputs % args.jobs)
                  for j in range(args.jobs)]
        workers = [Worker(j, n, args.seed * 1000 + j, Path(tmp), args.deadline,
                          args.memory_gb) for j, n in enumerate(shares)]
        while any(w.proc is not None for w in workers):
            time.sleep(2)
            if args.time_limit and time.time() - start > args.time_limit:
                for w in workers:
                    if w.proc is not None:
                        w.stop()
                stopped = True
                break
            for w in workers:
                if w.proc is None:
                    continue
                if w.proc.poll() is not None:
                    w.ended(crashes)
                elif w.stalled():
                    w.kill_and_restart(hangs)
        tally = Tally()
        for w in workers:
            for result in w.results:
                if result.exists():
                    tally.merge(json.loads(result.read_text()))
        errors = {str(w.index): (Path(tmp) / f"w{w.index}.err").read_text()[-1500:]
                  for w in workers if (Path(tmp) / f"w{w.index}.err").exists()}
    tally.runs += len(hangs) + len(crashes)
    tally.failures["hang"] += len(hangs)
    tally.failures["crash"] += len(crashes)
    tally.examples.extend(hangs[:5] + crashes[:5])
    wall = time.time() - start
    return {
        "issue": 15,
        "commands": [" ".join(["python", "scripts/robust_campaign.py", *sys.argv[1:]])],
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=False,
                                 capture_output=True, text=True).stdout.strip(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "jobs": args.jobs, "seeds": [args.seed], "deadline_s": args.deadline,
        "memory_gb_per_worker": args.memory_gb,
        "stopped_at_time_limit": stopped,
        "wall_s": round(wall, 1), "inputs_per_s": round(tally.runs / wall, 2),
        **tally.as_dict(),
        "worker_stderr": {k: "\n".join(ln for ln in v.splitlines()
                                       if "HypothesisWarning" not in ln
                                       and "ensure_free_stackframes" not in ln
                                       and "unwrap_markers_from_group" not in ln)
                          for k, v in errors.items()},
    }


def merge(paths: list[Path]) -> dict:
    docs = [json.loads(p.read_text()) for p in paths]
    tally = Tally()
    for d in docs:
        tally.merge(d)
    wall = sum(d["wall_s"] for d in docs)
    return {**{k: docs[0][k] for k in ("issue", "commit", "machine", "jobs",
                                        "deadline_s")},
            "commands": [c for d in docs for c in d["commands"]],
            "seeds": [s for d in docs for s in d["seeds"]],
            "stopped_at_time_limit": any(d["stopped_at_time_limit"] for d in docs),
            "wall_s": round(wall, 1), "inputs_per_s": round(tally.runs / wall, 2),
            **tally.as_dict(),
            "worker_stderr": {k: v for d in docs for k, v in d["worker_stderr"].items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--deadline", type=float, default=60.0)
    ap.add_argument("--time-limit", type=float, default=0.0)
    ap.add_argument("--memory-gb", type=float, default=8.0,
                    help="address-space limit of each worker")
    ap.add_argument("--merge", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    doc = merge(args.merge) if args.merge else run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: doc[k] for k in ("runs", "wall_s", "inputs_per_s",
                                          "failures")}))
    sys.exit(1 if sum(doc["failures"].values()) else 0)


if __name__ == "__main__":
    main()
