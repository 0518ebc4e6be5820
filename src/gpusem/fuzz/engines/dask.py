"""The Dask engine (issue 19): a campaign's shards as Dask tasks, on whatever cluster
the user has (a laptop, one 8-GPU host, SLURM or PBS through dask-jobqueue,
Kubernetes through dask-kubernetes, plain SSH).

Each shard the client hands over (`fuzz/engines/base.py`) is cut into *pieces* of a
few rounds (`fuzz/engines/pieces.py`: a seed range and a round budget), each one Dask
task that declares its resources: `GPU: 1` for the cuda backend, `CPU: 1` for the
others. A worker is one process (one thread) that holds such a resource: for the cuda
backend a process pinned to one GPU by its own CUDA_VISIBLE_DEVICES, which owns one
CUDA context there. One GPU needs several of them, one per CPU core it is given,
because a piece is Python work (generation, the interpreter, compilation) between its
GPU launches: `--jobs J` starts J workers per GPU, each with `GPU=1`. The engine keeps
two pieces per worker in flight and submits the next as one finishes, so fast and slow
workers balance; with a time budget it stops submitting when the budget is spent and
waits for the pieces under way (a few seconds each), with `--max-programs` it submits
exactly the rounds that hold those programs.

Results stream back as pieces finish (`as_completed`); the client claims each piece's
bundles in the campaign's store (one folder per signature, whichever piece met it
first; later meetings are sightings) and appends the piece to the record of finished
pieces, which `--resume` reads. A piece does not shrink what it finds (issue 31.1:
a worker shrinking for a minute held back every piece that met the same bug before
the client knew it): each new finding it meets is published at once (a FOUND
event, `handover.py`), claimed by the client and sent as a shrink task of its own
(`pieces.shrink_remote`) to the local cluster's shrink worker (SHRINK=1) while one is
free, else ahead of the pieces queued; it ends by the campaign's shrink deadline
(`fuzz/shrink_jobs.shrink_end_s`); the shrunk bundle then replaces the first one,
and each better bundle it writes on the way is published (an IMPROVED event). A
worker lost mid-piece (killed, out of memory, its machine gone) is noticed by the
scheduler, which runs the piece again on another worker (up to
distributed.scheduler.allowed-failures times: ALLOWED_FAILURES on the local cluster):
a piece is a pure function of its seeds, so the retry checks the same programs and
meets the same findings, and the store writes nothing twice. A piece that comes back
KilledWorker after those retries and had begun on the worker that died (its STARTED
event) is an internal finding at once (`pieces.worker_deaths`: its bundle names the
piece's rounds), and the campaign goes on; Dask blames every piece on a dying worker,
those queued behind the culprit too, so one that had not begun is submitted once
more, on its own, while the budget lasts (`DaskEngine._killed`). Every piece stops at
the campaign's budget (`Piece.until`), wherever it runs, and the client waits for
nothing past the budget + SHRINK_TAIL + HAND_BACK (at most 1 s), nor past the
budget + 1 s while no shrink task is out (`DaskEngine._cut`): a shrink still
running then is reported with its best bundle so far, marked `shrink_cut`; a piece
begun within the budget and not back is reported cut (`Summary.cut`), its programs
not counted. On Ctrl-C or SIGTERM the pieces that come back within DRAIN_S are
counted before the shards report. The budget runs from the command's start (the
driver's `started_at`: the process's, `fuzz/clock.py`), so the cluster's start is
inside it, and the local cluster stops within about a second
(`dask_cluster.stop_workers`), so its stop is not far outside it.

Without `--scheduler ADDR` the engine starts a local cluster of this machine (the
GPUs it finds, `--gpus` to choose; `--jobs` workers per GPU, or `--jobs` workers in all
for the cpu backend). On a cluster, start the workers with their resources and with
daemon processes off (a piece starts its backend's worker processes):

    dask scheduler
    CUDA_VISIBLE_DEVICES=0 DASK_DISTRIBUTED__WORKER__DAEMON=False \\
        dask worker tcp://HOST:8786 --nworkers 16 --nthreads 1 --resources GPU=1
    gpusem fuzz --engine dask --scheduler tcp://HOST:8786 --backend cuda ...

Dask is an optional extra (`pip install 'gpusem[dask]'`); docs/clusters.md shows
SLURM, PBS and Kubernetes set-ups.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.bundle import BundleStore
from gpusem.fuzz.engines import dask_start
from gpusem.fuzz.engines.base import Engine, Progress, ShardEvent, ShardTask
from gpusem.fuzz.engines.dask_cluster import (
    distributed_module,
    local_cluster,
    stop_workers,
)
from gpusem.fuzz.engines.handover import FOUND, Inbox
from gpusem.fuzz.engines.pieces import (
    ROUNDS_PER_PIECE,
    Piece,
    PieceResult,
    absorb,
    absorb_shrink,
    carried_env,
    finished,
    known_entry,
    known_map,
    record,
    recorded_findings,
    run_piece,
    shrink_remote,
    window_at,
    windows,
    worker_deaths,
)
from gpusem.fuzz.interrupts import at_once
from gpusem.fuzz.shrink_jobs import SHRINK_TAIL, job_finding
from gpusem.fuzz.summary import Summary
from gpusem.fuzz.targets import (
    RUNTIME_TARGETS,
    preflight_target,
    register_target,
)

IN_FLIGHT_PER_WORKER = 2
DRAIN_S = 15.0  # after Ctrl-C/SIGTERM: how long pieces under way get to come back
# Past the shrink deadline (the budget + SHRINK_TAIL), the share of the budget the
# client still waits for results, at most HAND_BACK_MAX_S: then it stops waiting
# (`DaskEngine._cut`), so a campaign ends within its budget + 7% and at most 4% + 1 s
# whatever its workers do (issue 31.1). A result's way back is a message, not work
# that grows with the budget: 3% of 90 s waited 2.7 s for a piece that never came
# (stop 31, H200 x2: report 96.4 s). While no shrink task is out the pieces alone
# are waited for, as long as that (7%), at most HAND_BACK_MAX_S (`pieces_stop`):
# their last batch check (one g++ build, ~0.7 s) and the way back.
HAND_BACK = 0.03
HAND_BACK_MAX_S = 1.0
# events the tasks log on the scheduler (`Worker.log_event`): a piece begun on a
# worker (which piece a dead worker was running), a shrink's best bundle so far
STARTED = "gpusem-piece-started"
IMPROVED = "gpusem-shrink-improved"
POLL_S = 0.05  # how often the client looks for results while it waits
CONNECT_TIMEOUT_S = 30.0
# a scheduler of the user's answers at once when it is there; one that does not is a
# wrong address or a cluster not started, said in one line after this many seconds
SCHEDULER_TIMEOUT_S = 10.0


def _refused(address: str) -> str | None:
    """Why a `tcp://host:port` scheduler address refuses a connection outright (None:
    it accepts, or the address is of another kind, or no answer yet). Dask's client
    retries a refused port until its timeout; a refusal is final (nothing listens
    there), so it is said at once instead of after SCHEDULER_TIMEOUT_S."""
    if not address.startswith("tcp://"):
        return None
    host, _, port = address[len("tcp://"):].rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)),
                                      timeout=SCHEDULER_TIMEOUT_S):
            return None
    except ConnectionRefusedError:
        return "connection refused: nothing listens on that port"
    except OSError:  # a timeout, an unknown host: left to the client's own answer
        return None


@dataclass
class _Shard:
    """The client's view of one shard: what is submitted, what came back."""

    task: ShardTask
    plan: list[tuple[tuple[int, int], int | None]] | None  # fixed pieces, or None
    done: set[tuple[int, int]]
    summary: Summary
    deadline: float
    next_index: int = 0
    in_flight: int = 0  # pieces and shrink tasks under way
    # pieces to submit again: Dask blames every piece on a worker that dies, those
    # queued behind the one that killed it too; each gets one more submission
    again: list[Piece] = field(default_factory=list)
    resubmitted: set[tuple[int, int]] = field(default_factory=set)
    # the one resubmitted piece under way: resubmissions go one at a time, or the
    # piece that kills its workers can take an innocent one down with it a second
    # time (seen once in a loaded suite run: 200 programs of 225 came back)
    again_running: tuple[int, int] | None = None
    started: float = field(default_factory=time.monotonic)
    budget_s: float = 60.0

    @property
    def shrink_end(self) -> float:
        """time.monotonic() by which this shard's shrink tasks end (`shrink_end_s`)."""
        return self.deadline + SHRINK_TAIL * self.budget_s

    @property
    def hard_stop(self) -> float:
        """time.monotonic() after which the client waits for nothing of this shard."""
        return self.shrink_end + min(HAND_BACK * self.budget_s, HAND_BACK_MAX_S)

    @property
    def pieces_stop(self) -> float:
        """time.monotonic() after which the client waits for no piece of this shard
        while no shrink task is out: the pieces stop at the budget's end, so the
        shrink tail is not theirs to wait for (a piece far past the budget kept a
        90 s campaign waiting until 96.3 s with nothing left to shrink: stop 31)."""
        return self.deadline + min((SHRINK_TAIL + HAND_BACK) * self.budget_s,
                                   HAND_BACK_MAX_S)

    def _upcoming(self, per_piece: int) -> tuple[tuple[int, int], int | None] | None:
        """The next window not finished before (a resume skips those) and its program
        limit; None when none is left (the plan is exhausted or the budget spent)."""
        while True:
            if self.plan is not None:
                if self.next_index >= len(self.plan):
                    return None
                window, limit = self.plan[self.next_index]
            else:
                if time.monotonic() >= self.deadline:
                    return None
                window, limit = window_at(self.next_index, per_piece), None
            if not self._covered(window):
                return window, limit
            self.next_index += 1

    def _covered(self, window: tuple[int, int]) -> bool:
        """Every round of `window` is in a finished window (a campaign resumed with
        pieces of another size: those of before stop 28 had two rounds)."""
        if window in self.done:
            return True
        rounds = {k for a, b in self.done for k in range(a, b)}
        return all(k in rounds for k in range(*window))

    def next_piece(self, per_piece: int) -> Piece | None:
        if self.again and time.monotonic() >= self.deadline:
            # pieces that never began (`DaskEngine._killed`): past the budget there
            # is nothing of theirs to check (run now, each would end at once, empty)
            self.again.clear()
        if self.again and self.again_running is None:  # once more, one at a time
            piece = self.again.pop()
            self.again_running = piece.window
            return piece
        upcoming = self._upcoming(per_piece)
        if upcoming is None:
            return None
        self.next_index += 1
        now = time.time()
        until = now + (self.deadline - time.monotonic())
        return Piece(self.task.spec, self.task.shard, *upcoming, env=carried_env(),
                     until=until,
                     campaign_start=now - (time.monotonic() - self.started))

    def finished(self, per_piece: int) -> bool:
        return (self.in_flight == 0 and not self.again
                and self._upcoming(per_piece) is None)


class DaskEngine(Engine):
    """See the module docstring. `scheduler`: an address (tcp://...) or None for a
    local cluster; `jobs`: workers per GPU (cuda) or in all; `gpus`: "all", a count,
    or ids ("0,1"); `rounds_per_piece`: a piece's rounds."""

    name = "dask"

    def __init__(self, backend: str = "cpu", scheduler: str | None = None,
                 jobs: int = 1, gpus: str | None = None,
                 rounds_per_piece: int = ROUNDS_PER_PIECE) -> None:
        self.backend, self.scheduler, self.jobs = backend, scheduler, max(1, jobs)
        self.gpus, self.per_piece = gpus, max(1, rounds_per_piece)
        self.resource = {"GPU": 1} if backend == "cuda" else {"CPU": 1}
        self.client: Any = None
        self.cluster: Any = None
        self.workers_started = 0
        self.piece_of: dict[str, Piece] = {}  # a piece future's key -> its piece
        self.shard_of: dict[str, _Shard] = {}  # a piece future's key -> its shard
        # a piece's key -> {signature: bundle} of the findings the client claimed from
        # its FOUND events (`handover.py`), until its result is taken
        self.handed: dict[str, dict[str, str]] = {}
        self.taken: set[str] = set()  # keys of the pieces whose results were taken
        self.own_shrinks: set[Any] = set()  # shrink tasks on a SHRINK worker
        # time.time() when the campaign (this property) began, set by the driver: the
        # budget runs from then, so the cluster's start is inside it (stop 31: 32
        # workers on an H200 x2 took ~10 s to start, and a --budget 90s campaign
        # ended 109.5 s after its command while its report said 96.4 s)
        self.started_at: float | None = None
        self.targets: tuple[str, ...] = ()  # the campaign's: its workers preload them

    # ------------------------------------------------------------------ cluster

    def connect(self) -> Any:
        """The Dask client (a local cluster started on first use)."""
        if self.client is not None:
            return self.client
        distributed = distributed_module()
        if self.scheduler:
            self.client = self._connect_to(distributed)
        else:
            self.cluster = self._local_cluster(distributed)
            self.client = distributed.Client(self.cluster, timeout=CONNECT_TIMEOUT_S)
        if not self._capacity():
            name = next(iter(self.resource))
            self.close()
            raise BadInput(f"no worker of the dask cluster declares the resource {name} "
                           f"(start workers with --resources {name}=1)")
        return self.client

    def _connect_to(self, distributed: Any) -> Any:
        """A client of the user's scheduler. One that does not answer within
        SCHEDULER_TIMEOUT_S is bad input (a wrong address, a cluster not started:
        exit 2, one line), not an internal error of gpusem after 30 s (issue 32.12)."""
        refused = _refused(self.scheduler or "")
        if refused is not None:
            raise BadInput(f"dask scheduler unreachable: {self.scheduler} "
                           f"({refused})")
        try:
            return distributed.Client(self.scheduler, timeout=SCHEDULER_TIMEOUT_S)
        except (OSError, ValueError) as err:  # TimeoutError is an OSError
            why = " ".join(str(err).split())[:200] or type(err).__name__
            raise BadInput(f"dask scheduler unreachable: {self.scheduler} (no answer "
                           f"within {SCHEDULER_TIMEOUT_S:g} s: {why})") from None

    def _local_cluster(self, distributed: Any) -> Any:
        cluster = local_cluster(self.backend, self.jobs, self.gpus, self.targets)
        self.workers_started = len(cluster.worker_spec)
        return cluster

    def _capacity(self) -> int:
        """Workers that hold the pieces' resource: all those this engine started, or
        on a cluster of the user's, those connected a moment after the first one is
        (waiting at most CONNECT_TIMEOUT_S for any)."""
        name = next(iter(self.resource))
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        settle: float | None = None
        while True:
            info = self.client.scheduler_info(n_workers=-1)["workers"]
            n = sum(1 for w in info.values() if w.get("resources", {}).get(name, 0) >= 1)
            now = time.monotonic()
            if self.workers_started:  # all of them: the shrink worker too
                if len(info) >= self.workers_started or now > deadline:
                    return n
            elif info:
                settle = settle if settle is not None else now + 1.0
                if now >= settle:
                    return n
            elif now > deadline:
                return 0
            time.sleep(0.2)

    def close(self) -> None:
        if self.cluster is not None:  # ours: its workers stopped at once (why: there)
            stop_workers(self.cluster)
        for thing in (self.client, self.cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # noqa: BLE001, S110 - closing: nothing to report to
                    pass
        self.client = self.cluster = None

    # ------------------------------------------------------------------ running

    def run(self, tasks: Sequence[ShardTask],
            on_progress: Progress | None = None) -> Iterator[ShardEvent]:
        distributed = distributed_module()
        self.targets = tuple(sorted({t.spec["target_name"] for t in tasks}))
        client = self.connect()
        self._preflight(client, tasks)
        shards = [self._shard(t) for t in tasks]
        stores = {t.spec["out_dir"]: BundleStore(t.spec["out_dir"]) for t in tasks}
        known = {id(s): known_map(stores[s.task.spec["out_dir"]], s.task.spec)
                 for s in shards}
        capacity = max(1, self._capacity()) * IN_FLIGHT_PER_WORKER
        futures: dict[Any, _Shard] = {}
        pending = distributed.as_completed()

        def fill() -> None:
            while len(futures) < capacity:
                submitted = False
                for s in shards:  # round-robin over the shards
                    if len(futures) >= capacity:
                        break
                    piece = s.next_piece(self.per_piece)
                    if piece is None:
                        continue
                    fut = client.submit(
                        piece_task, piece, list(known[id(s)].values()),
                        RUNTIME_TARGETS.get(piece.spec["target_name"]),
                        resources=dict(self.resource), pure=False,
                        key=f"gpusem-piece-{_slug(piece)}-{time.monotonic_ns()}")
                    futures[fut] = s
                    self.piece_of[fut.key], self.shard_of[fut.key] = piece, s
                    s.in_flight += 1
                    pending.add(fut)
                    submitted = True
                if not submitted:
                    return

        reported: set[int] = set()
        # shrink task -> (when it was submitted, the signature it shrinks)
        shrinks: dict[Any, tuple[float, str]] = {}

        def stop_at() -> float:  # the shrink tail only while a shrink is out
            return max((s.hard_stop if shrinks else s.pieces_stop for s in shards),
                       default=time.monotonic())

        own = self._shrink_workers()  # workers that only shrink (`local_cluster`)

        def shrink(s: _Shard, job: tuple[Any, ...]) -> None:
            """A shrink task: on a SHRINK worker while one is free (it starts at
            once), else before the pieces queued on the fuzzing workers."""
            mine = len(self.own_shrinks & set(shrinks)) < own
            fut = client.submit(
                shrink_task, *job, time.time(), pure=False, priority=1,
                resources={"SHRINK": 1} if mine else dict(self.resource),
                key=f"gpusem-shrink-{time.monotonic_ns()}")
            futures[fut] = s
            shrinks[fut] = (time.monotonic(), job[0].signature)
            if mine:
                self.own_shrinks.add(fut)
            s.in_flight += 1
            pending.add(fut)

        def early() -> None:  # the findings pieces met, as they met them
            for key, job, meta, files in inbox.take():
                s = self.shard_of.get(key)
                if s is not None and key not in self.taken:
                    for args in self._hand_over(s, key, job, meta, files, stores,
                                                known[id(s)]):
                        shrink(s, args)

        inbox = Inbox(client)
        try:
            fill()
            results = iter(pending)
            while True:
                with at_once():  # waiting on the cluster: a signal stops the wait
                    fut = _next_by(pending, results, stop_at, early)
                if fut is None:
                    if not pending.is_empty():  # the campaign's end came first
                        self._cut(futures, shrinks, stores)
                    break
                s = futures.pop(fut)
                s.in_flight -= 1
                done = self.piece_of.get(fut.key)
                if done is not None and done.window == s.again_running:
                    s.again_running = None  # the next resubmission may go
                store = stores[s.task.spec["out_dir"]]
                if fut in shrinks:
                    shrinks.pop(fut)
                    self.own_shrinks.discard(fut)
                    self._take_shrink(fut, s, store)
                else:
                    early()  # its events first: what they handed over is not sent again
                    for job in self._take(fut, s, store, known[id(s)]):
                        shrink(s, job)
                if on_progress is not None:
                    on_progress(s.task, s.summary)
                fill()
                if s.finished(self.per_piece) and id(s) not in reported:
                    reported.add(id(s))
                    yield self._event(s)
            for s in shards:  # the rest (nothing left to run: all done before a resume)
                if id(s) not in reported:
                    yield self._event(s)
        except KeyboardInterrupt:  # Ctrl-C / SIGTERM: report what was checked
            self._drain(distributed, futures, shrinks, stores, known)
            for s in shards:
                if id(s) not in reported:
                    yield self._event(s)
            raise
        finally:
            inbox.close()
            for fut in list(futures):
                fut.cancel()

    def _preflight(self, client: Any, tasks: Sequence[ShardTask]) -> None:
        """The campaign's preflight (`driver.ready`) on the workers: a worker
        without z3 or CuPy is BadInput (one line naming it) before any piece runs,
        not a stream of internal findings; one worker of each kind is asked."""
        asked = {(t.spec["target_name"], t.spec["backend"], t.spec["prop"]) for t in tasks}
        for name, backend, prop in sorted(asked):
            answers = dask_start.ask_once_per_kind(
                client, worker_preflight, name, backend, prop, RUNTIME_TARGETS.get(name))
            for worker, why in sorted(answers.items()):
                if why:
                    self.close()
                    raise BadInput(f"{why} (on dask worker {worker})")

    def _cut(self, futures: dict[Any, _Shard], shrinks: dict[Any, tuple[float, str]],
             stores: dict[str, BundleStore]) -> None:
        """The campaign's end (`_Shard.hard_stop`, or `pieces_stop` where no shrink
        task was out) with results still out: a shrink task's finding keeps the
        best bundle the task published by then (or the one its piece wrote), marked
        `shrink_cut`; a piece that began before the budget's
        end and is not back (hung, or a last batch check far past the budget under
        load) is reported cut (`Summary.cut`), naming its programs, which are not
        counted; one that had not begun by then had nothing left to check (under
        load, a restarted worker takes seconds to begin one). The caller cancels
        them all (a hung piece's worker is stopped with the local cluster)."""
        events = self._all_events()  # one call: each costs ~0.1 s under load
        best = {str(m.get("key")): m for m in events.get(IMPROVED, [])}  # the last
        began = {str(m.get("key")): float(m.get("at", 0.0))
                 for m in events.get(STARTED, [])}
        for fut, s in list(futures.items()):
            store = stores[s.task.spec["out_dir"]]
            if fut in shrinks:
                since, signature = shrinks[fut]
                _cut_shrink(s, store, signature, best.get(str(fut.key)),
                            time.monotonic() - since)
                continue
            piece = self.piece_of.get(fut.key)
            at = began.get(str(fut.key))
            if piece is not None and (at is None or at >= (piece.until or at + 1)):
                continue  # not begun within the budget: nothing of it was checked
            label = piece.label if piece is not None else str(fut.key)
            s.summary.cut.append(
                f"{label} of seed {s.task.spec.get('seed')}, begun within the "
                f"budget, not back by its end + {time.monotonic() - s.deadline:.1f} s "
                f"(its programs are not counted)")
            # it was fuzzing until now, as far as the client knows
            s.summary.fuzz_s = max(s.summary.fuzz_s, time.monotonic() - s.started)

    def _killed(self, fut: Any, err: BaseException, s: _Shard,
                store: BundleStore) -> None:
        """A piece that came back KilledWorker. Dask blames every piece on a dying
        worker, those queued behind the one that killed it too: a piece that had
        begun on that worker (its STARTED event) is the one, reported at once as an
        internal finding with its programs (issue 31.5: the client used to submit
        it once more, killing two more workers, and past the budget that run ended
        at once, empty, so the campaign reported nothing of it); one that had not
        begun is submitted once more, before the budget's end."""
        piece = self.piece_of[fut.key]
        where = getattr(getattr(err, "last_worker", None), "address", None)
        began = [m for m in self._events(STARTED) if m.get("key") == str(fut.key)]
        ran = any(where is None or m.get("worker") == where for m in began)
        if (ran or piece.window in s.resubmitted
                or time.monotonic() >= s.deadline):
            s.summary.merge(worker_deaths(piece, err, store))
        else:
            s.resubmitted.add(piece.window)
            s.again.append(piece)

    def _all_events(self) -> dict[str, list[dict[str, Any]]]:
        """The messages the tasks logged, by topic, oldest first."""
        try:
            events = self.client.get_events()
        except Exception:  # noqa: BLE001 - a lost scheduler: nothing known
            return {}
        return {topic: [m for _, m in got if isinstance(m, dict)]
                for topic, got in events.items() if topic in (STARTED, IMPROVED)}

    def _events(self, topic: str) -> list[dict[str, Any]]:
        """The messages the tasks logged under `topic`, oldest first."""
        try:
            events = self.client.get_events(topic)
        except Exception:  # noqa: BLE001 - a lost scheduler: nothing known
            return []
        return [m for _, m in events if isinstance(m, dict)]

    def _drain(self, distributed: Any, futures: dict[Any, _Shard],
               shrinks: dict[Any, tuple[float, str]],
               stores: dict[str, BundleStore], known: dict[int, Any]) -> None:
        """After a signal: the pieces under way that end within DRAIN_S are taken
        (their programs were checked: a stopped campaign reports them); the others
        are cancelled by the caller."""
        pieces = [f for f in futures if f not in shrinks]
        try:
            done = distributed.wait(pieces, timeout=DRAIN_S).done
        except Exception:  # noqa: BLE001 - distributed's TimeoutError, a lost client
            done = {f for f in pieces if f.done()}
        for fut in done:
            s = futures.pop(fut)
            s.in_flight -= 1
            self._take(fut, s, stores[s.task.spec["out_dir"]], known[id(s)])

    def _shard(self, task: ShardTask) -> _Shard:
        spec = task.spec
        done, counted = (finished(spec["out_dir"], spec["prop"], task.shard)
                         if spec.get("resume") else (set(), Summary()))
        plan = None
        if spec.get("max_programs") is not None:
            plan = windows(spec["max_programs"], spec["round_size"], self.per_piece)
        counted.resumed = counted.programs  # an earlier run's: not in this run's rate
        if done:
            counted.findings = recorded_findings(spec, task.shard)
        budget = float(spec.get("budget_s", 60.0))
        since = 0.0 if self.started_at is None else max(
            0.0, time.time() - self.started_at)
        started = time.monotonic() - since
        return _Shard(task, plan, done, counted, deadline=started + budget,
                      budget_s=budget, started=started)

    def _take(self, fut: Any, s: _Shard, store: BundleStore,
              known: dict[str, dict[str, str]]) -> list[tuple[Any, ...]]:
        """A finished piece into the shard's summary and the store; the arguments
        of a shrink task for each finding it was the first to write."""
        try:
            result: PieceResult = fut.result()
        except Exception as err:  # noqa: BLE001 - a piece that raised, or KilledWorker
            if type(err).__name__ == "KilledWorker":
                self._killed(fut, err, s, store)
                return []
            line = f"{type(err).__name__}: {err}".replace("\n", " ")[:300]
            s.summary.failed.append(f"dask piece failed: {line}")
            return []
        self.taken.add(str(fut.key))
        handed = self.handed.pop(str(fut.key), {})
        written = absorb(result, store, handed)
        record(s.task.spec["out_dir"], result, written)
        spec = s.task.spec
        mine = {f.signature: f for f in s.summary.findings}
        for f in [f for f in result.summary.findings if f.signature in handed]:
            result.summary.findings.remove(f)  # the client's since its event: the
            mine[f.signature].duplicates += f.duplicates  # piece's later sightings
        for f in result.summary.findings:
            known.setdefault(f.signature, known_entry(spec, f.signature, f.kind))
        seconds = s.summary.seconds
        s.summary.merge(result.summary)
        s.summary.seconds = max(seconds, time.monotonic() - s.started)
        s.summary.fuzz_s = s.summary.seconds
        factory = RUNTIME_TARGETS.get(spec["target_name"])
        return [(job, _bundle_of(store, job.signature, s.summary), max(
            0.0, s.shrink_end - time.monotonic()), result.piece.env, factory)
            for job in result.jobs if job.signature in written
            and job.signature not in handed]

    def _hand_over(self, s: _Shard, key: str, job: Any, meta: dict[str, Any],
                   files: dict[str, str], stores: dict[str, BundleStore],
                   known: dict[str, dict[str, str]]) -> list[tuple[Any, ...]]:
        """A finding a piece under way met (its FOUND event): claimed in the store
        now, and the arguments of its shrink task; none where the store holds the
        signature already (another piece's: this piece's result counts a sighting)
        or this piece handed it over before (a retry met it again)."""
        spec = s.task.spec
        if job.signature in self.handed.get(key, {}):
            return []
        path, created = stores[spec["out_dir"]].claim(meta, files)
        if not created:
            return []
        self.handed.setdefault(key, {})[job.signature] = str(path)
        s.summary.findings.append(job_finding(job, str(path)))  # attributed where met
        known.setdefault(job.signature, known_entry(spec, job.signature, job.res.kind))
        return [(job, (meta, files), max(0.0, s.shrink_end - time.monotonic()),
                 self.piece_of[key].env, RUNTIME_TARGETS.get(spec["target_name"]))]

    def _shrink_workers(self) -> int:
        """Workers that declare SHRINK (the local cluster's shrink worker)."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return sum(1 for w in info.values() if w.get("resources", {}).get("SHRINK"))

    @staticmethod
    def _take_shrink(fut: Any, s: _Shard, store: BundleStore) -> None:
        try:
            out = fut.result()
        except Exception as err:  # noqa: BLE001 - its finding stands as first seen
            line = f"{type(err).__name__}: {err}".replace("\n", " ")[:300]
            s.summary.failed.append(f"dask shrink failed: {line}")
            return
        absorb_shrink(out, store, s.summary)

    @staticmethod
    def _event(s: _Shard) -> ShardEvent:
        s.summary.seconds = time.monotonic() - s.started
        return ShardEvent(s.task, "done", s.summary)


def _next_by(pending: Any, results: Iterator[Any], stop_at: Callable[[], float],
             meanwhile: Any = None) -> Any:
    """The next finished task of `pending` (a Dask as_completed), or None when none
    is left or none finished by `stop_at()` (time.monotonic(), asked each time: it
    moves with the tasks out); `meanwhile()` is called while it waits (it may add
    tasks to `pending`)."""
    while not pending.has_ready():
        if meanwhile is not None:
            meanwhile()
        if pending.is_empty() or time.monotonic() >= stop_at():
            return None
        time.sleep(POLL_S)
    return next(results, None)


def worker_preflight(name: str, backend: str, prop: str, factory: Any = None
                     ) -> str | None:
    """`targets.preflight` of one property where this runs (a Dask worker)."""
    if factory is not None:
        register_target(name, factory)
    return preflight_target(name, backend, (prop,))


def piece_task(piece: Piece, known: list[dict[str, str]], factory: Any = None
               ) -> PieceResult:
    """`run_piece` as a Dask task: it first says on which worker it began, and it
    publishes each new finding as it meets it (`handover.py`)."""
    _log_event(STARTED, {"at": time.time()})
    return run_piece(piece, known, factory, lambda m: _log_event(FOUND, m))


def shrink_task(job: Any, bundle: tuple[dict[str, Any], dict[str, str]],
                seconds: float, env: dict[str, str], factory: Any = None,
                sent_at: float | None = None) -> Any:
    """`shrink_remote` as a Dask task: each better bundle is published (IMPROVED).
    `seconds` counted from `sent_at` (the client's time.time() when it submitted
    the task), not from when a worker began it: a shrink that waited for a worker's
    piece to end ran that much past the campaign's end, and was cut there."""
    if sent_at is not None:
        seconds -= min(seconds, max(0.0, time.time() - sent_at))
    return shrink_remote(job, bundle, seconds, env, factory, on_improve=lambda m, f:
                         _log_event(IMPROVED, {"meta": m, "files": f}))


def _log_event(topic: str, msg: dict[str, Any]) -> None:
    """`msg` with this task's key and worker, as an event on the scheduler (nothing
    where this runs on no worker: a piece called directly)."""
    try:
        from distributed import get_worker

        worker = get_worker()
        worker.log_event(topic, dict(msg, key=str(worker.get_current_task()),
                                     worker=worker.address))
    except (ImportError, ValueError, TypeError):  # no worker; a message msgpack refuses
        pass


def _cut_shrink(s: _Shard, store: BundleStore, signature: str,
                best: dict[str, Any] | None, seconds: float) -> None:
    """A shrink task still running at the campaign's end: its finding as the best
    bundle it published (`best`: {meta, files}), else as its piece wrote it, final
    and marked `shrink_cut`, with the attribution its piece made where it found it
    (`attribution.kept_on_cut`: the best bundle's may lack it, and a partly shrunk
    program is not the one it describes, which it then says)."""
    from gpusem.fuzz.attribution import kept_on_cut
    from gpusem.fuzz.bundle import read_bundle

    mine = next((f for f in s.summary.findings if f.signature == signature), None)
    if mine is None:
        return
    try:
        b = read_bundle(mine.bundle)
        meta, files = dict(b.meta), dict(b.files)
    except (OSError, ValueError, KeyError):
        return
    if best is not None and best.get("meta", {}).get("signature") == signature:
        meta, files = dict(best["meta"]), dict(best.get("files", files))
    meta.update(state="done", shrink_cut=True,
                shrink_s=round(seconds, 2))
    meta, files = kept_on_cut(meta, files, b.files)
    store.update(Path(mine.bundle), meta, files)
    blame = meta.get("attribution") or {}
    if blame.get("verdict"):
        mine.attribution = str(blame["verdict"])
        mine.cause = str(blame.get("cause") or "")
    mine.size = int(meta.get("size", mine.size) or mine.size)
    mine.size_before = int(meta.get("size_before", mine.size) or mine.size)
    mine.detail = str(meta.get("detail", mine.detail))
    mine.shrunk, mine.shrink_s = bool(meta["shrunk"]), seconds
    s.summary.shrink_s += seconds


def _bundle_of(store: BundleStore, signature: str, summary: Summary
               ) -> tuple[dict[str, Any], dict[str, str]]:
    """The (meta, files) of the bundle the store holds for `signature`."""
    from gpusem.fuzz.bundle import read_bundle

    path = next(f.bundle for f in summary.findings if f.signature == signature)
    b = read_bundle(path)
    return b.meta, b.files


def _slug(piece: Piece) -> str:
    i, n = piece.shard
    return f"{piece.spec.get('prop', 'p')}-{i}-{n}-{piece.window[0]}"
