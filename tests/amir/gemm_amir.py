"""A hand-written AMIR program with the shape of a converted sm_90a GEMM (the paper's
Section 6 benchmark kernel): 128 x 128 tiles per task, a 4-stage TMA ring guarded by
`full` / `empty` mbarriers, a producer thread and two consumer warpgroups issuing
wgmma with commit groups, an epilogue storing to global memory, the frees' checks,
and the CudaDeviceFunction bracket. Used by the benchmarks and as a large accepted
program; `bug=` variants drop one synchronisation.

Thread layout (blockDim 384): warpgroup 0 is the producer (thread 0 issues TMA), warp-
groups 1 and 2 are consumers (threads 128..383), each owning 64 rows of the tile.
"""

from __future__ import annotations

ALLQ = ("{cpu_in_order_qual, cpu_cuda_stream_qual, cuda_in_order_rmem_qual, "
        "cuda_in_order_ram_qual, Sm80_cp_async_qual, tma_to_smem_async_qual, "
        "tma_to_gmem_async_qual, wgmma_async_rmem_a_qual, wgmma_async_rmem_d_qual, "
        "wgmma_async_smem_qual, wgmma_zero_qual}")
TMAS = "{tma_to_smem_async_qual}"
WG = "{wgmma_async_rmem_a_qual, wgmma_async_rmem_d_qual, wgmma_async_smem_qual}"
WG_POST = ("{cuda_in_order_rmem_qual, wgmma_async_rmem_a_qual, "
           "wgmma_async_rmem_d_qual, wgmma_async_smem_qual}")
IN_ORDER = "{cuda_in_order_rmem_qual, cuda_in_order_ram_qual}"
IN_ORDER_TEMP = ("{cpu_cuda_stream_qual, cuda_in_order_rmem_qual, "
                 "cuda_in_order_ram_qual, Sm80_cp_async_qual, tma_to_smem_async_qual, "
                 "tma_to_gmem_async_qual, "
                 "wgmma_async_rmem_a_qual, wgmma_async_rmem_d_qual, "
                 "wgmma_async_smem_qual, wgmma_zero_qual}")
GEN_ASYNC = ("{cuda_in_order_rmem_qual, cuda_in_order_ram_qual, Sm80_cp_async_qual, "
             "tma_to_smem_async_qual, tma_to_gmem_async_qual, wgmma_async_smem_qual}")
# what the consumers' wait on `full` makes visible: generic (transitive chain to
# `empty`) and wgmma timelines
CONSUMED = ("{cuda_in_order_rmem_qual, cuda_in_order_ram_qual, "
            "wgmma_async_rmem_a_qual, wgmma_async_rmem_d_qual, wgmma_async_smem_qual}")
RAM = "{cuda_in_order_ram_qual}"
RMEM = "{cuda_in_order_rmem_qual}"

PRODUCER = "threads(0)"
CONSUMERS = "threads(128 : 256)"
WGROUP = "threads(128 + wg * 128 : 128)"
CTA = "threads(0 : 384)"


def _write(tile: str, ext: str, init: str, vl: str, cvg: str, bars: str, th: str,
           pad: str) -> list[str]:
    """Figure 19, non-atomic write-only parameter."""
    return [
        f"{pad}CheckMutates(temporally_ordered, {cvg}, {tile}, {ext}) @ {th}",
        f"{pad}CheckReads(temporally_ordered, {cvg}, {tile}, {ext}) @ {th}",
        f"{pad}ClearReads({tile})",
        f"{pad}ClearMutates({tile})",
        f"{pad}RecordMutate({vl}, {cvg}, {tile}, {init}, {{}}, {bars}) @ {th}",
    ]


def _read(tile: str, ext: str, init: str, vl: str, cvg: str, bars: str, th: str,
          pad: str) -> list[str]:
    """Figure 19, non-atomic read-only parameter."""
    return [
        f"{pad}CheckMutates(fully_ordered, {cvg}, {tile}, {ext}) @ {th}",
        f"{pad}RecordRead({vl}, {cvg}, {tile}, {init}, {{}}, {bars}) @ {th}",
    ]


def _rw(tile: str, ext: str, init: str, vl: str, cvg: str, bars: str, th: str,
        pad: str) -> list[str]:
    """Figure 19, non-atomic read-write parameter."""
    return [
        f"{pad}CheckMutates(fully_ordered, {cvg}, {tile}, {ext}) @ {th}",
        f"{pad}CheckReads(temporally_ordered, {cvg}, {tile}, {ext}) @ {th}",
        f"{pad}ClearReads({tile})",
        f"{pad}ClearMutates({tile})",
        f"{pad}RecordMutate({vl}, {cvg}, {tile}, {init}, {{}}, {bars}) @ {th}",
    ]


def gemm_amir(bug: str | None = None) -> str:
    """The program text. `bug` in {None, "no_empty_wait", "no_full_wait",
    "no_commit_wait", "no_final_fence"} removes one synchronisation."""
    p12, p16, p20 = " " * 12, " " * 16, " " * 20
    a_tile = "A[mt * 128 : mt * 128 + 128, k * 32 : k * 32 + 32]"
    b_tile = "B[nt * 128 : nt * 128 + 128, k * 32 : k * 32 + 32]"
    as_tile = "As[k % 4, 0 : 128, 0 : 32]"
    bs_tile = "Bs[k % 4, 0 : 128, 0 : 32]"
    full_bar, empty_bar = "full[k % 4]", "empty[k % 4]"
    lines = [
        "proc gemm(N):",
        f"    Fence(true, {{cpu_in_order_qual, cpu_cuda_stream_qual}}, {ALLQ}, {ALLQ})"
        " @ cpu",
        "    for mt in loop(0, N / 128):",
        "        for nt in loop(0, N / 128):",
        f"{p12}IncTaskID",
        f"{p12}Alloc(As[4, 128, 32])",
        f"{p12}Alloc(Bs[4, 128, 32])",
        f"{p12}Alloc(D[2, 64, 128])",
        f"{p12}Alloc(full[4], barrier)",
        f"{p12}Alloc(empty[4], barrier)",
        f"{p12}Alloc(cg[2], barrier)",
        f"{p12}for k in loop(0, N / 32):",
    ]
    # producer: wait for the consumers to release the stage, then two TMA loads
    if bug != "no_empty_wait":
        lines += [f"{p16}if k >= 4:",
                  f"{p20}RecordRead(fully_ordered, false, {empty_bar}, "
                  f"cuda_in_order_ram_qual, {{}}, {{}}) @ {PRODUCER}",
                  f"{p20}Await({empty_bar}, {{}}, {IN_ORDER_TEMP}, -1) @ {PRODUCER}"]
    for tile, gtile in ((as_tile, a_tile), (bs_tile, b_tile)):
        lines += _write(tile, TMAS, "tma_to_smem_async_qual", "unordered", "false",
                        f"{{{full_bar}}}", PRODUCER, p16)
        lines += _read(gtile, TMAS, "tma_to_smem_async_qual", "unordered", "false",
                       f"{{{full_bar}}}", PRODUCER, p16)
    lines += [f"{p16}RecordRead(fully_ordered, false, {full_bar}, "
              f"cuda_in_order_ram_qual, {{}}, {{}}) @ {PRODUCER}",
              f"{p16}Arrive(false, {TMAS}, {{{full_bar}}}) @ {PRODUCER}"]
    # consumers: wait for the stage, wgmma per warpgroup, commit, release the stage
    if bug != "no_full_wait":
        lines += [f"{p16}RecordRead(fully_ordered, false, {full_bar}, "
                  f"cuda_in_order_ram_qual, {{}}, {{}}) @ {CONSUMERS}",
                  f"{p16}Await({full_bar}, {CONSUMED}, {CONSUMED}, -1) @ {CONSUMERS}"]
    lines += [f"{p16}for wg in loop(0, 2):"]
    lines += _read("As[k % 4, wg * 64 : wg * 64 + 64, 0 : 32]", WG,
                   "wgmma_async_smem_qual", "unordered", "true", "{cg[wg]}", WGROUP,
                   p20)
    lines += _read(bs_tile, WG, "wgmma_async_smem_qual", "unordered", "true",
                   "{cg[wg]}", WGROUP, p20)
    lines += _rw("D[wg, 0 : 64, 0 : 128]", WG, "wgmma_async_rmem_d_qual", "unordered",
                 "true", "{cg[wg]}", WGROUP, p20)
    lines += [f"{p20}RecordRead(fully_ordered, false, cg[wg], cuda_in_order_ram_qual, "
              f"{{}}, {{}}) @ {WGROUP}",
              f"{p20}Arrive(false, {WG}, {{cg[wg]}}) @ {WGROUP}"]
    if bug != "no_commit_wait":
        lines += [f"{p20}Await(cg[wg], {WG_POST}, {WG_POST}, 0) @ {WGROUP}"]
    lines += [f"{p16}RecordRead(fully_ordered, false, {empty_bar}, "
              f"cuda_in_order_ram_qual, {{}}, {{}}) @ {CONSUMERS}",
              f"{p16}Arrive(true, {IN_ORDER}, {{{empty_bar}}}) @ {CONSUMERS}"]
    # epilogue: each consumer warpgroup stores its D rows to C
    lines += [f"{p12}for wg in loop(0, 2):"]
    lines += _read("D[wg, 0 : 64, 0 : 128]", RMEM, "cuda_in_order_rmem_qual",
                   "fully_ordered", "false", "{}", WGROUP, p16)
    lines += _write("C[mt * 128 + wg * 64 : mt * 128 + wg * 64 + 64, "
                    "nt * 128 : nt * 128 + 128]", RAM, "cuda_in_order_ram_qual",
                    "fully_ordered", "false", "{}", WGROUP, p16)
    # the frees (Figure 5: free x of shared memory, free z) after a CTA-wide fence;
    # the producer's last arrives on `empty` have no await: drain them
    if bug != "no_final_fence":
        lines += [f"{p12}Fence(false, {GEN_ASYNC}, {GEN_ASYNC}, {IN_ORDER_TEMP})"
                  f" @ {CTA}"]
    lines += [f"{p12}for s in loop(0, 4):",
              f"{p16}Await(empty[s], {{}}, {{}}, -1) @ {PRODUCER}"]
    for smem in ("As[0 : 4, 0 : 128, 0 : 32]", "Bs[0 : 4, 0 : 128, 0 : 32]"):
        lines += [f"{p12}CheckReads(temporally_ordered, false, {smem}, {RAM}) @ {CTA}",
                  f"{p12}CheckMutates(temporally_ordered, false, {smem}, {RAM})"
                  f" @ {CTA}"]
    for bar in ("full[0 : 4]", "empty[0 : 4]", "cg[0 : 2]"):
        lines += [f"{p12}CheckBarrier({bar})",
                  f"{p12}CheckReads(temporally_ordered, false, {bar}, {RAM}) @ {CTA}",
                  f"{p12}CheckMutates(temporally_ordered, false, {bar}, {RAM}) @ {CTA}"]
    lines += [f"{p12}Free({v})" for v in ("As", "Bs", "D", "full", "empty", "cg")]
    lines += [f"    Fence(true, {ALLQ}, {ALLQ}, {ALLQ}) @ cpu"]
    return "\n".join(lines) + "\n"
