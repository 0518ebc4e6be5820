"""The engine interface: who runs a campaign's shards, and how their results come back.

A campaign (`fuzz/campaign.py`) is cut into *rounds*; round r is seeded by
hash(seed, r), so a shard (i, n) — the rounds r = i (mod n) — is a piece of work that
any process on any machine can run and that gives the same programs wherever it runs.
An *engine* takes a list of `ShardTask`s and runs each one as a `Campaign(**task.spec,
shard=task.shard)`; it yields one `ShardEvent` per task as each ends:

  ShardEvent(task, "done", summary)       the shard's final `Summary`
  ShardEvent(task, "failed", None, why)   the shard died, hung or raised

and may report running counts meanwhile through `on_progress(task, summary)` (called
in the client's process, at any rate; a progress summary's findings are not filled in:
`Summary.found` counts them). An engine may retry a shard
whose worker was lost before it yields "failed" (a re-run of a shard gives the same
programs; the bundle store below makes the retry write nothing twice).

What stays on the client side (`fuzz/client.py`, whatever the engine):
  - merging the shards' summaries (`Summary.merge`): findings de-duplicated by
    signature, counts added, the smaller program kept;
  - the reports (`fuzz/reports.py`) and the exit code.
What the shards do themselves, through the bundle store (`fuzz/bundle.BundleStore`,
on the campaign's out dir, a file system all shards share):
  - a finding is written the moment it is seen, then shrunk in place;
  - a signature is claimed atomically (O_EXCL), so two shards meeting one bug write one
    bundle; the other counts a duplicate (`Finding.new` is False in its summary);
  - each shard records its finished rounds (`fuzz/manifest.py`), so `--resume`
    continues without repeating work, whatever engine ran the first part.
An engine without a shared file system would have its shards write into a local store
and send `Finding`s with their files back; the client would then write them with
`BundleStore.claim` (same de-duplication). The local engine does not need that.

Implementations: `fuzz/engines/local.py` (`LocalEngine`: in-process for one shard,
else one spawned process per shard; today's `--jobs`). Others (Dask) implement `run`
and `close` the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gpusem.fuzz.summary import Summary

EventKind = Literal["done", "failed"]
Progress = Callable[["ShardTask", Summary], None]


@dataclass(frozen=True)
class ShardTask:
    """One shard of a campaign: `Campaign(**spec, shard=shard)` runs it. `spec` holds
    the campaign's keyword arguments (target_name, backend, prop, budget_s, seed,
    out_dir, round_size, max_programs, since, resume), all plain picklable values."""

    spec: dict[str, Any] = field(hash=False)
    shard: tuple[int, int] = (0, 1)

    @property
    def label(self) -> str:
        return f"{self.spec.get('prop', '?')} shard {self.shard[0]}/{self.shard[1]}"


@dataclass
class ShardEvent:
    task: ShardTask
    kind: EventKind
    summary: Summary | None = None
    error: str = ""  # for "failed": one line saying why


class Engine(ABC):
    """Runs shards. `run` is a generator: the client iterates it to the end (or closes
    it on Ctrl-C/SIGTERM, which must stop every shard still running: their `finally`
    blocks write what they found, see `Campaign.run`)."""

    name: str = ""

    @abstractmethod
    def run(self, tasks: Sequence[ShardTask],
            on_progress: Progress | None = None) -> Iterator[ShardEvent]:
        """Run every task; yield one "done" or "failed" event per task as it ends;
        return when all have ended."""

    def close(self) -> None:
        """Release workers and clusters (called once, after `run` ends)."""
