"""Which of issue 26's constructs a GPU IR program uses, read from its syntax (whatever
family drew it), so that the census counts what the differential compared and a test
can hold the generator to a minimum share of each (tests/exo/test_coverage.py).

  sync-by-non-writers  a Fence or an Arrive executed inside `CudaWarps(a, b)` while
                       some write before it was done by threads outside warps [a, b)
  sync-chain           two or more synchronisations in a row, of different
                       granularities (warp Fence, CTA Fence, temporal Fence, mbarrier)
  two-awaits           two Awaits of one mbarrier with no Arrive between them
  two-awaits-threads   ... executed by different warps
  two-awaits-tls       ... on different sync timelines
  host-dram            a DRAM parameter
  host-copy            a stream-ordered host copy or memset (cudaMemcpyAsync_* ...)
  host-loop            a CPU loop (a seq loop outside any CudaDeviceFunction)
  host-fence           a Fence outside any CudaDeviceFunction (cuda_stream_sync)
  atomic               an atomic instruction (cuda_atomic_add_*)
  tma-reduce           a TMA reduction (Sm90_tma_reduce_*)
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusem.calculus.gpuir import ast as A

CONSTRUCTS = ("sync-by-non-writers", "sync-chain", "two-awaits", "two-awaits-threads",
              "two-awaits-tls", "host-dram", "host-copy", "host-loop", "host-fence",
              "atomic", "tma-reduce")

# The least share of a census's programs that must use each construct
# (tests/exo/test_coverage.py; a 300-program census draws about twice these).
MIN_SHARE = {c: 0.02 for c in CONSTRUCTS} | {"two-awaits-tls": 0.01,
                                              "host-fence": 0.015}

Warps = tuple[int, int] | None  # None: every warp of the CTA


@dataclass(frozen=True)
class _Ctx:
    device: bool = False
    warps: Warps = None
    warp_loop: bool = False


def constructs_of(proc: A.Proc) -> frozenset[str]:
    found: set[str] = set()
    if any(isinstance(p, A.DataParam) and p.mem.name == "DRAM" for p in proc.params):
        found.add("host-dram")
    from gpusem.calculus.gpuir.walk import walk

    mbarriers = {s.name for s in walk(proc.body)
                 if isinstance(s, A.BarrierAlloc) and s.mem.name == "CudaMbarrier"}
    _Walk(found, mbarriers).body(proc.body, _Ctx())
    return frozenset(found)


def _inside(w: Warps, r: Warps) -> bool:
    """Are warps `w` among warps `r`?"""
    if r is None:
        return True
    return w is not None and r[0] <= w[0] and w[1] <= r[1]


class _Walk:
    def __init__(self, found: set[str], mbarriers: set[str]):
        self.found, self.mbarriers = found, mbarriers
        self.writes: list[Warps] = []
        self.links: list[str] = []      # the synchronisations in a row so far
        self.awaits: dict[str, list[tuple[Warps, str]]] = {}

    def body(self, body: tuple[A.Stmt, ...], ctx: _Ctx) -> None:
        for s in body:
            self.stmt(s, ctx)

    def _sync(self, link: str, ctx: _Ctx) -> None:
        if ctx.warps is not None and any(not _inside(w, ctx.warps)
                                         for w in self.writes):
            self.found.add("sync-by-non-writers")
        self.links.append(link)
        if len(set(self.links)) >= 2:
            self.found.add("sync-chain")

    def _access(self, ctx: _Ctx) -> None:
        self.writes.append(ctx.warps)
        self.links = []

    def stmt(self, s: A.Stmt, ctx: _Ctx) -> None:
        match s:
            case A.CudaDeviceFunction(body=b):
                self.body(b, _Ctx(device=True))
            case A.CudaWarps(lo=lo, hi=hi, body=b):
                w = None if lo is None or hi is None else (lo, hi)
                self.body(b, _Ctx(ctx.device, w, ctx.warp_loop))
            case A.For(mode=mode, unit=unit, body=b):
                if not ctx.device and mode is A.LoopMode.SEQ:
                    self.found.add("host-loop")
                warp = unit is not None and unit.name == "cuda_warp"
                self.body(b, _Ctx(ctx.device, ctx.warps, ctx.warp_loop or warp))
            case A.If(body=b):
                self.body(b, ctx)
            case A.Assign() | A.Reduce():
                self._access(ctx)
            case A.Fence(post=post):
                if not ctx.device:
                    self.found.add("host-fence")
                link = ("warp" if ctx.warp_loop else
                        "temporal" if post == "cuda_temporal" else "cta")
                self._sync(link, ctx)
            case A.Arrive(barriers=zs):
                if any(z.name in self.mbarriers for z in zs):  # (not a commit group)
                    self._sync("mbarrier", ctx)
                for z in zs:
                    self.awaits.pop(z.name, None)
            case A.Await(barrier=z, tl=tl) if z.name in self.mbarriers:
                # (commit groups are waited on more than once by design: the
                # pipelines' drain; only an mbarrier's arrival is awaited once)
                prior = self.awaits.setdefault(z.name, [])
                for w, t in prior:
                    self.found.add("two-awaits")
                    if w != ctx.warps:
                        self.found.add("two-awaits-threads")
                    if t != tl:
                        self.found.add("two-awaits-tls")
                prior.append((ctx.warps, tl))
            case A.InstrCall(instr=g):
                if g.startswith(("cudaMemcpyAsync", "cudaMemsetAsync")):
                    self.found.add("host-copy")
                elif g.startswith("cuda_atomic_"):
                    self.found.add("atomic")
                elif g.startswith("Sm90_tma_reduce"):
                    self.found.add("tma-reduce")
                self._access(ctx)
