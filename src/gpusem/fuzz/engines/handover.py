"""A piece's new findings handed to the client the moment they are met (issue 31.1),
for engines that run pieces on a cluster (`fuzz/engines/dask.py`).

A piece writes a new finding into its own store and goes on fuzzing; its finding's
shrinking is a task of its own (`pieces.shrink_remote`). Before, the piece kept the
job until it ended, so a finding met early in a piece began to shrink only at the
piece's end: 15-20 s into a cold 20 s campaign on 2 cores, with seconds or nothing
left to shrink (results/scale/shrink_cold_cpu_dev/). Now the piece also publishes
each job as it is made (`Publishing`, an event FOUND on the scheduler); the client
(`Inbox`) claims the bundle in the campaign's store at once and submits its shrink
task, which starts on a worker of its own while the piece goes on.

Each finding is still written once: the client is the only writer of the campaign's
store, and a signature it claimed from a piece's event is that piece's (`absorb`
takes it as written by the piece, not as a sighting; its job is not sent twice); a
retried piece's event for a signature its first run handed over is ignored, and so
is an event that comes after its piece's result (the result handed the job over).
"""

from __future__ import annotations

import pickle
import queue
import time
from collections.abc import Callable
from typing import Any

from gpusem.fuzz.bundle import read_bundle
from gpusem.fuzz.shrink_jobs import Deferred, ShrinkJob

FOUND = "gpusem-piece-found"  # the event of a piece's new finding (its job, bundle)

Publish = Callable[[dict[str, Any]], None]
Handed = tuple[str, ShrinkJob, dict[str, Any], dict[str, str]]


class Publishing(Deferred):
    """Keeps the jobs for the piece's result, as `Deferred` does, and publishes each
    one at once with its bundle (`publish`: a msgpack-able message)."""

    def __init__(self, publish: Publish) -> None:
        super().__init__()
        self.publish = publish

    def submit(self, job: ShrinkJob) -> None:
        super().submit(job)
        b = read_bundle(job.bundle)  # the piece's own store: the client claims it
        self.publish({"data": pickle.dumps((job, dict(b.meta), dict(b.files))),
                      "at": time.time()})  # when it was sent: the hand-over's lag


class Inbox:
    """The FOUND events of the client's campaign, as they come (the client's event
    loop puts them here; `take` hands them to the campaign's own thread)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.got: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        client.subscribe_topic(FOUND, lambda event: self.got.put(event[1]))

    def take(self) -> list[Handed]:
        """(the piece's key, its job, the bundle's meta and files), oldest first."""
        out: list[Handed] = []
        while True:
            try:
                msg = self.got.get_nowait()
            except queue.Empty:
                return out
            try:
                job, meta, files = pickle.loads(msg["data"])  # our own tasks' jobs
            except (KeyError, TypeError, ValueError, pickle.UnpicklingError):
                continue  # not one of ours: its piece's result still hands it over
            out.append((str(msg.get("key", "")), job, meta, files))

    def close(self) -> None:
        try:
            self.client.unsubscribe_topic(FOUND)
        except Exception:  # noqa: BLE001, S110 - a client already closed
            pass
