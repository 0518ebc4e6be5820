"""The shrinker beside a campaign on this machine (issue 31.1): one spawned process
per shard, started at the shard's first new finding, that shrinks the shard's
findings one after another (`fuzz/shrink_jobs.py` says why and the interface).

The process loads its own target (its own backend worker: a CUDA context of its own
on the cuda backend) and writes each bundle in the campaign's out dir as it improves,
so a shrink stopped at the deadline leaves its last improvement. It is spawned, not
forked, for the reasons the local engine gives (`engines/local.py`), dies with the
shard, and ignores SIGINT (Ctrl-C goes to the whole group; the shard decides).

`finish(deadline)` closes the queue and waits for the outcomes until the deadline;
then the process is stopped (SIGTERM: its shrink stops at the next candidate; SIGKILL
after STOP_GRACE_S), and each job it did not finish is reported from its bundle as it
stands, marked `shrink_cut` in the bundle's metadata.

The process says when it begins each job (a `Begun` on the results queue): a job cut
at the deadline is reported as begun, with its shrinking time from then, only when it
did begin. Before, the first job left over was taken as the one begun, and its time
counted from the last outcome: a job whose predecessor came back in the last second
was reported begun (0.05 s) whether or not the process had taken it (CI, stop 39).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from queue import Empty
from typing import Any, Final, NamedTuple

from gpusem.compiler.backends.lifetime import (
    die_with_parent,
    from_main_thread,
    kill_tree,
)
from gpusem.fuzz.attribution import kept_on_cut
from gpusem.fuzz.bundle import BundleStore, read_bundle
from gpusem.fuzz.campaign import Campaign
from gpusem.fuzz.interrupts import install_signal_handlers
from gpusem.fuzz.shrink_jobs import ShrinkJob, ShrinkOutcome, job_finding
from gpusem.fuzz.summary import Finding
from gpusem.fuzz.targets import RUNTIME_TARGETS, internal_result, register_target

START: Final = "spawn"
STOP_GRACE_S = 0.3  # before the deadline: SIGTERM, then SIGKILL at the deadline
NICENESS = 10  # the shrinker yields the CPU to the fuzzing it runs beside


class Begun(NamedTuple):
    """The shrinker process took job `signature` at `at` (time.monotonic(): one clock
    for every process of the machine)."""

    signature: str
    at: float


def run_job(job: ShrinkJob, deadline: float,
            on_improve: Callable[[dict[str, Any], dict[str, str]], None] | None = None
            ) -> ShrinkOutcome:
    """Shrink `job` in this process by `deadline` (time.monotonic()); `on_improve`
    is told each state of its bundle as it is written (`Campaign.on_improve`)."""
    spec = {k: v for k, v in job.spec.items() if k in (
        "target_name", "backend", "prop", "budget_s", "seed", "shard", "out_dir",
        "round_size", "hunt_cap_s", "generation")}
    return Campaign(**spec, on_improve=on_improve).shrink_job(job, deadline)


class ProcessShrinker:
    """See the module docstring."""

    def __init__(self, target_name: str) -> None:
        self.target_name = target_name
        self.proc: Any = None
        self.jobs: Any = None
        self.results: Any = None
        self.sent: dict[str, ShrinkJob] = {}
        self.begun: dict[str, float] = {}  # when the process took each job

    def submit(self, job: ShrinkJob) -> None:
        if self.proc is None:
            ctx = mp.get_context(START)
            self.jobs, self.results = ctx.Queue(), ctx.Queue()
            parent = (os.getpid(), from_main_thread())
            proc = ctx.Process(target=_serve, name="gpusem-shrinker", args=(
                self.jobs, self.results, parent, self.target_name,
                RUNTIME_TARGETS.get(self.target_name)))
            # kept only once started: a start that raised (a script without a
            # __main__ guard, under spawn) is the error the caller sees, and `finish`
            # has no process to stop (it joined one never started: AssertionError)
            proc.start()
            self.proc = proc
        self.sent[job.signature] = job
        self.jobs.put(job)

    def finish(self, deadline: float) -> list[ShrinkOutcome]:
        if self.proc is None:
            return []
        self.jobs.put(None)
        outcomes: list[ShrinkOutcome] = []
        while len(outcomes) < len(self.sent):
            left = deadline - STOP_GRACE_S - time.monotonic()
            if left <= 0:
                break
            try:
                self._take(self.results.get(timeout=min(0.2, left)), outcomes)
            except Empty:
                if self.proc.exitcode is not None and self.results.empty():
                    break  # it died: its jobs are reported below from their bundles
        self._stop()
        while (late := _get_nowait(self.results)) is not None:
            self._take(late, outcomes)  # finished (or begun) in the grace
        done = {o.signature for o in outcomes}
        outcomes += [self._cut(job) for sig, job in self.sent.items() if sig not in done]
        return outcomes

    def _take(self, message: Any, outcomes: list[ShrinkOutcome]) -> None:
        if isinstance(message, Begun):
            self.begun[message.signature] = message.at
        else:
            outcomes.append(message)

    def _stop(self) -> None:
        """SIGTERM, a grace for the process to end its shrink, then SIGKILL to it
        and what it started (`kill_tree`: a candidate's g++ and cc1plus, its forked
        kernel runners). Before, the compiler of the candidate
        under way outlived the killed shrinker, orphaned, for seconds (a cold cache
        on a loaded machine: 4-7 s), holding the command's stdout, so a caller
        reading the output waited for it (a 20 s command's output ended 24.5-28 s
        in). The killed process is reaped by a thread, not waited for: it runs no
        more of its code once killed (each file of a bundle is written by rename:
        whole or not at all), but its exit runs at its niceness, so on a loaded machine the
        kernel took 0.15-0.3 s to finish it (five busy loops on two cores: the stop
        0.31-0.45 s, a 6 s campaign ending at 6.40-6.56 s; now 6.23-6.24)."""
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(STOP_GRACE_S / 2)
        if self.proc.is_alive():
            kill_tree(self.proc.pid)
            threading.Thread(target=self.proc.join, name="gpusem-shrinker-reaper",
                             daemon=True).start()
        else:
            self.proc.join()
        # what is left in the queues has no reader now: this process must not wait
        # at its exit for their feeder threads to hand it over
        for queue in (self.jobs, self.results):
            queue.cancel_join_thread()

    def _cut(self, job: ShrinkJob) -> ShrinkOutcome:
        """A job stopped at the deadline (the process said it began it) or never
        begun (shrink_s 0): its bundle as the shrinker left it."""
        res = job.res
        finding = job_finding(job)  # with the attribution it was handed over with
        if job.signature in self.begun:
            finding.shrink_s = time.monotonic() - self.begun[job.signature]
        try:
            b = read_bundle(job.bundle)
            # the attribution of the program as found, where the bundle holds a
            # partly shrunk one, and saying so (`attribution.kept_on_cut`)
            meta, files = kept_on_cut(dict(
                b.meta, state="done", shrink_cut=True,
                shrink_s=round(finding.shrink_s, 2)), b.files, res.files)
            BundleStore(Path(job.bundle).parent).update(Path(job.bundle), meta, files)
            finding.size = int(meta.get("size", finding.size) or finding.size)
            finding.detail = str(meta.get("detail", finding.detail))
            finding.shrunk = bool(meta["shrunk"])
        except (OSError, ValueError, KeyError):
            pass  # the bundle as first written stands
        return ShrinkOutcome(res.signature, [finding], cut=True)


def _get_nowait(queue: Any) -> Any:
    try:
        return queue.get(timeout=0.05)
    except Empty:
        return None


def _serve(jobs: Any, results: Any, parent: tuple[int, bool], target_name: str,
           factory: Any) -> None:
    """The shrinker process: jobs in, outcomes out, until the None job."""
    die_with_parent(*parent)
    os.nice(NICENESS)  # where cores are short, the campaign's own checks come first
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install_signal_handlers()  # SIGTERM: the shrink stops at its next candidate
    if factory is not None:  # a target registered at run time in the campaign
        register_target(target_name, factory)
    while (job := jobs.get()) is not None:
        results.put(Begun(job.signature, time.monotonic()))
        try:
            out = run_job(job, job.deadline)
        except BaseException as err:  # reported with its finding; a signal re-raised
            out = _crashed(job, err)
            results.put(out)
            if not isinstance(err, Exception):
                raise
            continue
        results.put(out)


def _crashed(job: ShrinkJob, err: BaseException) -> ShrinkOutcome:
    """The job's finding as first seen, and the shrinker's error as an internal
    finding beside it (bundled by the campaign like any other)."""
    finding = job_finding(job)
    bad = internal_result(err, stage="shrink")
    meta = {"target": finding.target, "backend": job.spec.get("backend", "cpu"),
            "property": finding.prop, "signature": bad.signature, "kind": bad.kind,
            "detail": bad.detail, "size": 0, "state": "done", "shrunk": False}
    path, _ = BundleStore(Path(job.bundle).parent).claim(meta, bad.files)
    error = Finding(bad.signature, bad.kind, bad.detail, 0, str(path), False,
                    job.first_seen, prop=finding.prop, target=finding.target)
    return ShrinkOutcome(job.signature, [finding, error])


__all__ = ["Begun", "ProcessShrinker", "run_job"]
