"""Pass `lower_sync`: Fence / Arrive / Await and mbarrier allocations -> CUDA.

Exo-GPU Section 4.2 and Figure 16: a non-split barrier Fence(pre, post) run by a
collective becomes the cheapest hardware barrier spanning exactly that collective,
plus what its timelines need on either side:

  collective (thread mapping)            barrier
  pre orders register timelines only     none (registers are per thread)
  one thread                             none (program order suffices)
  < 32 lanes of one warp                 __syncwarp(lane mask)
  one warp                               __syncwarp()
  k whole warps inside one CTA           bar.sync id, 32k   (named barrier, gs_bar_sync)
  one CTA                                __syncthreads()
  the whole cluster                      barrier.cluster.arrive + wait (PTX)

  pre's full set holds Sm80_cp_async_qual        cp.async.wait_all first (Section 2.1:
                                                 a fence on Sm80_cp_async completes the
                                                 thread's copies)
  pre's full set holds tma_to_gmem_async_qual    cp.async.bulk.wait_group 0 first
  post's full set holds an async-proxy timeline  fence.proxy.async first (generic-proxy
  (tmaS, tmaG, wgS) and pre a generic one         writes become visible to TMA/wgmma)

Split barriers: an mbarrier cell expects one arrival per thread of the arriving
collective per phase (`GMbarriers.arrivals`); Await(z, tl, -1) waits for the next
phase with per-thread parity tracking (Exo-GPU's ~0). A kernel with a lagged
Await(z, tl, -n), n > 1 (Exo-GPU's ~(n-1)) lowers every mbarrier cell to a ring of
the deepest lag's mbarriers, with per-thread arrive and await counts
(`ring_mbarriers`, `ring_await`, `mbar_slot`; errata "split-barrier arrival counts").
An Arrive on `z[cta], z[0:2]` arrives on the own CTA's cell and, remotely, on every
other CTA's. A commit group is per-thread
hardware state: Arrive(Sm80_cp_async) >> cg is cp.async.commit_group and
Await(cg, tl, n) cp.async.wait_group n. The cluster-sync barrier is
barrier.cluster.arrive / wait.

Note: named barrier ids are per (collective size, CTA-local position): two collectives
of one size at different positions run concurrently and must not share an id, or
their arrivals would be counted together. Id 0 is __syncthreads'.
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.calculus.gpuir.timelines import QualTL, sync_tl
from gpusem.compiler.gpuir_cuda import kir as K
from gpusem.compiler.gpuir_cuda.errors import unsupported
from gpusem.compiler.gpuir_cuda.faults import active
from gpusem.compiler.gpuir_cuda.from_gpuir import offset_c
from gpusem.typing_rules.gpuir.collective import ThreadMapping

ASYNC_PROXY = {QualTL.TMA_TO_SMEM_ASYNC, QualTL.TMA_TO_GMEM_ASYNC,
               QualTL.WGMMA_ASYNC_SMEM}
GENERIC = {QualTL.CUDA_IN_ORDER_RAM, QualTL.CUDA_IN_ORDER_RMEM}
REGISTERS = {QualTL.CUDA_IN_ORDER_RMEM, QualTL.WGMMA_ASYNC_RMEM_A,
             QualTL.WGMMA_ASYNC_RMEM_D}
MAX_NAMED = 16

CLUSTER_ARRIVE = "gs_cluster_arrive();"  # barrier.cluster.arrive.release
CLUSTER_WAIT = "gs_cluster_wait();"  # barrier.cluster.wait.acquire


def lower_sync(kernel: K.GKernel, env: dict[str, int]) -> K.GKernel:
    ids: dict[int, int] = {}  # collective length -> its first named barrier id

    def rewrite(s: K.GStmt) -> tuple[K.GStmt, ...]:
        match s:
            case K.GFence():
                return fence(s, env, ids)
            case K.GArrive():
                return arrive(s, env)
            case K.GAwait():
                return await_(s)
            case K.GMbarriers():
                return mbarriers(s)
        return (s,)

    return replace(kernel, body=K.map_body(kernel.body, rewrite))


def leader(m: ThreadMapping, env) -> str:
    """The first thread of collective `m` (in this CTA)."""
    off = offset_c(m, env)
    if m.ctas > 1:
        return f"gs_t % {m.launch.block_dim} == ({off}) % {m.launch.block_dim}"
    return f"gs_t == {off}" if off != "0" else "gs_t == 0"


# ---------------------------------------------------------------------- Fence
def fence(s: K.GFence, env, ids) -> tuple[K.GStmt, ...]:
    pre, post = sync_tl(s.pre).full, sync_tl(s.post).full
    out: list[K.GStmt] = [K.GComment(f"Fence({s.pre}, {s.post}) by "
                                     f"{s.mapping.describe()}", s.span)]
    if QualTL.SM80_CP_ASYNC in pre:
        out.append(K.GPrim("gs_cp_async_wait_all();", s.span))
    if QualTL.TMA_TO_GMEM_ASYNC in pre:
        # Note: no lowering here issues a bulk store (Arrive(tma_to_gmem_async) is
        # unsupported), so the wait finds no group; gs_bulk_wait_all is the PTX on a
        # GPU and, exactly so, a no-op on the cpu harness (it was "unsupported" there)
        out.append(K.GPrim("gs_bulk_wait_all();", s.span))
    if post & ASYNC_PROXY and pre & GENERIC:
        out.append(K.GPrim("gs_fence_proxy_async();", s.span))
    if not sync_tl(s.pre).temporal - REGISTERS:
        # Note: registers belong to one thread; ordering them needs program order
        # only (a real wgmma would take wgmma.fence here; ours is synchronous).
        out.append(K.GComment("register timelines only: program order suffices",
                              s.span))
    elif not active("gpuir-fence-dropped"):
        out.extend(K.GPrim(t, s.span) for t in barrier(s.mapping, env, ids, s.span))
    return tuple(out)


def barrier(m: ThreadMapping, env, ids: dict[int, int], span) -> list[str]:
    """The hardware barrier spanning exactly the threads of collective `m`."""
    b, c = m.launch.block_dim, m.launch.cluster_dim
    if m.size == 1:
        return []
    if m.ctas == 1 and m.length == b * c and c > 1:
        return [CLUSTER_ARRIVE, CLUSTER_WAIT]
    if m.ctas != 1 or m.length > b or b % m.length:
        raise unsupported(f"a Fence over {m.describe()}", span)
    if m.length == b:
        return ["__syncwarp();" if active("gpuir-cta-fence-as-syncwarp")
                else "__syncthreads();"]
    off = offset_c(m, env)
    if m.length < 32 and 32 % m.length == 0:
        lanes = (1 << m.length) - 1
        return [f"__syncwarp({lanes:#x}u << (({off}) % 32));"]
    if m.length == 32:
        return ["__syncwarp();"]
    if m.length % 32:
        raise unsupported(f"a Fence over {m.describe()}", span)
    if m.length not in ids:
        ids[m.length] = 1 + sum(b // n for n in ids)
    first = ids[m.length]
    if first + b // m.length > MAX_NAMED:
        raise unsupported("more than 15 named barriers", span)
    slot = f"(({off}) % {b}) / {m.length}"
    return [f"gs_bar_sync({first} + {slot}, {m.length});"]


# ----------------------------------------------------------------- split barriers
def _cell(ref: K.BarRef, span) -> str:
    if ref.index is None:
        raise unsupported(f"an Arrive/Await on every cell of {ref.name}", span)
    return ref.index


def mbar_slot(ref: K.BarRef, span) -> str:
    """The mbarrier the next arrive of this thread on `ref`'s cell signals: the cell
    itself, or in a ring (GMbarriers.ring) the slot of the thread's arrive count. A
    copy completing on the barrier (`instr >> raw[cta]`) uses the same slot: the
    issuing thread's next arrive on it is the one that expects its bytes."""
    i = _cell(ref, span)
    if ref.ring == 1:
        return f"&{ref.name}[{i}]"
    return f"&{ref.name}[({i}) * {ref.ring} + gs_na_{ref.name}[{i}] % {ref.ring}u]"


def arrive(s: K.GArrive, env) -> tuple[K.GStmt, ...]:
    out: list[K.GStmt] = [K.GComment(f"Arrive({s.tl}, {s.n}) by "
                                     f"{s.mapping.describe()}", s.span)]
    if s.n != 1:
        raise unsupported(f"Arrive with count {s.n}", s.span)
    seen: set[tuple[str, str | None]] = set()
    for ref in s.barriers:
        match ref.kind:
            case "mbarrier":
                if (ref.name, ref.index) in seen:
                    continue  # raw[cta], raw[0:2]: the own CTA's cell once
                seen.add((ref.name, ref.index))
                p = mbar_slot(ref, s.span)
                multicast = any(r.multicast for r in s.barriers
                                if (r.name, r.index) == (ref.name, ref.index))
                if multicast and s.tl == "Sm80_cp_async":
                    raise unsupported(f"a cp.async arrive on {ref.name} in other "
                                      "CTAs", s.span)
                if s.tl == "Sm80_cp_async":
                    out.append(K.GPrim(f"gs_cp_async_mbar_arrive_noinc({p});", s.span))
                elif s.tx_bytes and s.mapping.size == 1:
                    out.append(K.GPrim(f"gs_mbar_arrive_expect_tx({p}, "
                                       f"{s.tx_bytes}u);", s.span))
                elif s.tx_bytes:
                    out.append(K.GPrim(
                        f"if ({leader(s.mapping, env)}) "
                        f"gs_mbar_arrive_expect_tx({p}, {s.tx_bytes}u); "
                        f"else gs_mbar_arrive({p});", s.span))
                else:
                    out.append(K.GPrim(f"gs_mbar_arrive({p});", s.span))
                if multicast:  # the same cell in the other CTAs (mapa + remote arrive)
                    c = s.mapping.launch.cluster_dim
                    out.append(K.GPrim(
                        f"for (unsigned gs_c = 0; gs_c < {c}u; gs_c++) if (gs_c != "
                        f"(unsigned)gs_rank) gs_mbar_arrive_remote({p}, gs_c);",
                        s.span))
                if ref.ring > 1:
                    out.append(K.GPrim(f"gs_na_{ref.name}[{_cell(ref, s.span)}]++;",
                                       s.span))
            case "commit_cp_async":
                out.append(K.GPrim("gs_cp_async_commit();", s.span))
            case "commit_wgmma":
                out.append(K.GComment("wgmma.commit_group: the wgmma lowering is "
                                      "synchronous (instr.py), nothing is pending",
                                      s.span))
            case "cluster":
                out.append(K.GPrim(CLUSTER_ARRIVE, s.span))
            case _:
                raise unsupported(f"Arrive({s.tl}) on {ref.name} ({ref.kind})",
                                  s.span)
    return tuple(out)


def await_(s: K.GAwait) -> tuple[K.GStmt, ...]:
    ref = s.barrier
    head = K.GComment(f"Await({ref.name}, {s.tl}, {s.n}) by {s.mapping.describe()}",
                      s.span)
    match ref.kind:
        case "mbarrier" if ref.ring > 1:
            return (head, *ring_await(ref, s))
        case "mbarrier":
            if s.n != -1:
                raise unsupported(f"Await on an mbarrier with count {s.n} (only -1, "
                                  "the next phase)", s.span)
            i = _cell(ref, s.span)
            wait = K.GPrim(f"gs_mbar_wait_parity(&{ref.name}[{i}], "
                           f"(gs_ph_{ref.name} >> ({i})) & 1u);", s.span)
            flip = K.GPrim(f"gs_ph_{ref.name} ^= 1u << ({i});", s.span)
            return (head,
                    *(() if active("gpuir-mbar-wait-dropped") else (wait,)),
                    *(() if active("gpuir-mbar-parity-stuck") else (flip,)))
        case "commit_cp_async":
            if active("gpuir-cp-async-wait-dropped"):
                return (head,)
            if s.n < 0:
                return (head, K.GPrim("gs_cp_async_wait_all();", s.span))
            return (head, K.GPrim(f"gs_cp_async_wait_group({s.n});", s.span))
        case "commit_wgmma":
            return (head, K.GComment("wgmma.wait_group: synchronous wgmma lowering",
                                     s.span))
        case "cluster":
            return (head, K.GPrim(CLUSTER_WAIT, s.span))
    raise unsupported(f"Await on {ref.name} ({ref.kind})", s.span)


def ring_await(ref: K.BarRef, s: K.GAwait) -> tuple[K.GStmt, ...]:
    """Await(z, tl, n), n < 0, on a ring: the thread's w-th await on the cell waits
    for arrive number w + n + 1 (Figure 22's Max = w + n + 1; none when negative: the
    first -n - 1 awaits of Await ~3 pass), on its slot of the ring, with the parity
    of its round."""
    if s.n >= 0:
        raise unsupported(f"Await on an mbarrier with count {s.n}", s.span)
    i, r = _cell(ref, s.span), ref.ring
    wait = (f"  if (gs_m >= 0) gs_mbar_wait_parity(&{ref.name}[({i}) * {r} + gs_m % "
            f"{r}], (unsigned)(gs_m / {r}) & 1u);")
    lines = [f"{{ const int gs_m = (int)gs_nw_{ref.name}[{i}] - {-s.n - 1};"
             if s.n != -1 else f"{{ const int gs_m = (int)gs_nw_{ref.name}[{i}];",
             *(() if active("gpuir-mbar-wait-dropped") else (wait,)),
             f"  gs_nw_{ref.name}[{i}]++;", "}"]
    return (K.GPrim("\n".join(lines), s.span),)


def mbarriers(s: K.GMbarriers) -> tuple[K.GStmt, ...]:
    if s.count * s.ring > 32:
        raise unsupported(f"more than 32 mbarriers in {s.name}", s.span)
    if s.ring > 1:
        return ring_mbarriers(s)
    init = (f"if (threadIdx.x == 0) for (int gs_i = 0; gs_i < {s.count}; gs_i++) "
            f"gs_mbar_init(&{s.name}[gs_i], {s.arrivals}u);")
    publish = [K.GPrim(CLUSTER_ARRIVE, s.span), K.GPrim(CLUSTER_WAIT, s.span)] \
        if s.cluster else [K.GPrim("__syncthreads();", s.span)]
    if s.cluster:
        publish.insert(0, K.GPrim("gs_fence_mbarrier_init_cluster();", s.span))
    return (K.GComment(f"{s.name}: {s.count} mbarrier(s), {s.arrivals} arrival(s) "
                       "per phase", s.span),
            K.GShared(s.name, "gs_u64", s.count, s.span),
            K.GPrim(init, s.span), *publish,
            K.GPrim(f"unsigned gs_ph_{s.name} = 0u;  // parity of the next phase "
                    "awaited, per cell", s.span))


def ring_mbarriers(s: K.GMbarriers) -> tuple[K.GStmt, ...]:
    n = s.count * s.ring
    init = (f"if (threadIdx.x == 0) for (int gs_i = 0; gs_i < {n}; gs_i++) "
            f"gs_mbar_init(&{s.name}[gs_i], {s.arrivals}u);")
    publish = [K.GPrim("gs_fence_mbarrier_init_cluster();", s.span),
               K.GPrim(CLUSTER_ARRIVE, s.span), K.GPrim(CLUSTER_WAIT, s.span)] \
        if s.cluster else [K.GPrim("__syncthreads();", s.span)]
    return (K.GComment(f"{s.name}: {s.count} cell(s), each a ring of {s.ring} "
                       f"mbarriers, {s.arrivals} arrival(s) per phase", s.span),
            K.GShared(s.name, "gs_u64", n, s.span),
            K.GPrim(init, s.span), *publish,
            K.GPrim(f"unsigned gs_na_{s.name}[{s.count}] = {{}};  // arrives so far, "
                    "per cell", s.span),
            K.GPrim(f"unsigned gs_nw_{s.name}[{s.count}] = {{}};  // awaits so far, "
                    "per cell", s.span))
