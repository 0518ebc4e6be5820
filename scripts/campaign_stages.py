"""`profile_stages.py --campaign` (issue 31.3): the CPU a program costs in the
campaign's own path, by stage, beside profile_stages' hand-run stages.

profile_stages runs a round's stages by hand; a campaign runs them through
`Campaign._round` and the target (`BundlTarget.prefetch_until`): the same stages, and
what the hand-run profile leaves out: the full reference that confirms every verdict
other than "agree" (`confirm`: a compile failure, a kernel that failed, a
disagreement) and the audit's (`audit`: every AUDIT_EVERY-th program, both paths),
and the campaign's own machinery (the loop, the verdict cache, counting, progress,
the bundle store; `campaign`: all its CPU less the stages'). This runs one
`Campaign` of `--rounds` rounds of `--round-size` (shard 0/1, so round r is
profile_stages' round r of the same seed) in this process, after an untimed warm-up
campaign of seed + 1, with each stage's function wrapped by an exclusive CPU timer
(a stage's time is its own less the stages it calls; the wrapping is this script's,
the product is not changed):

  generate   campaign.generate_round       reference  bundl target's fast_reference
  confirm    BundlTarget._full_if_fast     audit      BundlTarget._full_reference
  compile    compile_property.compile_program
  jobs       compile_property._jobs (a program's launch jobs, one per harness seed)
  build      the backend's build (g++)     launch     the backend's run, less build
  compare    compile_property.compare      campaign   the rest

CPU: this process (nanosecond clock) and its reaped children (g++); build and
launch add the live ones
(the harness worker; the CUDA worker, which runs NVRTC). The cpu and cuda backends,
not the NVRTC stand-in: there every launch fails, so every compiled program would be
confirmed, as no GPU campaign does.
"""

from __future__ import annotations

import functools
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

STAGES = ("generate", "reference", "confirm", "audit", "compile", "jobs", "build",
          "launch", "compare", "campaign")


class ExclusiveClock:
    """CPU seconds per stage, each stage's own: a stage's nested stages are
    subtracted from it. `cpu(live)` reads the CPU (profile_stages.tree_cpu)."""

    def __init__(self, cpu: Callable[[bool], float]) -> None:
        self.cpu, self.spent, self.calls = cpu, Counter[str](), Counter[str]()
        self._stack: list[list[Any]] = []  # [label, live, start, nested seconds]

    def wrap(self, owner: Any, name: str, label: str | Callable[[], str],
             live: bool = False) -> None:
        """`owner.name` (a module's function or a class's method) timed as `label`
        (or the label a callable gives at each call)."""
        f = getattr(owner, name)

        @functools.wraps(f)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stage = label() if callable(label) else label
            self._stack.append([stage, live, self.cpu(live), 0.0])
            try:
                return f(*args, **kwargs)
            finally:
                stage, is_live, start, nested = self._stack.pop()
                took = self.cpu(is_live) - start
                self.spent[stage] += took - nested
                if not self._stack or self._stack[-1][0] != stage:
                    self.calls[stage] += 1  # a stage's own nested call is not another
                if self._stack:
                    self._stack[-1][3] += took

        setattr(owner, name, timed)

    def inside(self, stage: str) -> bool:
        return any(frame[0] == stage for frame in self._stack)


def process_cpu(live_children: Callable[[], float]) -> Callable[[bool], float]:
    """CPU seconds of this process (`time.process_time`: nanoseconds, where os.times
    counts 10 ms ticks, coarser than most single calls timed here) and its reaped
    children, and with `live` its live ones (`live_children`, from /proc)."""
    def cpu(live: bool) -> float:
        t = os.times()
        own = time.process_time() + t.children_user + t.children_system
        return own + live_children() if live else own

    return cpu


def profile_campaign(backend_name: str, rounds: int, round_size: int, seed: int,
                     live_children: Callable[[], float]) -> dict:
    """One campaign of `rounds` rounds, timed by stage (see the module docstring)."""
    from gpusem.fuzz import campaign as campaign_module
    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.fuzz.bundl import target as bundl_target
    from gpusem.fuzz.campaign import Campaign

    if backend_name not in ("cpu", "cuda"):
        raise SystemExit("--campaign: the cpu or cuda backend (campaign_stages.py)")
    cpu = process_cpu(live_children)
    clock = ExclusiveClock(cpu)
    backend = type(cp.shared_backend(backend_name))
    clock.wrap(campaign_module, "generate_round", "generate")
    clock.wrap(bundl_target, "fast_reference", "reference")
    clock.wrap(bundl_target.BundlTarget, "_full_if_fast", "confirm")
    clock.wrap(bundl_target.BundlTarget, "_full_reference",
               lambda: "confirm" if clock.inside("confirm") else "audit")
    clock.wrap(cp, "compile_program", "compile")
    clock.wrap(cp, "compare", "compare")
    clock.wrap(cp, "_jobs", "jobs")
    # g++ into one library (cpu); NVRTC into one module, then loaded (cuda)
    clock.wrap(backend, "build" if hasattr(backend, "build") else "_ensure_built",
               "build", live=True)
    clock.wrap(backend, "run", "launch", live=True)

    def campaign(at: int, n: int, out: str) -> Any:
        return Campaign(target_name="bundl", backend=backend_name, prop="compile",
                        seed=at, out_dir=out, round_size=round_size, max_programs=n,
                        budget_s=1e9).run()

    with tempfile.TemporaryDirectory(prefix="gpusem-campaign-stages-") as out:
        campaign(seed + 1, 10, os.path.join(out, "warm"))  # imports, worker, pch
        clock.spent.clear()
        clock.calls.clear()
        before = cpu(True)
        summary = campaign(seed, rounds * round_size, os.path.join(out, "timed"))
        total = cpu(True) - before
    clock.spent["campaign"] = total - sum(clock.spent.values())
    n = max(1, summary.programs)
    stages = {s: round(1000 * clock.spent[s] / n, 3) for s in STAGES}
    hand_run = ("generate", "reference", "compile", "jobs", "build", "launch",
                "compare")
    return {"mode": "campaign", "programs": summary.programs, "rounds": rounds,
            "round_size": round_size, "seed": seed, "backend": backend_name,
            "property": "compile", "cpu_ms_per_program": stages,
            "campaign_cpu_ms_per_program": round(1000 * total / n, 3),
            "hand_run_stages_cpu_ms_per_program":
                round(sum(stages[s] for s in hand_run), 3),
            "beyond_stages_cpu_ms_per_program":
                round(sum(stages[s] for s in ("confirm", "audit", "campaign")), 3),
            "calls": dict(clock.calls),
            "outcomes": summary.outcomes.get("compile", {}),
            "not_compared": summary.not_compared.get("compile", {}),
            "findings": sorted(f.signature for f in summary.findings),
            "cores": os.cpu_count(),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


def compare_campaigns(runs: dict[str, list[dict]], commits: dict[str, str]) -> dict:
    """Each tree's runs summed: CPU ms per program per stage over all its programs,
    and its verdicts (outcomes, reasons not compared) added up."""
    def weighted(rs: list[dict], key: str, stage: str | None = None) -> float:
        """A per-program figure over all of `rs`' programs."""
        return round(sum((r[key][stage] if stage else r[key]) * r["programs"]
                         for r in rs) / max(1, sum(r["programs"] for r in rs)), 3)

    trees = []
    for tree, rs in runs.items():
        programs = sum(r["programs"] for r in rs)
        per = functools.partial(weighted, rs)
        trees.append({
            "tree": tree, "commit": commits[tree], "programs": programs,
            "cpu_ms_per_program": {s: per("cpu_ms_per_program", s) for s in STAGES},
            **{k: per(k) for k in ("campaign_cpu_ms_per_program",
                                   "hand_run_stages_cpu_ms_per_program",
                                   "beyond_stages_cpu_ms_per_program")},
            "outcomes": dict(sum((Counter(r["outcomes"]) for r in rs), Counter())),
            "not_compared": dict(sum((Counter(r["not_compared"]) for r in rs),
                                     Counter())),
            "findings": sorted({f for r in rs for f in r["findings"]}),
            "runs": rs})
    return {"mode": "campaign", "trees": trees}


def campaign_table(result: dict) -> str:
    trees = result["trees"]
    out = [f"{'CPU ms / program':18}" + "".join(f"{t['tree'][-22:]:>24}" for t in trees)]
    for s in STAGES:
        out.append(f"{s:18}" + "".join(f"{t['cpu_ms_per_program'][s]:>24.2f}"
                                       for t in trees))
    for key, label in (("campaign_cpu_ms_per_program", "campaign total"),
                       ("hand_run_stages_cpu_ms_per_program", "hand-run stages"),
                       ("beyond_stages_cpu_ms_per_program", "beyond them")):
        out.append(f"{label:18}" + "".join(f"{t[key]:>24.2f}" for t in trees))
    out.append(f"{'programs':18}" + "".join(f"{t['programs']:>24}" for t in trees))
    for key in ("outcomes", "not_compared"):
        out.append(f"{key:18}" + "".join(
            f"{' '.join(f'{k}={v}' for k, v in sorted(t[key].items()))[-23:]:>24}"
            for t in trees))
    return "\n".join(out)
