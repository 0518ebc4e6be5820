"""Distributed memory analysis of GPU IR: Section 4.1 of Exo-GPU.

Every CUDA-scoped data or barrier variable has an owner level (δ_{π_d}: one copy per
thread for CudaRmem, per warp / warpgroup for the MMA register tiles, per CTA for
shared memory and mbarriers, per arriving collective for commit groups). A variable
allocated in a collective larger than its owner is *distributed*: its leading
dimensions select the owner, and must be indexed by the cuda_threads iterators that
select it. The analysis (steps 3 and 4 of Section 4.1) collects, for each use site,
which owner uses which leading index, and requires one consistent assignment.

Conventions (paper -> Python):
  access triple (n*, ω, c*)  -> `_Site` (the statement, its mapping ω, its coordinates;
                               n* = `_Site.ndist`, the number of distributed dims)
  T_v                        -> the sites collected for variable v
  δ_{π_d}                    -> `owner_size(decl)` (threads per owner)

Note: Section 4.1 states the three requirements in prose only ("consistency of the
allocation", "consistency of accesses across sites", "one and only one thread pitch
tuple"). We check them extensionally for the concrete -D sizes: every (allocating
instance, leading index) pair must be owned by exactly one owner over all sites and
all cuda_threads iterations, which is what "one pitch tuple" guarantees. See
proofs_notes/errata.md "distributed memory analysis".
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Iterator, cast

from gpusem.calculus.errors import IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir import memtypes
from gpusem.calculus.gpuir.ctrl import bvars, cvars, eval_b, eval_c
from gpusem.calculus.gpuir.instructions import INSTRUCTIONS
from gpusem.calculus.gpuir.walk import data_reads
from gpusem.typing_rules.gpuir.collective import (
    Analysis,
    Decl,
    StmtInfo,
    ThreadMapping,
)

RULE = "DistributedMemory"


@dataclass(frozen=True, slots=True)
class _Site:
    stmt: A.Stmt
    info: StmtInfo
    coords: tuple[A.WCoord, ...]
    mode: str                      # "read" | "write" | "use"
    dist_intervals: int            # leading intervals an instruction distributes
    guards: tuple[A.BExpr, ...]
    text: str

    @property
    def line(self) -> int:
        return self.stmt.span.line


def owner_size(d: Decl, info: StmtInfo) -> int | None:
    """Threads per owner of `d`, or None (not distributed: global/host/exempt) or 0
    (a commit group: owned by whichever collective uses it)."""
    launch = d.mapping.launch if d.mapping is not None else None
    if launch is None:
        return None
    mem_name = cast(A.MemExpr, d.mem).name  # data and barrier variables have one
    if d.kind == "barrier":
        owner = memtypes.BARRIER_MEMORIES[mem_name].owner
        return {"cta": launch.block_dim, "cluster": launch.cluster_threads,
                "collective": 0}[owner]
    mem = memtypes.DATA_MEMORIES[mem_name]
    return {"thread": 1, "warp": 32, "warpgroup": 128,
            "cta": launch.block_dim}.get(mem.owner)


def _level(size: int, info: StmtInfo) -> str:
    b = info.launch.block_dim if info.launch else 0
    return {1: "thread", 32: "warp", 128: "warpgroup", b: "CTA"}.get(size, "collective")


def check_memory(an: Analysis) -> list[IllTyped]:
    """Steps 3-4 of Section 4.1 over every variable of `an.proc`."""
    sites: dict[int, list[_Site]] = {}
    decl_of: dict[int, Decl] = {}
    errors: list[IllTyped] = []
    _collect(an, an.proc.body, (), sites, decl_of)
    for key, ss in sites.items():
        d = decl_of[key]
        err = _check_alloc(an, d) or _check_var(an, d, ss)
        if err is not None:
            errors.append(err)
    return errors


def distributed_dims(an: Analysis) -> dict[int, int]:
    """n* per distributed allocation (keyed by the id of its Alloc / BarrierAlloc
    node): how many leading dimensions select the owner, as the sites of an accepted
    program agree on it (step 4). The compiler stores each owner's remaining
    dimensions only (compiler/gpuir_cuda/storage.py)."""
    sites: dict[int, list[_Site]] = {}
    decl_of: dict[int, Decl] = {}
    _collect(an, an.proc.body, (), sites, decl_of)
    out: dict[int, int] = {}
    for key, ss in sites.items():
        d = decl_of[key]
        g = owner_size(d, ss[0].info) if ss else None
        if g is None or not (g == 0 or cast(ThreadMapping, d.mapping).size > g):
            continue
        out[key] = _ndist(an, ss[0], d, g)
    return out


# ------------------------------------------------------------ step 3: collection


def _collect(an: Analysis, body: tuple[A.Stmt, ...], guards: tuple[A.BExpr, ...],
             sites: dict[int, list[_Site]], decl_of: dict[int, Decl]) -> None:
    for s in body:
        info = an.infos.get(id(s))
        if info is None:
            continue
        for name, coords, mode, ndi in _uses(s):
            d = info.decls.get(name)
            if d is None or d.kind not in ("data", "barrier") or d.mapping is None:
                continue
            if info.mapping is None:
                continue
            sites.setdefault(id(d.node), []).append(
                _Site(s, info, coords, mode, ndi, guards, _text(s)))
            decl_of[id(d.node)] = d
        if isinstance(s, (A.Alloc, A.BarrierAlloc)) and info.mapping is not None:
            kind = "data" if isinstance(s, A.Alloc) else "barrier"
            dtype = s.dtype if isinstance(s, A.Alloc) else None
            sites.setdefault(id(s), [])
            decl_of[id(s)] = Decl(s.name, kind, s, dtype, s.shape, s.mem, info.mapping,
                                  info.loops)
        match s:
            case A.If(cond=c, body=b):
                _collect(an, b, guards + (c,), sites, decl_of)
            case A.For(body=b) | A.CudaWarps(body=b) | A.CudaDeviceFunction(body=b):
                _collect(an, b, guards, sites, decl_of)


# A variable use: (name, coordinates, mode, distributed intervals).
Use = tuple[str, tuple[A.WCoord, ...], str, int]


def _uses(s: A.Stmt) -> Iterator[Use]:
    """(name, coords, mode, distributed intervals) for each variable use of `s`."""
    match s:
        case A.Assign(name=n, idx=idx, rhs=e) | A.Reduce(name=n, idx=idx, rhs=e):
            for r in data_reads(e):
                yield r.name, r.coords, "read", 0
            pts = tuple(A.WPoint(c) for c in idx)
            yield n, pts, ("write" if isinstance(s, A.Assign) else "read"), 0
        case A.InstrCall(instr=g, args=args, barrier=z):
            instr = INSTRUCTIONS.get(g)
            params = instr.params if instr else ()
            for a, p in zip(args, params):
                if isinstance(a, A.DRead):
                    mode = "read" if p.access == "read" else "write"
                    yield a.name, a.coords, mode, len(p.dist_units)
            if z is not None:
                # an instruction that distributes its data over owners also signals
                # every owner's barrier: the barrier's intervals follow the same owners
                dist = instr is not None and any(p.dist_units for p in params)
                ndi = sum(isinstance(c, A.WInterval) for c in z.coords) if dist else 0
                yield z.name, z.coords, "use", ndi
        case A.Arrive(barriers=zs):
            for z in zs:
                # Note: an Arrive on several barriers signals all of them (Figure 22:
                # records observe every cell of the union, the count rises at the one
                # common home). A window of other CTAs' barriers (raw[0:2] in the
                # paper's GEMM) is such a remote signal, not a use by its owner:
                # ownership applies to the point-indexed barriers (errata
                # "Distributed memory analysis").
                if len(zs) > 1 and any(isinstance(c, A.WInterval) for c in z.coords):
                    continue
                yield z.name, z.coords, "use", 0
        case A.Await(barrier=z):
            yield z.name, z.coords, "use", 0


def _text(s: A.Stmt) -> str:
    from gpusem.calculus.gpuir.printer import print_stmt

    return print_stmt(s).strip()


# ---------------------------------------------------------- step 4: the triples

# (allocating instance, leading index) -> (its owner, the first site, its first thread)
Owners = dict[tuple[int, ...], tuple[frozenset[int], _Site, int]]
# (allocating instance, owner) -> (its leading index, the first site, its first thread)
Holdings = dict[tuple[tuple[int, ...], frozenset[int]],
                tuple[tuple[int, ...], _Site, int]]


def _check_alloc(an: Analysis, d: Decl) -> IllTyped | None:
    """(i) the allocation agrees with its memory's owner level."""
    node = d.node
    if not isinstance(node, (A.Alloc, A.BarrierAlloc)) or d.mapping is None:
        return None
    g = owner_size(d, an.infos[id(node)])
    if g is None or g == 0:
        return None
    if d.mapping.length < g and d.mapping.size < g:
        return IllTyped(
            f"allocation scope: {d.name} @ {cast(A.MemExpr, d.mem).name} has one copy "
            f"per {_level(g, an.infos[id(node)])}, but is allocated in a "
            f"{d.mapping.describe()} scope", rule=RULE, span=node.span)
    return None


def _thread_loops(info: StmtInfo, d: Decl) -> tuple[A.For, ...]:
    """cuda_threads loops enclosing the site but not the allocation."""
    outer = {id(f) for f in d.loops}
    return tuple(f for f in info.loops if f.mode is A.LoopMode.CUDA_THREADS
                 and id(f) not in outer)


def _outer_thread_vars(d: Decl) -> tuple[str, ...]:
    return tuple(f.var for f in d.loops if f.mode is A.LoopMode.CUDA_THREADS)


def _ndist(an: Analysis, site: _Site, d: Decl, g: int) -> int:
    """How many leading coordinates of the site select an owner."""
    loops = _thread_loops(site.info, d)
    dist_vars = {f.var for f in loops
                 if id(f) in an.tilings and (g == 0 or an.tilings[id(f)].stride >= g)}
    n, intervals = 0, site.dist_intervals
    for c in site.coords:
        if isinstance(c, A.WPoint):
            vs = cvars(c.index) - set(an.defines)
            if not vs or not vs <= dist_vars:
                break
        elif intervals > 0:
            intervals -= 1
        else:
            break
        n += 1
    return n


def _extra_iterator(an: Analysis, d: Decl, site: _Site, g: int) -> IllTyped | None:
    if not site.coords or not isinstance(site.coords[0], A.WPoint):
        return None
    outer = [f for f in d.loops if f.mode is A.LoopMode.CUDA_THREADS
             and id(f) in an.tilings and an.tilings[id(f)].stride >= max(g, 1)]
    used = cvars(site.coords[0].index)
    for f in outer:
        if f.var in used:
            return IllTyped(
                f"extra thread iterator: {d.name} is allocated inside the cuda_threads "
                f"loop over {f.var} (one copy per "
                f"{_level(an.tilings[id(f)].stride, site.info)}), so line {site.line} "
                f"({site.text}) must not index it by {f.var}",
                rule=RULE, span=site.stmt.span)
    return None


def _check_var(an: Analysis, d: Decl, sites: list[_Site]) -> IllTyped | None:
    if not sites:
        return None
    g = owner_size(d, sites[0].info)
    if g is None:
        return None
    distributed = g == 0 or cast(ThreadMapping, d.mapping).size > g
    if not distributed:
        for s in sites:
            err = _extra_iterator(an, d, s, g)
            if err is not None:
                return err
        return None
    ks = [(s, _ndist(an, s, d, g)) for s in sites]
    (s0, k0) = ks[0]
    for s, k in ks[1:]:
        if k != k0:
            return IllTyped(
                f"inconsistent indexing: {d.name} is distributed, but line {s0.line} "
                f"({s0.text}) indexes {k0} leading dimension(s) by thread iterators "
                f"and "
                f"line {s.line} ({s.text}) indexes {k}", rule=RULE, span=s.stmt.span)
    owners: Owners = {}
    holdings: Holdings = {}
    for s in sites:
        err = _owners(an, d, s, k0, g, owners, holdings)
        if err is not None:
            return err
    return _pitch_tuple(d, owners, len(_outer_thread_vars(d)), g)


def _iterations(an: Analysis, info: StmtInfo) -> Iterator[dict[str, int]]:
    """Every assignment of the enclosing cuda_threads iterators (with the defines)."""
    loops = [f for f in info.loops if f.mode is A.LoopMode.CUDA_THREADS
             and id(f) in an.tilings]
    ranges = [range(an.tilings[id(f)].lo, an.tilings[id(f)].hi) for f in loops]
    for values in itertools.product(*ranges):
        env = dict(an.defines)
        env.update(zip((f.var for f in loops), values))
        yield env


def _guards_hold(s: _Site, env: dict[str, int]) -> bool:
    for b in s.guards:
        if bvars(b) <= set(env) and not eval_b(b, env):
            return False
    return True


def _owners(an: Analysis, d: Decl, s: _Site, k: int, g: int, owners: Owners,
            holdings: Holdings) -> IllTyped | None:
    """Every (instance, leading index) has one owner, and every owner one leading
    index: the distributed dimensions are the owner's coordinates (the compiler drops
    them), so an owner using two indices would read one register for both."""
    outer = _outer_thread_vars(d)
    for env in _iterations(an, s.info):
        if not _guards_hold(s, env):
            continue
        threads = cast(ThreadMapping, s.info.mapping).threads(env)  # a CUDA site
        key0 = tuple(env[v] for v in outer)
        for idx, owner in _site_owners(s, env, threads, k, g):
            if owner is None:
                return _conflict(an, d, s, s, env, idx, None, None, g)
            prev = owners.setdefault(key0 + idx, (owner, s, threads[0]))
            if prev[0] != owner:
                return _conflict(an, d, prev[1], s, env, idx, prev[2], threads[0], g)
            held = holdings.setdefault((key0, owner), (idx, s, threads[0]))
            if held[0] != idx:
                return _two_indices(d, held[1], s, held[0], idx, threads[0], g)
    return None


def _two_indices(d: Decl, s1: _Site, s2: _Site, i1: tuple[int, ...],
                 i2: tuple[int, ...], t: int, g: int) -> IllTyped:
    mem = cast(A.MemExpr, d.mem).name
    level = _level(g, s2.info) if g else "arriving collective"
    where = f"line {s1.line} ({s1.text})"
    if s1 is not s2:
        where += f" and line {s2.line} ({s2.text})"
    show = ", ".join
    return IllTyped(
        f"inconsistent indexing: {d.name} @ {mem} (one copy per {level}) is used at "
        f"{d.name}[{show(map(str, i1))}] and {d.name}[{show(map(str, i2))}] by the "
        f"same {level} (thread {t}) at {where}; its distributed dimension(s) select "
        f"the owner, so each {level} has one index", rule=RULE, span=s2.stmt.span)


def _pitch_tuple(d: Decl, owners: Owners, nouter: int, g: int) -> IllTyped | None:
    """Section 4.1 (iii): one thread pitch tuple for all sites: over every
    allocation instance, owner = base + Σ index_i * pitch_i with the same integer
    pitches (checked on the concrete indices, as the other requirements are)."""
    if g == 0 or not owners:
        return None
    groups: dict[tuple[int, ...], list[tuple[tuple[int, ...], int, _Site]]] = {}
    for key, (owner, site, _) in owners.items():
        groups.setdefault(key[:nouter], []).append((key[nouter:], min(owner) // g,
                                                     site))
    pitches: tuple[int, ...] | None = None
    for pts in groups.values():
        i0, o0, _ = pts[0]
        if not i0:
            continue
        got = _solve_pitches([(tuple(a - b for a, b in zip(i, i0)), o - o0)
                              for i, o, _ in pts])
        if pitches is None and got is not None:
            pitches = got
        if got is None or got != pitches:
            site = pts[-1][2]
            return IllTyped(
                f"inconsistent indexing: {d.name} @ {cast(A.MemExpr, d.mem).name}: "
                f"the owners of its distributed dimension(s) do not follow one thread "
                f"pitch tuple (Section 4.1 (iii)); e.g. line {site.line} "
                f"({site.text})", rule=RULE, span=site.stmt.span)
    return None


def _solve_pitches(rows: list[tuple[tuple[int, ...], int]]) -> tuple[int, ...] | None:
    """Integer pitches p with Σ di_j * p_j = do for every row (di, do), free
    dimensions (never varied) taken as 0; None when there are none."""
    n = len(rows[0][0])
    p: list[int | None] = [None] * n
    while True:
        changed = True
        while changed:       # pin a pitch from a row where it is the only unknown
            changed = False
            for di, do in rows:
                unknown = [j for j in range(n) if di[j] and p[j] is None]
                if len(unknown) == 1:
                    j = unknown[0]
                    rest = do - sum(di[k] * (p[k] or 0) for k in range(n) if k != j)
                    if rest % di[j]:
                        return None
                    p[j], changed = rest // di[j], True
        tied = [j for di, _ in rows for j in range(n) if di[j] and p[j] is None]
        if not tied:
            break
        p[tied[0]] = 0       # dimensions that only ever vary together: any split
    pitches = tuple(x or 0 for x in p)
    if any(sum(a * b for a, b in zip(di, pitches)) != do for di, do in rows):
        return None
    return pitches


def _site_owners(s: _Site, env: dict[str, int], threads: tuple[int, ...], k: int,
                 g: int) -> Iterator[tuple[tuple[int, ...], frozenset[int] | None]]:
    """(leading index, owner) pairs of one executing collective."""
    owner_of: Callable[[tuple[int, ...]], frozenset[int]]
    if g == 0:
        owner_of = lambda ts: frozenset(ts)  # noqa: E731  (commit group: the collective)
    else:
        owner_of = lambda ts: frozenset(t // g for t in ts)  # noqa: E731
    points: list[list[int] | tuple[str, int, int | None]] = []
    spans: list[int] = []
    for c in s.coords[:k]:
        if isinstance(c, A.WPoint):
            points.append([int(eval_c(c.index, env))])
        else:
            lo = 0 if c.lo is None else int(eval_c(c.lo, env))
            hi = int(eval_c(c.hi, env)) if c.hi is not None else None
            points.append(("interval", lo, hi))
            spans.append(len(points) - 1)
    if not spans:
        idx = tuple(cast(int, p[0]) for p in points)  # points only
        owner = owner_of(threads)
        yield idx, (owner if g == 0 or len(owner) == 1 else None)
        return
    # An instruction distributes its interval dims: element j <-> the j-th owner.
    groups = sorted({t // max(g, 1) for t in threads})
    elems = itertools.product(*[
        range(p[1], p[2] if p[2] is not None else p[1] + len(groups))
        if isinstance(p, tuple) else p for p in points])
    for j, idx in enumerate(elems):
        yield tuple(idx), (frozenset({groups[j]}) if j < len(groups) else None)


def _conflict(an: Analysis, d: Decl, s1: _Site, s2: _Site, env: dict[str, int],
              idx: tuple[int, ...], t1: int | None, t2: int | None,
              g: int) -> IllTyped:
    mem = cast(A.MemExpr, d.mem).name
    shown = f"{d.name}[{', '.join(map(str, idx))}]" if idx else d.name
    level = _level(g, s2.info) if g else "arriving collective"
    where = f"line {s1.line} ({s1.text})"
    if s1 is not s2:
        where += f" and line {s2.line} ({s2.text})"
    loops = ", ".join(f.var for f in _thread_loops(s2.info, d)) or "none"
    if memtypes.DATA_MEMORIES.get(mem) is not None and \
            memtypes.DATA_MEMORIES[mem].owner == "thread":
        return IllTyped(
            f"cross-thread register access: {d.name} @ {mem} has one copy per thread "
            f"(allocated at line {d.node.span.line} in a "
            f"{cast(ThreadMapping, d.mapping).describe()} "
            f"scope), "
            f"but {shown} is used by different threads at {where}; a register value "
            f"cannot be read across threads (distribute it, e.g. {d.name}[tid], or use "
            f"a warp shuffle)", rule=RULE, span=s2.stmt.span)
    if s1 is s2:
        return IllTyped(
            f"missing thread iterator: {shown} @ {mem} (one copy per {level}) is used "
            f"by more than one {level} at {where}; index its leading dimension(s) by "
            f"the cuda_threads iterator(s) in scope ({loops})",
            rule=RULE, span=s2.stmt.span)
    who = f" (threads {t1} and {t2})" if t1 is not None and t2 is not None else ""
    return IllTyped(
        f"inconsistent indexing: {shown} @ {mem} (one copy per {level}) is owned by "
        f"different {level}s{who} at {where}", rule=RULE, span=s2.stmt.span)
