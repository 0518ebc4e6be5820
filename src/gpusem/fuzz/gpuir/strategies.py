"""Hypothesis strategies for GPU IR kernels with random shared-memory traffic and
random synchronisation (issue 5: "generators of GPU IR programs with random loops,
accesses and synchronisation, some correct, some not"), for the seq = par property.

A generated kernel stages a tile of `A` in shared memory, then runs a few phases; each
phase every thread reads one or two cells of the previous phase's buffer at a
permuted index and writes its own cell of the other buffer (ping-pong), and ends
with a synchronisation drawn from: a CTA Fence (__syncthreads), a warp Fence (enough
only when every read stays inside the reader's warp), an mbarrier Arrive/Await pair,
or nothing (a race unless the phase reads only the thread's own cell). The last
phase writes `B`. So the sync checker must accept some and reject others, and the
compiled kernel must agree with the sequential reading whenever it accepts.

A phase may instead copy a permuted tile of `A` into the buffer with Sm80 cp.async;
only a Fence on Sm80_cp_async (cp.async.wait_all + __syncthreads) makes it land
before the next phase reads it (the cpu harness performs such copies lazily, at the
wait, so a missing wait shows).

A phase may be skewed: warp 0 alone passes a warp-scope Fence before its writes. On
the cpu harness (fibres run until they block, woken ones in the next round) that
blocking point lets the other warps run ahead into the next phase, so a missing
CTA-wide barrier shows as a witness instead of hiding behind the round structure.

Issue 14 item 7 (blind spots): every Figure 5 row, Figure 19 case, Figure 16 row and
AMIR check must be reached (fuzz/gpuir/coverage.py counts it). So a phase may also
fence with any pair of sync timelines of Figure 16 (`fence`), accumulate with `+=` in
a seq loop (`accumulate`), split its write between two guards (`guard`), add with an
atomic (`atomic`: Figure 19's atomic case; into the thread's own cell, so exact),
specialise warp 0 with CudaWarps (`warps`), or arrive on its mbarrier without the
matching Await (`arrive-only`: CheckBarrier's near miss; on a barrier of its own
when the kernel also has Arrive/Await pairs, which it would otherwise deadlock); and
a kernel may end with
host code (`host`): the host reads the result with or without synchronising with the
stream first (the compiler lowers it as a last kernel of one thread, in stream order:
`compiler/gpuir_cuda/host.py`, so the kernel is compared; without the sync the checker
rejects it, and no run can show why: counted apart, `seqpar.not_compared_reason`).

A fence pair that lowers to a CTA barrier yet orders no in-order accesses
(`BARRIER_ONLY`) is followed by a cuda_in_order Fence, so that it reaches its Figure 16
rows without making a rejection no schedule can witness.

Draws are local (each phase its own), small values shrink first (fewer phases, a CTA
Fence on cuda_in_order, the identity permutation, no variants), so a failure shrinks
to a short program.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

SYNCS = ("cta", "warp", "mbarrier", "none", "sm80", "arrive-only")
# A CTA Fence's (pre, post) sync timelines: every row of Figure 16 appears (the host
# rows, cpu_in_order and cuda_stream_sync, in the host epilogue). Index 0 first.
FENCE_PAIRS = (
    ("cuda_in_order", "cuda_in_order"), ("Sm80_generic", "cuda_in_order"),
    ("cuda_generic_and_async", "cuda_in_order"), ("cuda_in_order", "cuda_temporal"),
    ("cuda_temporal", "cuda_in_order"), ("empty_sync_tl", "cuda_in_order"),
    ("cuda_in_order", "empty_sync_tl"), ("wgmma_fence_1", "wgmma_fence_2"),
    ("wgmma_async", "cuda_in_order"), ("cuda_async_proxy", "cuda_in_order"),
    ("cuda_in_order", "cuda_async_proxy"), ("cuda_async_proxy_wgmma", "cuda_in_order"),
    ("tma_to_smem_async", "cuda_in_order"), ("tma_to_gmem_async", "cuda_in_order"),
    ("wgmma_async_smem", "cuda_in_order"), ("Sm80_cp_async", "cuda_in_order"),
)
# The pairs that lower to a CTA barrier (__syncthreads, which orders every access) yet
# do not order a phase's in-order accesses in AMIR (Figure 16): a phase ordered by one
# alone is rejected, and no schedule on any backend can witness it (a false positive
# by construction: issue 31.6 counted them among the programs not compared). Such a
# Fence is followed by Fence(cuda_in_order, cuda_in_order): its Figure 16 rows are
# still reached, and the phase is ordered as the checker reads it. The other pairs
# order the phase (0-2) or lower to no barrier (5, 7: the race shows, a witness);
# tests/fuzz/test_gpuir_target.py pins the split against the checker and the harness.
BARRIER_ONLY = frozenset({3, 4, 6, 8, 9, 10, 11, 12, 13, 14, 15})


@dataclass(frozen=True)
class Phase:
    mul: int          # odd: tid -> (mul * tid + add) % n is a permutation
    add: int
    local: bool       # permute inside the reader's warp only
    two_reads: bool
    op: str
    sync: str
    skew: bool = False  # warp 0 alone passes a warp Fence first (see render)
    copy: bool = False  # an Sm80 cp.async phase: buf[dst, tid] <- A[perm(tid)]
    fence: int = 0      # FENCE_PAIRS index of a "cta" sync
    accumulate: bool = False  # target += rhs in `for r in seq(0, 2)`
    guard: bool = False       # the write split between `if tid < h` / `if tid >= h`
    atomic: bool = False      # target += read by cuda_atomic_add_f32 (own cell)
    warps: bool = False       # the skew by `with CudaWarps(0, 1)`


@dataclass(frozen=True)
class Kernel:
    block: int
    tasks: int
    phases: tuple[Phase, ...]
    host: bool = False       # a host epilogue reads B[0] into H (after the kernel)
    host_sync: bool = False  # ... after Fence(cuda_stream_sync, cpu_in_order)

    def source(self, name: str = "gen") -> str:
        return render(self, name)


def _index(p: Phase, block: int, var: str = "tid") -> str:
    if p.local:
        return f"{var} / 32 * 32 + ({p.mul} * {var} + {p.add}) % 32"
    return f"({p.mul} * {var} + {p.add}) % {block}"


def render(k: Kernel, name: str = "gen") -> str:
    b = k.block
    n = b * k.tasks
    host = ", H: f32[1] @ DRAM" if k.host else ""
    lines = [
        f"proc {name}(A: f32[{n}] @ CudaGmemLinear, B: f32[{n}] @ CudaGmemLinear"
        f"{host}):",
        f"    with CudaDeviceFunction(blockDim={b}):",
        f"        for task in cuda_tasks(0, {k.tasks}):",
        f"            buf: f32[2, {b}] @ CudaSmemLinear",
        *(["            bar: barrier @ CudaMbarrier"]
          if any(p.sync in ("mbarrier", "arrive-only") for p in k.phases) else []),
        *(["            lone: barrier @ CudaMbarrier"] if _lone(k) else []),
        f"            for tid in cuda_threads(0, {b}, unit=cuda_thread):",
        f"                buf[0, tid] = A[task * {b} + tid]",
        "            Fence(cuda_in_order, cuda_in_order)",
    ]
    for i, p in enumerate(k.phases):
        src, dst = i % 2, (i + 1) % 2
        last = i == len(k.phases) - 1
        target = f"B[task * {b} + tid]" if last else f"buf[{dst}, tid]"
        read = f"buf[{src}, {_index(p, b)}]"
        rhs = f"{read} {p.op} buf[{src}, tid]" if p.two_reads else f"{read} {p.op} 1.5"
        if p.copy and not last:  # asynchronous: lands at a cp.async wait (sm80)
            g = f"task * {b} + {_index(p, b)}"
            lines.append(f"            for tid in cuda_threads(0, {b}, "
                         "unit=cuda_thread):")
            lines.append(f"                Sm80_cp_async_f32(buf[{dst}, tid:tid + 1], "
                         f"A[{g}:{g} + 1])")
            lines += _sync(p.sync, b, lone=_lone(k))
            continue
        if p.skew:
            lines += (["            with CudaWarps(0, 1):"] if p.warps else
                      ["            for w in cuda_threads(0, 1, unit=cuda_warp):"])
            lines.append("                Fence(cuda_in_order, cuda_in_order)")
        lines.append(f"            for tid in cuda_threads(0, {b}, unit=cuda_thread):")
        # an update (+=, atomic add) reads its target: B (an input) or a buffer an
        # earlier phase wrote (unwritten shared memory is undefined in parallel)
        lines += _write(p, target, read, rhs, b, updates=last or i >= 2)
        # Note: Fence(Sm80_cp_async, ..) orders no in-order accesses (Figure 16), yet
        # lowers to wait_all + __syncthreads: after an in-order phase it would be a
        # rejection no schedule can witness, so such phases take a CTA Fence.
        lines += _sync("cta" if p.sync == "sm80" else p.sync, b, p.fence, _lone(k))
    if lines[-1] != "            Fence(cuda_in_order, cuda_in_order)":
        lines.append("            Fence(cuda_in_order, cuda_in_order)")  # before free
    if k.host:  # host code: the stream synchronisation, then the host's read
        if k.host_sync:
            lines.append("    Fence(cuda_stream_sync, cpu_in_order)")
        lines.append("    H[0] = B[0]")
    return "\n".join(lines) + "\n"


def _write(p: Phase, target: str, read: str, rhs: str, b: int,
           updates: bool) -> list[str]:
    """The phase's write of `target` (one thread's cell), in its variant."""
    ind = "                "
    if p.atomic and updates:  # Figure 19's atomic case, into the thread's own cell
        cell = target.replace("]", "")
        lo = cell[cell.rindex(", ") + 2:] if ", " in cell else cell[2:]
        name = cell[:cell.index("[")]
        head = cell[:cell.rindex(", ") + 2] if ", " in cell else f"{name}["
        src = read.replace("]", "")
        src_head, src_i = src[:src.rindex(", ") + 2], src[src.rindex(", ") + 2:]
        return [ind + f"cuda_atomic_add_f32({head}{lo}:{lo} + 1], "
                f"{src_head}{src_i}:{src_i} + 1])"]
    op = "+=" if p.accumulate and updates else "="
    stmt = f"{target} {op} {rhs}"
    if p.accumulate and updates:
        out = [ind + "for r in seq(0, 2):", ind + "    " + stmt]
    else:
        out = [ind + stmt]
    if not p.guard:
        return out
    half = b // 2
    return ([ind + f"if tid < {half}:"] + ["    " + x for x in out]
            + [ind + f"if tid >= {half}:"] + ["    " + x for x in out])


def _lone(k: Kernel) -> bool:
    """Whether the kernel's arrive-only phases arrive on a barrier of their own:
    when it also has Arrive/Await pairs. On `bar`, an arrive-only phase before a pair
    shifted the pair's phase, so its Await waited for a phase that never completes:
    a deadlock, which the cpu harness sees at once but which costs a GPU run its
    watchdog and a new CUDA worker (issue 31.6). CheckBarrier's near miss stays (the
    lone barrier has arrives and no await)."""
    syncs = {p.sync for p in k.phases}
    return "arrive-only" in syncs and "mbarrier" in syncs


def _sync(kind: str, block: int, fence: int = 0, lone: bool = False) -> list[str]:
    ind = "            "
    match kind:
        case "cta":
            pre, post = FENCE_PAIRS[fence]
            ordered = [ind + "Fence(cuda_in_order, cuda_in_order)"] \
                if fence in BARRIER_ONLY else []
            return [ind + f"Fence({pre}, {post})", *ordered]
        case "warp":
            return [ind + f"for w in cuda_threads(0, {block // 32}, unit=cuda_warp):",
                    ind + "    Fence(cuda_in_order, cuda_in_order)"]
        case "sm80":  # cp.async.wait_all, then __syncthreads
            return [ind + "Fence(Sm80_cp_async, cuda_in_order)"]
        case "mbarrier":
            return [ind + "Arrive(cuda_in_order, 1) >> bar",
                    ind + "Await(bar, cuda_in_order, -1)"]
        case "arrive-only":  # the Await is missing: a near miss (CheckBarrier)
            return [ind + f"Arrive(cuda_in_order, 1) >> {'lone' if lone else 'bar'}"]
    return []


@st.composite
def phases(draw) -> Phase:
    return Phase(mul=2 * draw(st.integers(0, 3)) + 1, add=draw(st.integers(0, 40)),
                 local=draw(st.booleans()), two_reads=draw(st.booleans()),
                 op=draw(st.sampled_from(("+", "*", "-"))),
                 sync=draw(st.sampled_from(SYNCS)), skew=draw(st.booleans()),
                 copy=draw(st.booleans()),
                 fence=draw(st.integers(0, len(FENCE_PAIRS) - 1)),
                 accumulate=draw(st.booleans()), guard=draw(st.booleans()),
                 atomic=draw(st.booleans()), warps=draw(st.booleans()))


@st.composite
def kernels(draw, max_phases: int = 3) -> Kernel:
    """A GPU IR kernel as above (render with `.source()`)."""
    block = draw(st.sampled_from((32, 64)))
    tasks = draw(st.integers(1, 2))
    ps = tuple(draw(st.lists(phases(), min_size=1, max_size=max_phases)))
    host = draw(st.integers(0, 7)) == 7
    return Kernel(block, tasks, ps, host, host and draw(st.booleans()))


def kernels_from_random(rng, max_phases: int = 3) -> Kernel:
    """The same distribution as `kernels()`, drawn from a `random.Random` (for
    campaigns that batch many programs per build without hypothesis' engine); the
    variants are rarer than hypothesis draws them, so most programs stay plain."""
    def phase() -> Phase:
        p = Phase(2 * rng.randint(0, 3) + 1, rng.randint(0, 40), rng.random() < .5,
                  rng.random() < .5, rng.choice(("+", "*", "-")),
                  rng.choice(SYNCS[:-1]), rng.random() < .5, rng.random() < .3)
        v = rng.random()
        extra = {"fence": rng.randrange(len(FENCE_PAIRS))} if v < .3 else \
            {"accumulate": True} if v < .4 else {"guard": True} if v < .5 else \
            {"atomic": True} if v < .6 else {"warps": True} if v < .7 else \
            {"sync": "arrive-only"} if v < .75 else {}
        from dataclasses import replace

        return replace(p, **extra)

    ps = tuple(phase() for _ in range(rng.randint(1, max_phases)))
    k = Kernel(rng.choice((32, 64)), rng.randint(1, 2), ps)
    if rng.random() < 1 / 8:
        from dataclasses import replace

        k = replace(k, host=True, host_sync=rng.random() < .5)
    return k


def simpler(k: Kernel):
    """Candidate simplifications of `k`, most aggressive first (the shrink passes:
    drop a phase, drop a task, narrow the block, then simplify one phase field)."""
    from dataclasses import replace

    for i in range(len(k.phases)):
        if len(k.phases) > 1:
            yield replace(k, phases=k.phases[:i] + k.phases[i + 1:])
    if k.host:
        yield replace(k, host=False, host_sync=False)
    if k.tasks > 1:
        yield replace(k, tasks=1)
    if k.block > 32:
        yield replace(k, block=32)
    plain = Phase(1, 0, False, False, "+", "cta")
    for i, p in enumerate(k.phases):
        for field in ("skew", "two_reads", "local", "copy", "add", "mul", "op", "sync",
                      "fence", "accumulate", "guard", "atomic", "warps"):
            q = replace(p, **{field: getattr(plain, field)})
            if q != p:
                yield replace(k, phases=k.phases[:i] + (q,) + k.phases[i + 1:])


def shrink(k: Kernel, fails, budget: int = 60) -> Kernel:
    """Greedy shrinking: keep the first simpler kernel for which `fails` still holds,
    until none does (or `budget` candidates were tried)."""
    tried = 0
    progress = True
    while progress and tried < budget:
        progress = False
        for cand in simpler(k):
            tried += 1
            if fails(cand):
                k, progress = cand, True
                break
            if tried >= budget:
                break
    return k
