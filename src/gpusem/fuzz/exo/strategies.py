"""Generators of GPU IR programs for the Exo-GPU verdict differential (issue 16), in
the subset both gpusem's GPU IR and Exo-GPU's front end express (docs/exo.md).

A program stages `A` in shared memory and runs a few *phases*; each phase is a
parallel statement followed by a synchronisation:

  compute  every thread (or the warps of a `CudaWarps` block) writes one cell of a
           buffer, `=` or `+=`, from cells of the previous buffer read at a permuted
           index that stays in the thread's own cell, its warp, or anywhere in the CTA;
           or it *overwrites* the buffer the previous phase wrote, at such a permuted
           index (a write after another thread's write: `=` needs it temporally
           ordered, `+=` fully, Figure 5)
  sum      every thread sums a run of the previous buffer in a register
           (`acc: f32 @ CudaRmem`, a seq loop): Section 2.1's broadcast
  copy     every thread copies one cell of `A` with Sm80 cp.async (then waits with a
           commit group, `Await(cg[tid], cuda_in_order, 0)`, or `Fence(Sm80_cp_async,
           ..)`)

and the synchronisation after a phase is drawn from: a CTA Fence (`__syncthreads`),
a temporal-only Fence (`Fence(cuda_in_order, cuda_temporal)`: orders later writes,
not later reads), a warp-scope Fence (inside a `cuda_warp` loop), an mbarrier
Arrive/Await pair, or none. The generator picks the synchronisation the phase needs
(by locality and by whether the next phase reads or only overwrites), then a
*near-miss* mutation may break it (`MUTATIONS`): a fence removed, a barrier too narrow,
a fence weakened to temporal, a cp.async not waited, an await of the wrong phase, the
trailing fence before the buffer's free removed, `=` swapped with `+=`. Half the value
of the differential is in those: the programs one checker should reject.

A program may also be two kernels in one proc (the second reads what the first wrote
to global memory: stream order, `cuda_stream_sync`, Figure 5's kernel bracket).

Draws are local and small values shrink first (fewer phases, no mutation, a CTA Fence,
the identity permutation), so hypothesis shrinks a finding to a short program.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

SYNCS = ("cta", "none", "temporal", "warp", "mbarrier")
LOCALITY = ("own", "warp", "cta")
MUTATIONS = ("drop-fence", "narrow-fence", "weaken-fence", "drop-cp-wait",
             "wrong-phase", "drop-tail", "swap-op")


@dataclass(frozen=True)
class Phase:
    kind: str = "compute"   # compute | sum | copy
    locality: str = "own"   # where reads of the previous buffer go
    mul: int = 1            # odd: x -> (mul * x + add) % n permutes
    add: int = 0
    op: str = "="           # = | +=
    overwrite: bool = False  # write the buffer the previous phase wrote (no read)
    sync: str = "cta"       # the synchronisation after the phase (SYNCS)
    warps: int = 0          # > 0: only warps [0, warps) run the phase (CudaWarps)
    nested: bool = False    # warp loop + lane loop instead of one thread loop
    cp_wait: str = "cg"     # copy phases: cg (commit group) | fence (Fence(Sm80..))


@dataclass(frozen=True)
class ExoProgram:
    """A generated program: its shape and the near-miss mutation applied, if any."""

    block: int
    tasks: int
    phases: tuple[Phase, ...]
    tail: str = "cta"            # the sync before `buf` is freed: cta | mbarrier | none
    two_kernels: bool = False
    size_param: bool = False     # N: size (sync_check gets N=...) instead of constants
    mutation: str = ""           # one of MUTATIONS, "" for none
    at: int = 0                  # the phase the mutation applies to

    def source(self, name: str = "gen") -> str:
        return render(self, name)

    def defines(self) -> dict[str, int]:
        return {"N": self.block * self.tasks} if self.size_param else {}


def _perm(p: Phase, block: int, var: str) -> str:
    match p.locality:
        case "own":
            return var
        case "warp":
            return f"{var} / 32 * 32 + ({p.mul} * {var} + {p.add}) % 32"
    return f"({p.mul} * {var} + {p.add}) % {block}"


def render(k: ExoProgram, name: str = "gen") -> str:
    """GPU IR text of `k` (with its mutation applied)."""
    phases = list(k.phases)
    tail = k.tail
    if k.mutation and phases:
        phases, tail = _mutate(phases, tail, k.mutation, min(k.at, len(phases) - 1))
    b, n = k.block, k.block * k.tasks
    size = "N" if k.size_param else str(n)
    params = ("N: size, " if k.size_param else "") + (
        f"A: f32[{size}] @ CudaGmemLinear, B: f32[{size}] @ CudaGmemLinear")
    lines = [f"proc {name}({params}):"]
    src = "A"
    if k.two_kernels:
        lines += [f"    C: f32[{size}] @ CudaGmemLinear",
                  f"    with CudaDeviceFunction(blockDim={b}):",
                  f"        for task in cuda_tasks(0, {size} / {b}):",
                  f"            for tid in cuda_threads(0, {b}, unit=cuda_thread):",
                  f"                C[task * {b} + tid] = A[task * {b} + tid] * 2.0"]
        src = "C"
    uses_bar = tail == "mbarrier" or any(p.sync.startswith("mbarrier") for p in phases)
    lines += [f"    with CudaDeviceFunction(blockDim={b}):",
              f"        for task in cuda_tasks(0, {size} / {b}):",
              f"            buf: f32[2, {b}] @ CudaSmemLinear"]
    if uses_bar:
        lines.append("            bar: barrier @ CudaMbarrier")
    # One commit group per cp.async phase, distributed exactly over its threads (Exo
    # requires the distributed dimensions to match the loop: findings/static classes).
    for i, p in enumerate(phases[:-1]):
        if p.kind == "copy" and p.cp_wait == "cg":
            count = 32 * p.warps if p.warps else b
            shape = f"{count // 32}, 32" if p.nested else str(count)
            lines.append(f"            cg{i}: barrier[{shape}] @ CudaCommitGroup")
    lines += [f"            for tid in cuda_threads(0, {b}, unit=cuda_thread):",
              f"                buf[0, tid] = {src}[task * {b} + tid]",
              "            Fence(cuda_in_order, cuda_in_order)"]
    cur = 0
    for i, p in enumerate(phases):
        last = i == len(phases) - 1
        nxt = cur if p.overwrite else 1 - cur
        lines += _phase(p, b, cur, nxt, src, last, f"cg{i}")
        lines += _sync(p.sync, b)
        cur = nxt
    lines += _tail(tail, lines)
    return "\n".join(lines) + "\n"


def _mutate(phases: list[Phase], tail: str, m: str, at: int
            ) -> tuple[list[Phase], str]:
    """Apply mutation `m` at the first phase from `at` on (cyclically) where it
    changes something, so that a near miss is a near miss."""
    if m == "drop-tail":
        return phases, "none"
    n = len(phases)
    for k in range(n):
        i = (at + k) % n
        q = _mutate_phase(phases[i], m)
        if q != phases[i]:
            phases[i] = q
            return phases, tail
    phases[at] = _mutate_phase(phases[at], m, force=True)
    return phases, tail


def _mutate_phase(p: Phase, m: str, force: bool = False) -> Phase:
    match m:
        case "drop-fence" if p.sync != "none":
            return replace(p, sync="none")
        case "narrow-fence" if p.sync in ("cta", "mbarrier") or force:
            return replace(p, sync="warp")
        case "weaken-fence" if p.sync in ("cta", "mbarrier", "warp") or force:
            return replace(p, sync="temporal")
        case "drop-cp-wait" if p.kind == "copy" and p.cp_wait != "none":
            return replace(p, cp_wait="none")
        case "drop-cp-wait" if force:
            return replace(p, kind="copy", cp_wait="none", overwrite=False)
        case "wrong-phase" if p.sync == "mbarrier" or force:
            return replace(p, sync="mbarrier-late")
        case "swap-op" if p.kind == "compute":
            return replace(p, op="+=" if p.op == "=" else "=")
    return p


def _loop_head(p: Phase, b: int, pad: str) -> tuple[list[str], str, str]:
    """The loop(s) over the phase's threads: lines, inner indentation, thread index."""
    count = 32 * p.warps if p.warps else b
    head: list[str] = []
    if p.warps:
        head.append(f"{pad}with CudaWarps(0, {p.warps}):")
        pad += "    "
    if p.nested:
        head += [f"{pad}for w in cuda_threads(0, {count // 32}, unit=cuda_warp):",
                 f"{pad}    for lane in cuda_threads(0, 32, unit=cuda_thread):"]
        return head, pad + "        ", "(w * 32 + lane)"
    head.append(f"{pad}for tid in cuda_threads(0, {count}, unit=cuda_thread):")
    return head, pad + "    ", "tid"


def _phase(p: Phase, b: int, cur: int, nxt: int, src: str, last: bool,
           cg: str = "cg") -> list[str]:
    pad = "            "
    head, inner, t = _loop_head(p, b, pad)
    dst = f"B[task * {b} + {t}]" if last else f"buf[{nxt}, {t}]"
    if p.overwrite and not last:  # another thread's cell: a WAW across threads
        dst = f"buf[{nxt}, {_perm(p, b, t)}]"
    read = f"buf[{cur}, {_perm(p, b, t)}]"
    match p.kind:
        case "copy" if not last:
            g = f"task * {b} + {_perm(p, b, t)}"
            body = [f"{inner}Sm80_cp_async_f32(buf[{nxt}, {t}:{t} + 1], "
                    f"{src}[{g}:{g} + 1])"]
            if p.cp_wait == "cg":
                z = f"{cg}[w, lane]" if p.nested else f"{cg}[{t}]"
                body += [f"{inner}Arrive(Sm80_cp_async, 1) >> {z}",
                         f"{inner}Await({z}, cuda_in_order, 0)"]
            elif p.cp_wait == "fence":
                return head + body + [f"{pad}Fence(Sm80_cp_async, cuda_in_order)"]
            return head + body
        case "sum":
            lo = {"own": t, "warp": f"{t} / 32 * 32", "cta": "0"}[p.locality]
            width = {"own": 1, "warp": 32, "cta": 32}[p.locality]
            return head + [f"{inner}acc: f32 @ CudaRmem",
                           f"{inner}acc = 0.0",
                           f"{inner}for i in seq(0, {width}):",
                           f"{inner}    acc += buf[{cur}, {lo} + i]",
                           f"{inner}{dst} = acc"]
    rhs = f"{src}[task * {b} + {t}] * 0.5" if p.overwrite and not last else (
        f"{read} + 1.5")
    return head + [f"{inner}{dst} {p.op} {rhs}"]


def _sync(kind: str, b: int) -> list[str]:
    pad = "            "
    match kind:
        case "cta":
            return [pad + "Fence(cuda_in_order, cuda_in_order)"]
        case "temporal":
            return [pad + "Fence(cuda_in_order, cuda_temporal)"]
        case "warp":
            return [pad + f"for w in cuda_threads(0, {b // 32}, unit=cuda_warp):",
                    pad + "    Fence(cuda_in_order, cuda_in_order)"]
        case "mbarrier":
            return [pad + "Arrive(cuda_in_order, 1) >> bar",
                    pad + "Await(bar, cuda_in_order, -1)"]
        case "mbarrier-late":  # an await of the wrong phase: one behind (~1)
            return [pad + "Arrive(cuda_in_order, 1) >> bar",
                    pad + "Await(bar, cuda_in_order, -2)"]
    return []


def _tail(tail: str, lines: list[str]) -> list[str]:
    """The synchronisation before `buf` (and `bar`) are freed with the task."""
    done = lines[-1].strip() == "Fence(cuda_in_order, cuda_in_order)"
    match tail:
        case "cta":
            return [] if done else ["            Fence(cuda_in_order, cuda_in_order)"]
        case "mbarrier":
            return _sync("mbarrier", 0)
    return []


# ------------------------------------------------------------------- strategies


def _needed_sync(p: Phase, nxt: Phase | None) -> str:
    """A synchronisation that makes the phase correct for the next one."""
    if nxt is None:
        return "cta"
    if nxt.overwrite:
        return "temporal" if nxt.op == "=" else "cta"
    return {"own": "none", "warp": "warp", "cta": "cta"}[nxt.locality]


@st.composite
def phases(draw, block: int) -> Phase:
    kind = draw(st.sampled_from(("compute", "compute", "sum", "copy")))
    nwarps = block // 32
    return Phase(
        kind=kind,
        locality=draw(st.sampled_from(LOCALITY + ("cta",))),
        mul=2 * draw(st.integers(0, 3)) + 1,
        add=draw(st.integers(0, 40)),
        op=draw(st.sampled_from(("=", "+="))),
        overwrite=kind == "compute" and draw(st.booleans()),
        warps=draw(st.integers(0, nwarps - 1)) if nwarps > 1 and draw(
            st.integers(0, 3)) == 3 else 0,
        nested=draw(st.booleans()),
        cp_wait=draw(st.sampled_from(("cg", "fence"))))


def programs(max_phases: int = 3):
    """Every family: phase programs (three in six), cp.async pipelines
    (fuzz/exo/pipelines.py, one in six) and issue 26's constructs
    (fuzz/exo/constructs.py, two in six)."""
    from gpusem.fuzz.exo.constructs import construct_programs
    from gpusem.fuzz.exo.pipelines import pipelines

    return st.one_of(phase_programs(max_phases), phase_programs(max_phases),
                     phase_programs(max_phases), pipelines(), construct_programs(),
                     construct_programs())


def compile_programs(max_phases: int = 3):
    """The compile census's mix (issue 26, item 2), steered at Exo's async lowerings,
    in fourteenths: mbarrier rings of several stages (two), the same in clusters of
    two CTAs (two), cp.async pipelines of several commit groups (three: only two in
    seven of them are not near misses), phase programs (one), and in the forms the
    emitter maps exactly TMA pipelines (three; fuzz/exo/tma_pipelines.py) and wgmma
    GEMMs fed by TMA (three; fuzz/exo/wgmma_gemms.py)."""
    from gpusem.fuzz.exo.pipelines import mbar_pipelines, pipelines
    from gpusem.fuzz.exo.tma_pipelines import tma_pipelines
    from gpusem.fuzz.exo.wgmma_gemms import wgmma_gemms

    return st.one_of(mbar_pipelines(), mbar_pipelines(), mbar_pipelines(cluster=True),
                     mbar_pipelines(cluster=True), pipelines(), pipelines(),
                     pipelines(), phase_programs(max_phases), tma_pipelines(),
                     tma_pipelines(), tma_pipelines(), wgmma_gemms(), wgmma_gemms(),
                     wgmma_gemms())


@st.composite
def phase_programs(draw, max_phases: int = 3) -> ExoProgram:
    """An ExoProgram: correct by construction unless its mutation breaks it; a
    quarter of the time the synchronisations are drawn at random instead."""
    block = draw(st.sampled_from((32, 64, 128)))
    tasks = draw(st.integers(1, 2))
    ps = draw(st.lists(phases(block), min_size=1, max_size=max_phases))
    free_syncs = draw(st.integers(0, 3)) == 0
    fixed = []
    for i, p in enumerate(ps):
        nxt = ps[i + 1] if i + 1 < len(ps) else None
        if p.warps and nxt is not None:  # a warp subset wrote: the CTA must wait
            need = "cta"
        else:
            need = _needed_sync(p, nxt)
        if need == "cta" and draw(st.booleans()):
            need = "mbarrier"
        sync = draw(st.sampled_from(SYNCS)) if free_syncs else need
        fixed.append(replace(p, sync=sync))
    mutation = draw(st.sampled_from(("",) * 3 + MUTATIONS))
    return ExoProgram(block, tasks, tuple(fixed),
                      tail=draw(st.sampled_from(("cta", "cta", "mbarrier", "none"))),
                      two_kernels=draw(st.integers(0, 4)) == 0,
                      size_param=draw(st.booleans()), mutation=mutation,
                      at=draw(st.integers(0, max(0, len(fixed) - 1))))
