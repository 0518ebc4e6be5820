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
