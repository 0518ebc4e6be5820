"""Qualitative timelines, visibility levels and sync timelines of Exo-GPU (seed 000).

Encodes, as data:
  - Figure 15: the qualitative timelines `QualTL` (which kind of instruction touched
    which kind of memory), with the paper's short column names (cpu, strm, cuda1, ...);
  - Section 5.1 / Figure 4: the visibility levels `VL`, totally ordered
    invisible < atomic_only < unordered < temporally_ordered < fully_ordered;
  - Figure 16: the sync timelines `SyncTL` (the parameters of Fence / Arrive / Await),
    each with its transitivity flag, its full timeline set and its temporal set;
  - Figure 18: the conversion helpers T_tr, T_qfull, T_qtmp, T_qarr over them.

Conventions (paper -> Python):
  τ_q : QualTL           -> `QualTL` (enum; `.value` is the paper's name)
  τ_v : VL               -> `VL` (IntEnum, so `<` / `max` are the paper's order)
  τ_s : SyncTL           -> `SyncTL` (frozen dataclass) looked up by `sync_tl(name)`
  trnstv?                -> `SyncTL.transitive`
  "full" column entries  -> `SyncTL.full`      (= T_qfull)
  "full" or "temp."      -> `SyncTL.temporal`  (= T_qtmp; always a superset of `full`)

`rules` is "fixed" (the default; our corrections, each in proofs_notes/errata.md) or
"paper" (the table exactly as we read Figure 16). The two tables are the same today;
`rules` stays so that a future correction of a row has a place.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

Rules = Literal["fixed", "paper"]


class VL(enum.IntEnum):
    """Visibility levels (Figure 4), totally ordered by their integer value."""

    INVISIBLE = 0
    ATOMIC_ONLY = 1
    UNORDERED = 2
    TEMPORALLY_ORDERED = 3
    FULLY_ORDERED = 4

    @property
    def paper_name(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "VL":
        """Accept the paper's spellings: `fully_ordered`, `full_ordered`,
        `fully-ordered`, `temporal_ordered` (Figures 5 and 19 use all of them for
        the same level)."""
        key = text.strip().lower().replace("-", "_")
        key = _VL_ALIASES.get(key, key)
        try:
            return cls[key.upper()]
        except KeyError:
            raise ValueError(f"unknown visibility level: {text!r}") from None


_VL_ALIASES = {"full_ordered": "fully_ordered",
               "temporal_ordered": "temporally_ordered"}


class QualTL(enum.Enum):
    """Qualitative timelines (Figure 15); `.short` is the Figure 16 column name."""

    CPU_IN_ORDER = "cpu_in_order_qual"
    CPU_CUDA_STREAM = "cpu_cuda_stream_qual"
    CUDA_IN_ORDER_RMEM = "cuda_in_order_rmem_qual"
    CUDA_IN_ORDER_RAM = "cuda_in_order_ram_qual"
    SM80_CP_ASYNC = "Sm80_cp_async_qual"
    TMA_TO_SMEM_ASYNC = "tma_to_smem_async_qual"
    TMA_TO_GMEM_ASYNC = "tma_to_gmem_async_qual"
    WGMMA_ASYNC_RMEM_A = "wgmma_async_rmem_a_qual"
    WGMMA_ASYNC_RMEM_D = "wgmma_async_rmem_d_qual"
    WGMMA_ASYNC_SMEM = "wgmma_async_smem_qual"
    WGMMA_ZERO = "wgmma_zero_qual"

    @property
    def short(self) -> str:
        return _SHORT[self]

    @property
    def index(self) -> int:
        """Stable bit position (for bit-set representations of timeline sets)."""
        return _INDEX[self]

    @classmethod
    def parse(cls, text: str) -> "QualTL":
        """By paper name (`cuda_in_order_ram_qual`) or short name (`cuda2`)."""
        key = text.strip()
        found = _BY_NAME.get(key) or _BY_SHORT.get(key)
        if found is None:
            raise ValueError(f"unknown qualitative timeline: {text!r}")
        return found


_SHORT = {
    QualTL.CPU_IN_ORDER: "cpu",
    QualTL.CPU_CUDA_STREAM: "strm",
    QualTL.CUDA_IN_ORDER_RMEM: "cuda1",
    QualTL.CUDA_IN_ORDER_RAM: "cuda2",
    QualTL.SM80_CP_ASYNC: "Sm80",
    QualTL.TMA_TO_SMEM_ASYNC: "tmaS",
    QualTL.TMA_TO_GMEM_ASYNC: "tmaG",
    QualTL.WGMMA_ASYNC_RMEM_A: "wgA",
    QualTL.WGMMA_ASYNC_RMEM_D: "wgD",
    QualTL.WGMMA_ASYNC_SMEM: "wgS",
    QualTL.WGMMA_ZERO: "wg0",
}
_INDEX = {q: i for i, q in enumerate(QualTL)}
_BY_NAME = {q.value: q for q in QualTL}
_BY_SHORT = {s: q for q, s in _SHORT.items()}

ALL_QUALS: frozenset[QualTL] = frozenset(QualTL)
# Every timeline a CUDA device instruction can be on (Figure 15 minus cpu and strm).


@dataclass(frozen=True, slots=True)
class SyncTL:
    """One row of Figure 16. Invariant: `full <= temporal` (T_qtmp: "temp." or full)."""

    name: str
    transitive: bool
    full: frozenset[QualTL]
    temporal: frozenset[QualTL]

    def __post_init__(self) -> None:
        if not self.full <= self.temporal:
            raise ValueError(f"sync timeline {self.name}: full set not within temporal")

    def __str__(self) -> str:
        return self.name


def _row(name: str, transitive: bool, full: str, temp: str = "") -> SyncTL:
    """Build a row from the short column names, as the figure is laid out."""
    f = frozenset(_BY_SHORT[s] for s in full.split())
    t = frozenset(_BY_SHORT[s] for s in temp.split())
    return SyncTL(name, transitive, f, f | t)


_DEVICE_TEMP = "Sm80 tmaS tmaG wgA wgD wgS wg0"
# cuda_stream_sync: the figure's single merged "full" cell spans strm .. wgS: every
# timeline of the stream and of the device, not the CPU's (Figure 5 adds
# cpu_in_order_qual to the launch bracket's pre-set explicitly) and not wg0 (the
# wgmma scale-d model, register-only). See errata "cuda_stream_sync".
_STREAM_FULL = "strm cuda1 cuda2 Sm80 tmaS tmaG wgA wgD wgS"

# Figure 16, row by row (columns: cpu strm cuda1 cuda2 Sm80 tmaS tmaG wgA wgD wgS wg0).
# Note: the extracted figure is ragged (empty cells dropped, merged cells printed once);
# we realigned each row so its "full" entries fall under the timelines its name speaks
# for, and read a merged cell as spanning the columns its row leaves otherwise
# unexplained: the temporal cells of cuda_in_order / cuda_temporal are every device
# timeline (like those of Sm80_generic and cuda_generic_and_async), the one "full" of
# cuda_stream_sync spans strm .. wgS. See errata "Figure 16 rows".
_PAPER_ROWS = (
    _row("empty_sync_tl", False, ""),
    _row("cpu_in_order", True, "cpu"),
    _row("cuda_stream_sync", True, _STREAM_FULL),
    _row("cuda_in_order", True, "cuda1 cuda2", "strm " + _DEVICE_TEMP),
    _row("cuda_temporal", False, "", "strm cuda1 cuda2 " + _DEVICE_TEMP),
    _row("Sm80_cp_async", False, "Sm80"),
    _row("Sm80_generic", False, "cuda1 cuda2 Sm80", "strm " + _DEVICE_TEMP),
    _row("tma_to_smem_async", False, "tmaS"),
    _row("tma_to_gmem_async", False, "tmaG"),
    _row("wgmma_async_smem", False, "wgS"),
    _row("wgmma_fence_1", False, "cuda1 wgA wgD"),
    _row("wgmma_fence_2", False, "wgA wgD"),
    _row("wgmma_async", False, "wgA wgD wgS"),
    _row("cuda_async_proxy", False, "tmaS tmaG wgS"),
    _row("cuda_async_proxy_wgmma", False, "tmaS tmaG wgA wgD wgS"),
    _row(
        "cuda_generic_and_async",
        False,
        "cuda1 cuda2 Sm80 tmaS tmaG wgS",
        "strm wgA wgD wg0",
    ),
)

PAPER_SYNC_TIMELINES: dict[str, SyncTL] = {r.name: r for r in _PAPER_ROWS}

# Note: `--rules fixed` and `--rules paper` read Figure 16 alike. (An earlier fixed
# row made cuda_stream_sync full on every timeline, cpu included; the kernel-exit
# bracket then granted the host visibility of a kernel's accesses without any stream
# synchronisation: errata "cuda_stream_sync".)
FIXED_SYNC_TIMELINES: dict[str, SyncTL] = dict(PAPER_SYNC_TIMELINES)

# Alternative spelling used by the Exo-GPU implementation.
_ALIASES = {"cuda_generic_and_async_proxy": "cuda_generic_and_async"}

SYNC_TIMELINE_NAMES: tuple[str, ...] = tuple(PAPER_SYNC_TIMELINES)


def sync_tl(name: str, rules: Rules = "fixed") -> SyncTL:
    """Look a sync timeline up by its Figure 16 name; ValueError if unknown (callers
    turn it into BadInput with their span)."""
    table = FIXED_SYNC_TIMELINES if rules == "fixed" else PAPER_SYNC_TIMELINES
    found = table.get(_ALIASES.get(name, name))
    if found is None:
        raise ValueError(f"unknown sync timeline: {name!r}")
    return found


def is_sync_tl(name: str) -> bool:
    return _ALIASES.get(name, name) in PAPER_SYNC_TIMELINES


# ---------------------------------------------------------------- Figure 18 helpers


def t_tr(tl: SyncTL) -> bool:
    """T_tr: is the sync timeline transitive."""
    return tl.transitive


def t_qfull(tl: SyncTL) -> frozenset[QualTL]:
    """T_qfull: the timelines marked "full"."""
    return tl.full


def t_qtmp(tl: SyncTL) -> frozenset[QualTL]:
    """T_qtmp: the timelines marked "temp." or "full"."""
    return tl.temporal


def t_qarr(tl: SyncTL) -> QualTL:
    """T_qarr: the timeline an Arrive records on its own barrier (use-after-free check).

    Note: Figure 18 returns `cuda_in_order_qual`, which Figure 15 does not define; the
    barrier object itself lives in shared memory (mbarrier), so we use
    cuda_in_order_ram_qual. See errata "T_qarr".
    """
    if QualTL.SM80_CP_ASYNC in tl.full:
        return QualTL.SM80_CP_ASYNC
    return QualTL.CUDA_IN_ORDER_RAM
