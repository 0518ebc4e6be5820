"""Generated Sm80 cp.async pipelines for the Exo verdict differential: the await-phase
arithmetic of commit groups (Figure 22's Await: N >= 0 waits for all but the newest
N groups) is where a checker's barrier semantics show.

A pipeline has `stages` buffers and prefetches `stages - 1` tiles: a prologue issues
and commits the first `stages - 1` copies (one commit group per thread), iteration k
issues the copy of tile k + stages - 1 (or an empty group past the end), commits, and
waits with `Await(cg[tid], cuda_in_order, stages - 1)` (all but the newest
stages - 1 groups: tile k has landed), then a CTA Fence shares the tile, every thread
reads it at a permuted index, and a second Fence orders those reads before the buffer
is refilled (WAR against the asynchronous copy). A final `Await(.., 0)` drains the
empty groups, so arrive and await counts agree at the free.

Near misses (`PIPE_MUTATIONS`): the wait one group too late (`lag`, the wrong phase),
the sharing Fence dropped, the WAR Fence dropped or weakened to `Fence(cuda_in_order,
cuda_temporal)`, the final drain dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

PIPE_MUTATIONS = ("lag", "drop-share", "drop-war", "weaken-war", "drop-drain")


@dataclass(frozen=True)
class Pipeline:
    block: int
    stages: int
    tiles: int
    mul: int = 1
    add: int = 0
    tasks: int = 1
    mutation: str = ""

    def source(self, name: str = "gen") -> str:
        return render_pipeline(self, name)

    def defines(self) -> dict[str, int]:
        return {}


def render_pipeline(p: Pipeline, name: str = "gen") -> str:
    b, s, t = p.block, p.stages, p.tiles
    n = b * t * p.tasks
    lag = s - 1 + (1 if p.mutation == "lag" else 0)
    per = b * t

    def copy(k: str, pad: str) -> list[str]:
        g = f"task * {per} + ({k}) * {b} + tid"
        return [f"{pad}Sm80_cp_async_f32(buf[({k}) % {s}, tid:tid + 1], "
                f"A[{g}:{g} + 1])"]

    pad = "            "
    lines = [f"proc {name}(A: f32[{n}] @ CudaGmemLinear, B: f32[{n}] @ CudaGmemLinear):",
             f"    with CudaDeviceFunction(blockDim={b}):",
             f"        for task in cuda_tasks(0, {p.tasks}):",
             f"{pad}buf: f32[{s}, {b}] @ CudaSmemLinear",
             f"{pad}cg: barrier[{b}] @ CudaCommitGroup",
             f"{pad}for tid in cuda_threads(0, {b}, unit=cuda_thread):"]
    for k in range(s - 1):
        lines += copy(str(k), pad + "    ")
        lines.append(f"{pad}    Arrive(Sm80_cp_async, 1) >> cg[tid]")
    lines += [f"{pad}for k in seq(0, {t}):",
              f"{pad}    for tid in cuda_threads(0, {b}, unit=cuda_thread):",
              f"{pad}        if k < {t - (s - 1)}:"]
    lines += copy(f"k + {s - 1}", pad + "            ")
    lines += [f"{pad}        Arrive(Sm80_cp_async, 1) >> cg[tid]",
              f"{pad}        Await(cg[tid], cuda_in_order, {lag})"]
    if p.mutation != "drop-share":
        lines.append(f"{pad}    Fence(cuda_in_order, cuda_in_order)")
    lines += [f"{pad}    for tid in cuda_threads(0, {b}, unit=cuda_thread):",
              f"{pad}        B[task * {per} + k * {b} + tid] = "
              f"buf[k % {s}, ({p.mul} * tid + {p.add}) % {b}] * 2.0"]
    if p.mutation == "weaken-war":
        lines.append(f"{pad}    Fence(cuda_in_order, cuda_temporal)")
    elif p.mutation != "drop-war":
        lines.append(f"{pad}    Fence(cuda_in_order, cuda_in_order)")
    if p.mutation != "drop-drain":
        lines += [f"{pad}for tid in cuda_threads(0, {b}, unit=cuda_thread):",
                  f"{pad}    Await(cg[tid], cuda_in_order, 0)"]
    return "\n".join(lines) + "\n"


@st.composite
def pipelines(draw) -> Pipeline:
    stages = draw(st.integers(2, 3))
    return Pipeline(
        block=draw(st.sampled_from((32, 64, 128))), stages=stages,
        tiles=draw(st.integers(stages, stages + 2)),
        mul=2 * draw(st.integers(0, 3)) + 1, add=draw(st.integers(0, 40)),
        tasks=draw(st.integers(1, 2)),
        mutation=draw(st.sampled_from(("",) * 2 + PIPE_MUTATIONS)))


# ------------------------------------------------- mbarrier pipelines (issue 26)

MBAR_MUTATIONS = ("narrow-ring", "drop-tail-fence", "early-read")


@dataclass(frozen=True)
class MbarPipeline:
    """An mbarrier ring (the paper's `Await(bar, tl, ~lag)`: wait for the arrival
    `lag` before the newest; Exo-GPU lowers it to a ring of lag + 1 mbarriers): each
    iteration k writes stage k % stages, arrives, awaits with lag `lag`, and reads
    stage (k - lag) % stages, `lag` iterations behind the writes. Reuse of a stage
    is ordered by the ring when stages >= 2 * lag + 2 (the write of iteration m
    waits for the arrival after the last read of the stage it overwrites); a CTA
    Fence after the loop orders the last `lag` stages' reads. `cluster` > 1
    launches clusters of that many CTAs (Exo's clusterDim), each CTA one task.
    The code differential's mbarrier pipeline of several stages (issue 26, item 2).
    Near misses: too few stages for the lag (`narrow-ring`), the fence before the
    last reads dropped, the read one iteration early (`early-read`)."""

    lag: int = 1
    iters: int = 4
    block: int = 64
    mul: int = 1
    add: int = 0
    tasks: int = 1
    cluster: int = 1
    mutation: str = ""

    def source(self, name: str = "gen") -> str:
        return render_mbar_pipeline(self, name)

    def defines(self) -> dict[str, int]:
        return {}


def render_mbar_pipeline(p: MbarPipeline, name: str = "gen") -> str:
    lag, it, b, c = p.lag, p.iters, p.block, p.cluster
    s = 2 * lag + (1 if p.mutation == "narrow-ring" else 2)
    behind = lag - 1 if p.mutation == "early-read" else lag
    per = it * b
    n = per * p.tasks * c
    pad = "            "
    perm = f"({p.mul} * tid + {p.add}) % {b}"
    lines = [f"proc {name}(A: f32[{n}] @ CudaGmemLinear, B: f32[{n}] @ CudaGmemLinear):"]
    if c > 1:  # a task is a cluster: its smem and barriers distributed over CTAs
        lines += [f"    with CudaDeviceFunction(blockDim={b}, clusterDim={c}):",
                  f"        for task in cuda_tasks(0, {p.tasks}):",
                  f"{pad}buf: f32[{c}, {s}, {b}] @ CudaSmemLinear",
                  f"{pad}bar: barrier[{c}] @ CudaMbarrier"]
        at, z, g = "cta, ", "bar[cta]", f"task * {c * per} + cta * {per}"
        inner = [f"for cta in cuda_threads(0, {c}, unit=cuda_cta_in_cluster):"]
    else:
        lines += [f"    with CudaDeviceFunction(blockDim={b}):",
                  f"        for task in cuda_tasks(0, {p.tasks}):",
                  f"{pad}buf: f32[{s}, {b}] @ CudaSmemLinear",
                  f"{pad}bar: barrier @ CudaMbarrier"]
        at, z, g, inner = "", "bar", f"task * {per}", []
    d = "    " * len(inner)  # one level deeper inside the CTA loop
    body = [f"for tid in cuda_threads(0, {b}, unit=cuda_thread):",
            f"    buf[{at}k % {s}, tid] = A[{g} + k * {b} + tid]",
            f"Arrive(cuda_in_order, 1) >> {z}",
            f"Await({z}, cuda_in_order, {-lag - 1})",
            f"for tid in cuda_threads(0, {b}, unit=cuda_thread):",
            f"    if k >= {behind}:",
            f"        B[{g} + (k - {behind}) * {b} + tid] = "
            f"buf[{at}(k - {behind}) % {s}, {perm}] * 2.0"]
    lines += [f"{pad}{x}" for x in inner]  # the CTA loop outside the stages
    lines.append(f"{pad}{d}for k in seq(0, {it}):")
    lines += [f"{pad}    {d}{x}" for x in body]
    tail = [] if p.mutation == "drop-tail-fence" else [
        "Fence(cuda_in_order, cuda_in_order)"]
    tail += [f"for j in seq({it - behind}, {it}):",
             f"    for tid in cuda_threads(0, {b}, unit=cuda_thread):",
             f"        B[{g} + j * {b} + tid] = buf[{at}j % {s}, {perm}] * 2.0"]
    lines += [f"{pad}{x}" for x in inner] + [f"{pad}{d}{x}" for x in tail]
    # the fence before the free: the whole task (a cluster's, when clustered)
    lines.append(f"{pad}Fence(cuda_in_order, cuda_in_order)")
    return "\n".join(lines) + "\n"


@st.composite
def mbar_pipelines(draw, cluster: bool = False) -> MbarPipeline:
    lag = draw(st.integers(1, 2))
    tasks = draw(st.integers(1, 2))
    return MbarPipeline(
        lag=lag, iters=draw(st.integers(lag + 1, lag + 4)),
        block=draw(st.sampled_from((32, 64, 128))),
        mul=2 * draw(st.integers(0, 3)) + 1, add=draw(st.integers(0, 40)),
        tasks=tasks, cluster=2 if cluster else 1,
        # half near misses, as an index: sampled_from drew drop-tail-fence in most
        # clustered rings of a round, which left the compile census few to run
        mutation=_near_miss(draw(st.integers(0, 5))))


def _near_miss(i: int) -> str:
    return MBAR_MUTATIONS[i - 3] if i >= 3 else ""
