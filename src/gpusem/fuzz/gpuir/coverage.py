"""Which rules of the AMIR semantics a GPU IR program reaches (issue 14 item 7: "a rule
no generated program reaches is a blind spot of the oracle, not a pass").

`coverage_of(source)` gives a program's labels; `LABELS` is the universe, so a label
no program has shows as 0, not as missing; `table(label_sets)` counts them per 10,000
programs (the format a campaign report includes; fuzz/gpuir/target.py exposes both as
`GpuirTarget.coverage` / `coverage_labels`). Labels:

  fig5:<row>     a row of Figure 5 (T_s) the conversion applies: the statement forms,
                 plus the frees it inserts (free x of shared memory, free z)
  fig19:<case>   a case of Figure 19 (T_arg) for an instruction argument
  fig16:<row>    a row of Figure 16 named by a Fence / Arrive / Await (the kernel
                 launch bracket names cuda_stream_sync)
  check:<Check>  CheckReads / CheckMutates run against at least one record,
                 CheckBarrier run (Figure 7): the check could fail there
  rejects:<Check> the program's verdict is that check failing
  machine:<rule> a Fence / Arrive / Await of the machine ran (Figure 22)
  front-end-rejected  the front end rejected it (no conversion)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from gpusem.calculus.errors import GpusemError, IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir import memtypes
from gpusem.calculus.gpuir.instructions import INSTRUCTIONS
from gpusem.calculus.gpuir.timelines import SYNC_TIMELINE_NAMES
from gpusem.calculus.gpuir.walk import walk
from gpusem.interpreter.amir.from_gpuir_args import arg_case

FIG5_ROWS = ("seq", "cuda_tasks", "cuda_threads", "if", "x = e", "x += e",
             "CudaDeviceFunction", "CudaWarps", "instruction call", "alloc x",
             "alloc z", "free x", "free z", "Fence", "Arrive", "Await")
FIG19_CASES = ("non-atomic read-only", "non-atomic non-read-only", "atomic")
CHECKS = ("CheckReads", "CheckMutates", "CheckBarrier")
MACHINE = ("Fence", "Arrive", "Await")

LABELS: tuple[str, ...] = (
    *(f"fig5:{r}" for r in FIG5_ROWS), *(f"fig19:{c}" for c in FIG19_CASES),
    *(f"fig16:{r}" for r in SYNC_TIMELINE_NAMES), *(f"check:{c}" for c in CHECKS),
    *(f"rejects:{c}" for c in CHECKS), *(f"machine:{r}" for r in MACHINE),
)


def coverage_of(source: str, defines: Mapping[str, int] | None = None,
                file: str = "<generated>") -> set[str]:
    """The labels one program reaches (its last procedure, `defines` over the
    `# defines:` header)."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.interpreter.amir.synccheck import synccheck_proc
    from gpusem.typing_rules.gpuir.frontend import header_defines

    proc = parse_module(source, file).procs[-1]
    env = {**header_defines(source), **dict(defines or {})}
    out = static_labels(proc)
    try:
        result = synccheck_proc(proc, env, max_steps=2_000_000)
    except IllTyped:
        return out | {"front-end-rejected"}
    except GpusemError:
        return out
    stats, v = result.verdict.stats, result.verdict.violation
    out |= {f"check:{c}" for c in CHECKS if c in stats.exercised}
    out |= {f"machine:{r}" for r in MACHINE if r in stats.exercised}
    if v is not None:
        out.add(f"rejects:{v.check}")
    return out


def static_labels(proc: A.Proc) -> set[str]:
    """The Figure 5 rows, Figure 19 cases and Figure 16 rows of a procedure."""
    out: set[str] = set()
    smem = {name for name, m in memtypes.DATA_MEMORIES.items() if m.is_smem}
    for s in walk(proc.body):
        match s:
            case A.For(mode=mode):
                out.add(f"fig5:{mode.value}")
            case A.If():
                out.add("fig5:if")
            case A.Assign():
                out.add("fig5:x = e")
            case A.Reduce():
                out.add("fig5:x += e")
            case A.CudaDeviceFunction():
                out |= {"fig5:CudaDeviceFunction", "fig16:cuda_stream_sync"}
            case A.CudaWarps():
                out.add("fig5:CudaWarps")
            case A.InstrCall(instr=name):
                out.add("fig5:instruction call")
                g = INSTRUCTIONS.get(name)
                if g is not None:
                    out |= {f"fig19:{arg_case(p)}" for p in g.data_params}
            case A.Alloc(mem=m):
                out.add("fig5:alloc x")
                if m.name in smem:
                    out.add("fig5:free x")
            case A.BarrierAlloc():
                out |= {"fig5:alloc z", "fig5:free z"}
            case A.Fence(pre=pre, post=post):
                out |= {"fig5:Fence", f"fig16:{_row(pre)}", f"fig16:{_row(post)}"}
            case A.Arrive(tl=tl):
                out |= {"fig5:Arrive", f"fig16:{_row(tl)}"}
            case A.Await(tl=tl):
                out |= {"fig5:Await", f"fig16:{_row(tl)}"}
    return out


def _row(name: str) -> str:
    return "cuda_generic_and_async" if name == "cuda_generic_and_async_proxy" else name


def table(label_sets: Iterable[set[str]]) -> dict[str, float]:
    """Programs per 10,000 reaching each label of LABELS (0 = a blind spot)."""
    counts: Counter[str] = Counter()
    n = 0
    for labels in label_sets:
        n += 1
        counts.update(labels)
    return {label: round(10_000 * counts[label] / n, 1) if n else 0.0
            for label in LABELS}


def blind_spots(per_10k: Mapping[str, float]) -> list[str]:
    return [label for label in LABELS if per_10k.get(label, 0) == 0]
