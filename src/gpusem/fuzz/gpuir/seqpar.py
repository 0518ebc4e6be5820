"""The seq = par property of AMIR (DESIGN.md; issue 5), end to end:

    a GPU IR program the sync checker ACCEPTS, compiled to CUDA and run in parallel,
    ends in the memory of its sequential reading; one it REJECTS has a witness
    schedule (a run that differs, deadlocks or traps) or counts as a false positive.

Checked over `examples/gpuir/` and over generated programs (`strategies/gpuir.py`),
on the `cpu` harness (fibre schedules 0 forward, 1 reverse, >= 2 random) or a GPU.

Classification of one program:
  holds           accepted, and every schedule agrees with the sequential reading
  VIOLATION       accepted, yet some schedule differs / deadlocks / traps: a bug in
                  the checker (unsound) or in the compiler (the finding to report)
  witness         rejected, and some schedule shows the disagreement
  false-positive  rejected, but no schedule tried shows a difference (the checker is
                  conservative, or the schedules too few): counted, not a failure
  unsupported     the backend cannot run it, or the compiler does not lower it
                  (the Hopper GEMM's host code); reported apart, never silently passed

Run: `python -m gpusem.fuzz.gpuir.seqpar [--generated N] [--seed S] [--backend cpu]`.
"""

from __future__ import annotations

import argparse
import glob
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gpusem.calculus.errors import BadInput, BudgetExhausted, IllTyped
from gpusem.compiler.gpuir_cuda.run import (
    Case,
    Verdict,
    check_batch,
    make_inputs,
    prepare,
)

ACCEPTED_SEEDS = (0, 1, 2, 3)  # 3: eager wake (see simt_sched.h)
REJECTED_SEEDS = (0, 1, 2, 3, 4, 5)
# Per-launch watchdog: a generated kernel runs for microseconds on a GPU, so 3 s only
# ever ends a hang (a deadlock), which then costs 8 s with the backend's slack, not 15
# (as the Bundl target's LAUNCH_TIMEOUT_S); the cpu harness, which interprets every
# thread as a fibre, keeps check_batch's 10 s.
LAUNCH_TIMEOUT_S = {"cuda": 3.0}
EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "gpuir"


@dataclass
class Outcome:
    name: str
    sync: str            # accepted | rejected | front-end-rejected
    reason: str          # the checker's message when it rejects
    verdict: Verdict
    source: str = ""
    defines: dict = field(default_factory=dict)

    @property
    def classification(self) -> str:
        v = self.verdict
        if v.kind in ("unsupported", "compile-error"):
            return "unsupported" if v.kind == "unsupported" else "VIOLATION"
        if self.sync == "accepted":
            return "holds" if v.agree else "VIOLATION"
        return "false-positive" if v.agree else "witness"

    def row(self) -> str:
        return (f"{self.name:40} {self.sync:19} {self.classification:15} "
                f"{self.verdict.describe()[:90]}")


# Why a program was not compared (the campaign's `not_compared` table, issue 31.6).
HOST_CODE = "unsupported: host code after the kernel (not lowered)"
UNAWAITED = "rejected, no run can show it: an Arrive never awaited (CheckBarrier)"
ONE_GPU_SCHEDULE = ("rejected, not witnessed: the GPU ran it as it schedules it (the "
                    "cuda backend has no schedule seeds)")
HARNESS_SCHEDULES = "rejected, not witnessed by the cpu harness's schedules"
HOST_UNSYNCED = ("rejected, no run can show it: the host accesses kernel data "
                 "without a stream sync (host code runs in stream order)")


def not_compared_reason(o: Outcome, backend: str) -> str:
    """The reason a program that is neither a pass nor a finding was set aside.

    Note: a rejected program has no single answer (the checker calls it racy), so
    it is never a seq = par comparison; its runs look for a witness. Two reasons
    for finding none are told apart: CheckBarrier's unawaited Arrive changes no
    memory, so no schedule on any backend shows it (the generator's `arrive-only`
    near miss), nor host code without a stream sync (it is a kernel launched in
    stream order); a race the GPU did not show is the cuda backend's, whose one
    hardware schedule the seeds do not steer (on the cpu harness the same programs
    are witnesses, issue 31.6), not the checker's conservatism."""
    if o.classification == "unsupported":
        message = o.verdict.message.removeprefix("unsupported: ")
        if message.startswith("CPU code outside a CudaDeviceFunction"):
            return HOST_CODE
        head = re.split(r"[(,\n]| at ", message, maxsplit=1)[0].strip()
        head = re.sub(r"\b\d+\b", "N", head)  # numbers out: reasons group
        return "unsupported: " + head[:80]
    if o.classification == "false-positive":
        if "CheckBarrier" in o.reason and " but 0 await(s)" in o.reason:
            return UNAWAITED
        if " on cpu_in_order" in o.reason:  # compiler/gpuir_cuda/host.py's Note
            return HOST_UNSYNCED
        return ONE_GPU_SCHEDULE if backend == "cuda" else HARNESS_SCHEDULES
    return o.classification


def _sync_verdict(proc, defines) -> tuple[str, str, object]:
    """(accepted | rejected | front-end-rejected, reason, analysis for the compiler:
    the sync check's own front-end analysis, so the compiler does not redo it)."""
    from gpusem.interpreter.amir.synccheck import synccheck_proc
    from gpusem.typing_rules.gpuir.frontend import analyse

    try:
        result = synccheck_proc(proc, defines)
    except IllTyped as err:
        return "front-end-rejected", f"{err.rule}: {err.message}", analyse(proc, defines)
    v = result.verdict
    if v.accepted:
        return "accepted", "", result.analysis
    return ("rejected", str(getattr(v.violation, "message", v.violation)),
            result.analysis)


def check_sources(items: list[tuple[str, str, dict]], backend: str = "cpu",
                  input_seed: int = 0) -> list[Outcome]:
    """The property for many programs (name, source, defines) in one batch (one
    backend build per launch stage, one NVRTC module on cuda): accepted programs
    under ACCEPTED_SEEDS, rejected ones under REJECTED_SEEDS (a witness is searched
    harder than agreement)."""
    from gpusem.calculus.gpuir.parser import parse_module

    batch: list[tuple[Case, str, str, str]] = []
    outcomes: dict[str, Outcome] = {}
    for name, source, defines in items:
        proc = parse_module(source, name).procs[-1]
        try:
            sync, reason, analysis = _sync_verdict(proc, defines)
        except (BadInput, BudgetExhausted) as err:
            outcomes[name] = Outcome(name, "bad-input", str(err),
                                     Verdict("unsupported", f"unsupported: {err}"))
            continue
        seeds = ACCEPTED_SEEDS if sync == "accepted" else REJECTED_SEEDS
        case = Case(proc, dict(defines), make_inputs(proc, defines, input_seed),
                    source=source, file=name, seeds=seeds)
        prepare(case, analysis)
        batch.append((case, name, sync, reason))
    timeout = LAUNCH_TIMEOUT_S.get(backend, 10.0)
    verdicts = check_batch([c for c, *_ in batch], backend, timeout_s=timeout)
    for (case, name, sync, reason), v in zip(batch, verdicts, strict=True):
        outcomes[name] = Outcome(name, sync, reason, v, case.source, dict(case.defines))
    return [outcomes[name] for name, _, _ in items]


def example_items(pattern: str = "*.gpuir") -> list[tuple[str, str, dict]]:
    from gpusem.typing_rules.gpuir.frontend import header_defines

    out = []
    for path in sorted(glob.glob(str(EXAMPLES / pattern))):
        source = Path(path).read_text()
        out.append((Path(path).name, source, header_defines(source)))
    return out


def generated_kernels(count: int, seed: int) -> list:
    """`count` kernels of `strategies.gpuir`, drawn deterministically from `seed`."""
    from gpusem.fuzz.gpuir.strategies import kernels_from_random

    rng = random.Random(seed)
    return [kernels_from_random(rng) for _ in range(count)]


def generated_items(count: int, seed: int) -> list[tuple[str, str, dict]]:
    """`count` generated programs as (name, source, defines)."""
    return [(f"gen{seed}_{i}.gpuir", k.source(f"gen{i}"), {})
            for i, k in enumerate(generated_kernels(count, seed))]


def shrink_violation(kernel, backend: str = "cpu"):
    """The smallest simplification of a generated kernel that still violates
    seq = par (strategies.gpuir.shrink), and its outcome."""
    from gpusem.fuzz.gpuir.strategies import shrink

    def fails(k) -> bool:
        (o,) = check_sources([("shrink.gpuir", k.source("shrunk"), {})], backend)
        return o.classification == "VIOLATION"

    small = shrink(kernel, fails)
    (o,) = check_sources([("shrunk.gpuir", small.source("shrunk"), {})], backend)
    return small, o


def summary(outcomes: list[Outcome]) -> Counter:
    return Counter((o.sync if o.sync != "front-end-rejected" else "rejected",
                    o.classification) for o in outcomes)


def write_finding(out_dir: str | Path, o: Outcome, backend: str) -> Path:
    """A counterexample bundle (fuzz/bundle.py) for a VIOLATION: the program, the
    compiled kernel, the inputs' seed, the verdict; replay with `replay_finding`."""
    import json

    from gpusem.fuzz.bundle import write_bundle

    v = o.verdict
    signature = f"seqpar:{v.kind}:{(v.difference or ('',))[0]}:{o.name}"
    meta = {"target": "gpuir", "backend": backend, "property": "seqpar",
            "signature": signature, "kind": v.kind, "detail": v.describe()[:200],
            "size": o.source.count("\n"), "input_seed": 0, "file": o.name,
            "defines": o.defines}
    files = {"program.gpuir": o.source, "kernel.cu": v.kernel_source,
             "actual.json": json.dumps(v.as_dict(), indent=2) + "\n",
             "trace.txt": f"sync check: {o.sync}\nschedule: {v.schedule}\n"
                          f"{v.describe()}\n"}
    return write_bundle(out_dir, meta, files)


def replay_finding(path: str | Path) -> bool:
    """Whether the seq = par violation of bundle `path` still reproduces."""
    import json

    path = Path(path)
    meta = json.loads((path / "bundle.json").read_text())
    source = (path / "program.gpuir").read_text()
    (o,) = check_sources([(meta["file"], source, meta.get("defines", {}))],
                         meta["backend"], meta.get("input_seed", 0))
    return o.classification == "VIOLATION"


def write_json(args, outcomes: list[Outcome], seconds: float) -> None:
    import json
    import platform
    import sys

    data = {
        "command": "python -m gpusem.fuzz.gpuir.seqpar " + " ".join(sys.argv[1:]),
        "backend": args.backend, "machine": platform.machine(),
        "seconds": round(seconds, 1), "programs": len(outcomes),
        "summary": {f"{s}/{c}": n for (s, c), n in sorted(summary(outcomes).items())},
        "examples": {o.name: {"sync": o.sync, "class": o.classification,
                              "verdict": o.verdict.describe()[:200]}
                     for o in outcomes if not o.name.startswith("gen")},
        "violations": [o.name for o in outcomes if o.classification == "VIOLATION"],
    }
    Path(args.json).write_text(json.dumps(data, indent=2) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--generated", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-examples", action="store_true")
    ap.add_argument("--json", metavar="OUT", help="also write the summary here")
    ap.add_argument("--out", metavar="DIR", help="write a bundle per violation here")
    args = ap.parse_args(argv)
    items = [] if args.no_examples else example_items()
    generated = generated_items(args.generated, args.seed)
    kernels = dict(zip((n for n, _, _ in generated),
                       generated_kernels(args.generated, args.seed), strict=True))
    items += generated
    t0 = time.time()
    outcomes = check_sources(items, args.backend)
    for o in outcomes:
        print(o.row())
    counts = summary(outcomes)
    print(f"\n{len(outcomes)} programs in {time.time() - t0:.1f} s on {args.backend}:")
    for (sync, cls), n in sorted(counts.items()):
        print(f"  {sync:9} {cls:15} {n}")
    if args.json:
        write_json(args, outcomes, time.time() - t0)
    if args.out:
        for o in outcomes:
            if o.classification == "VIOLATION":
                if o.name in kernels:  # generated: shrink first
                    _, o = shrink_violation(kernels[o.name], args.backend)
                print(f"finding: {write_finding(args.out, o, args.backend)}")
    return 1 if any(o.classification == "VIOLATION" for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
