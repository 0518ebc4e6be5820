"""The constructs the phase and pipeline generators never draw (issue 26, item 1), as a
family of their own for the Exo-GPU verdict differential:

  subset   warps [0, k) of the CTA write a shared buffer; the synchronisation is then
           issued by the whole CTA, by the writers only, or by the *other* warps
           (a `Fence` or an mbarrier `Arrive` executed by warps that did not do the
           writes: Figure 5 orders only the issuing threads' own accesses), and every
           thread reads a writer's cell
  chain    two or three synchronisations in a row at different granularities (a warp
           Fence, a CTA Fence, a temporal Fence, an mbarrier Arrive/Await) between
           the writer and a reader at a drawn locality: does visibility compose
           along the chain (Figure 16's transitivity)?
  awaits   one Arrive, awaited twice: by two disjoint warp sets, or by the whole CTA
           on two sync timelines (`cuda_in_order`, `cuda_temporal`); gpusem's
           CheckBarrier (Figure 7) pairs each Await with one Arrive and rejects both
           forms at the barrier's free: the question is what Exo's checker says
  host     DRAM parameters, a CPU loop writing host memory, `cudaMemsetAsync0` and
           `cudaMemcpyAsync` to the device, a kernel, a copy back, the host fence
           `Fence(cuda_stream_sync, cpu_in_order)` and a CPU loop reading the result
           (the host-memory hazards the kernel-only families never compare)
  atomic   a CTA sums its tile into shared memory with `cuda_atomic_add_i32`
  tmared   an asynchronous TMA reduction of a shared tile into global memory

Each has its near misses (`NEAR_MISSES`). Exo-GPU has no counterpart of the last two
(compiler/gpuir_exo/emit.py says why), so the census counts them as not expressible,
construct by construct: a count of what the differential cannot compare.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

KINDS = ("subset", "chain", "awaits", "host", "atomic", "tmared")
ISSUERS = ("cta", "writers", "others", "arrive-writers", "arrive-others")
LINKS = ("warp", "cta", "temporal", "mbarrier")
NEAR_MISSES: dict[str, tuple[str, ...]] = {
    "host": ("", "", "drop-host-fence", "host-overwrites-source", "no-memset"),
    "atomic": ("", "drop-fence"),
    "tmared": ("", "drop-wait"),
}


@dataclass(frozen=True)
class ConstructProgram:
    kind: str
    block: int = 64
    writers: int = 1          # subset/awaits: warps [0, writers) write (or await)
    issuer: str = "cta"       # subset: who synchronises (ISSUERS)
    chain: tuple[str, ...] = ("cta",)  # chain: the synchronisations, writer first
    locality: str = "cta"     # chain: where the reader reads (own | warp | cta)
    tls: tuple[str, str] = ("cuda_in_order", "cuda_in_order")  # awaits
    split: bool = True        # awaits: by two warp sets (else the CTA twice)
    mul: int = 1
    add: int = 0
    tasks: int = 1
    mutation: str = ""

    def source(self, name: str = "gen") -> str:
        return render(self, name)

    def defines(self) -> dict[str, int]:
        return {"N": self.block * self.tasks} if self.kind == "host" else {}


PAD = "            "


def _perm(k: ConstructProgram, var: str, width: int) -> str:
    return f"({k.mul} * {var} + {k.add}) % {width}"


def _head(k: ConstructProgram, name: str, bar: bool) -> list[str]:
    b, n = k.block, k.block * k.tasks
    lines = [(f"proc {name}(A: f32[{n}] @ CudaGmemLinear, "
             f"B: f32[{n}] @ CudaGmemLinear):"),
             f"    with CudaDeviceFunction(blockDim={b}):",
             f"        for task in cuda_tasks(0, {k.tasks}):",
             f"{PAD}buf: f32[{b}] @ CudaSmemLinear"]
    if bar:
        lines.append(f"{PAD}bar: barrier @ CudaMbarrier")
    return lines


def _warps(lo: int, hi: int, body: list[str]) -> list[str]:
    return [f"{PAD}with CudaWarps({lo}, {hi}):"] + ["    " + x for x in body]


def _threads(count: int, body: list[str]) -> list[str]:
    return [f"{PAD}for tid in cuda_threads(0, {count}, unit=cuda_thread):"] + [
        f"{PAD}    {x}" for x in body]


def _link(link: str, b: int) -> list[str]:
    match link:
        case "warp":
            return [f"{PAD}for w in cuda_threads(0, {b // 32}, unit=cuda_warp):",
                    f"{PAD}    Fence(cuda_in_order, cuda_in_order)"]
        case "temporal":
            return [f"{PAD}Fence(cuda_in_order, cuda_temporal)"]
        case "mbarrier":
            return [f"{PAD}Arrive(cuda_in_order, 1) >> bar",
                    f"{PAD}Await(bar, cuda_in_order, -1)"]
    return [f"{PAD}Fence(cuda_in_order, cuda_in_order)"]


def render(k: ConstructProgram, name: str = "gen") -> str:
    match k.kind:
        case "subset":
            lines = _subset(k, name)
        case "chain":
            lines = _chain(k, name)
        case "awaits":
            lines = _awaits(k, name)
        case "host":
            lines = _host(k, name)
        case "atomic":
            lines = _atomic(k, name)
        case _:
            lines = _tmared(k, name)
    return "\n".join(lines) + "\n"


def _read_back(k: ConstructProgram, width: int) -> list[str]:
    b = k.block
    return _threads(b, [f"B[task * {b} + tid] = buf[{_perm(k, 'tid', width)}] + 1.5"]
                    ) + [f"{PAD}Fence(cuda_in_order, cuda_in_order)"]


def _subset(k: ConstructProgram, name: str) -> list[str]:
    b, w, nw = k.block, k.writers, k.block // 32
    lines = _head(k, name, k.issuer.startswith("arrive"))
    lines += _warps(0, w, _threads(32 * w, [f"buf[tid] = A[task * {b} + tid]"]))
    who = {"cta": None, "writers": (0, w), "others": (w, nw),
           "arrive-writers": (0, w), "arrive-others": (w, nw)}[k.issuer]
    if k.issuer.startswith("arrive"):
        assert who is not None
        lines += _warps(*who, [f"{PAD}Arrive(cuda_in_order, 1) >> bar"])
        lines.append(f"{PAD}Await(bar, cuda_in_order, -1)")
    elif who is None:
        lines.append(f"{PAD}Fence(cuda_in_order, cuda_in_order)")
    else:
        lines += _warps(*who, [f"{PAD}Fence(cuda_in_order, cuda_in_order)"])
    return lines + _read_back(k, 32 * w)


def _chain(k: ConstructProgram, name: str) -> list[str]:
    b = k.block
    lines = _head(k, name, "mbarrier" in k.chain)
    lines += _threads(b, [f"buf[tid] = A[task * {b} + tid]"])
    for link in k.chain:
        lines += _link(link, b)
    t = "tid"
    src = {"own": t, "warp": f"{t} / 32 * 32 + {_perm(k, t, 32)}",
           "cta": _perm(k, t, b)}[k.locality]
    return lines + _threads(b, [f"B[task * {b} + tid] = buf[{src}] + 1.5"]) + [
        f"{PAD}Fence(cuda_in_order, cuda_in_order)"]


def _awaits(k: ConstructProgram, name: str) -> list[str]:
    b, w, nw = k.block, k.writers, k.block // 32
    tl1, tl2 = k.tls
    lines = _head(k, name, True)
    lines += _threads(b, [f"buf[tid] = A[task * {b} + tid]"])
    lines.append(f"{PAD}Arrive(cuda_in_order, 1) >> bar")
    if k.split:
        lines += _warps(0, w, [f"{PAD}Await(bar, {tl1}, -1)"])
        lines += _warps(w, nw, [f"{PAD}Await(bar, {tl2}, -1)"])
    else:
        lines += [f"{PAD}Await(bar, {tl1}, -1)", f"{PAD}Await(bar, {tl2}, -1)"]
    return lines + _read_back(k, b)


def _host(k: ConstructProgram, name: str) -> list[str]:
    b, m = k.block, k.mutation
    lines = [(f"proc {name}(N: size, hA: f32[N] @ DRAM, hB: f32[N] @ DRAM, "
             "A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):"),
             "    for i in seq(0, N):",
             "        hA[i] = 1.0"]
    if m != "no-memset":
        lines.append("    cudaMemsetAsync0_1f32(N, B[0:N])")
    lines.append("    cudaMemcpyAsync_htod_1f32(N, A[0:N], hA[0:N])")
    if m == "host-overwrites-source":
        lines.append("    hA[0] = 2.0")
    op = "=" if m == "no-memset" else "+="
    lines += [f"    with CudaDeviceFunction(blockDim={b}):",
              f"        for task in cuda_tasks(0, N / {b}):",
              f"            for t in cuda_threads(0, {b}, unit=cuda_thread):",
              (f"                B[task * {b} + t] {op} A[task * {b} + "
              f"{_perm(k, 't', b)}]"),
              "    cudaMemcpyAsync_dtoh_1f32(N, hB[0:N], B[0:N])"]
    if m != "drop-host-fence":
        lines.append("    Fence(cuda_stream_sync, cpu_in_order)")
    return lines + ["    for i in seq(0, N):",
                    f"        hA[i] = hB[{_perm(k, 'i', b)}]"]


def _atomic(k: ConstructProgram, name: str) -> list[str]:
    b, n = k.block, k.block * k.tasks
    lines = [(f"proc {name}(A: i32[{n}] @ CudaGmemLinear, "
             f"B: i32[{k.tasks}] @ CudaGmemLinear):"),
             f"    with CudaDeviceFunction(blockDim={b}):",
             f"        for task in cuda_tasks(0, {k.tasks}):",
             f"{PAD}acc: i32[1] @ CudaSmemLinear",
             f"{PAD}for t in cuda_threads(0, 1, unit=cuda_thread):",
             f"{PAD}    acc[0] = 0",
             f"{PAD}Fence(cuda_in_order, cuda_in_order)",
             f"{PAD}for t in cuda_threads(0, {b}, unit=cuda_thread):",
             (f"{PAD}    cuda_atomic_add_i32(acc[0:1], "
             f"A[task * {b} + t:task * {b} + t + 1])")]
    if k.mutation != "drop-fence":
        lines.append(f"{PAD}Fence(cuda_in_order, cuda_in_order)")
    return lines + [f"{PAD}for t in cuda_threads(0, 1, unit=cuda_thread):",
                    f"{PAD}    B[task] = acc[0]",
                    f"{PAD}Fence(cuda_in_order, cuda_in_order)"]


def _tmared(k: ConstructProgram, name: str) -> list[str]:
    """The shape of tests/gpuir/conformance/tma_reduce_split_k.gpuir."""
    rows = k.tasks * 16
    lines = [f"proc {name}(A: f32[{rows}, 16] @ CudaGmemLinear):",
             "    with CudaDeviceFunction(blockDim=128):",
             f"        for task in cuda_tasks(0, {k.tasks}):",
             f"{PAD}tile: f32[16, 16] @ Sm90_SmemSwizzled(0)",
             f"{PAD}cg: barrier @ CudaCommitGroup",
             f"{PAD}for t in cuda_threads(0, 128, unit=cuda_thread):",
             f"{PAD}    for j in seq(0, 2):",
             f"{PAD}        tile[t / 8, t % 8 * 2 + j] = 1.0",
             f"{PAD}Fence(cuda_in_order, cuda_generic_and_async)",
             f"{PAD}gA = A[task * 16:task * 16 + 16, 0:16] @ Sm90_tensorMap(0, 16, 16)",
             f"{PAD}for t in cuda_threads(0, 1, unit=cuda_thread):",
             f"{PAD}    Sm90_tma_reduce_add_2d_f32(gA, tile[0:16, 0:16])",
             f"{PAD}    Arrive(tma_to_gmem_async, 1) >> cg"]
    if k.mutation != "drop-wait":
        lines += [f"{PAD}for t in cuda_threads(0, 1, unit=cuda_thread):",
                  f"{PAD}    Await(cg, cuda_in_order, 0)"]
    return lines


# ------------------------------------------------------------------- strategies


@st.composite
def construct_programs(draw) -> ConstructProgram:
    # subset twice: half its draws synchronise from the writers or the CTA
    kind = draw(st.sampled_from(KINDS + ("subset",)))
    block = draw(st.sampled_from((64, 128)))
    nw = block // 32
    return ConstructProgram(
        kind=kind, block=block, writers=draw(st.integers(1, nw - 1)),
        issuer=draw(st.sampled_from(ISSUERS + ("others", "arrive-others"))),
        chain=tuple(draw(st.lists(st.sampled_from(LINKS), min_size=2, max_size=3,
                                  unique=True))),
        locality=draw(st.sampled_from(("own", "warp", "cta", "cta"))),
        tls=(draw(st.sampled_from(("cuda_in_order", "cuda_temporal"))),
             draw(st.sampled_from(("cuda_in_order", "cuda_temporal")))),
        split=draw(st.booleans()),
        mul=2 * draw(st.integers(0, 3)) + 1, add=draw(st.integers(0, 40)),
        tasks=draw(st.integers(1, 2)),
        mutation=draw(st.sampled_from(NEAR_MISSES.get(kind, ("",)))))
