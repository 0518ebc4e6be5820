"""Attribution: whose bug is a finding (DESIGN.md, "Attribution"; issue 23, item 2).

A finding of a property that runs CUDA is re-run under the toolchain matrix
(`compiler/backends/toolchain.py`): every configuration runs the finding's launches,
each launch is judged against the reference (right, wrong, failed, or not observed),
and ONE verdict is given with its evidence by the first rule of this table that
holds. Language-neutral: a target supplies the launches, a comparison of a launch's
memory with the reference, and (where it has one) a second reference path.

  #  rule              verdict           holds when
  1  platform-limit    environment       the finding ran into a limitation of the
                                         platform or the interpreter (the target says
                                         which), or its configuration cannot run here
  2  second-reference  gpusem            a second reference path (Bundl: big-step
                                         beside small-step) disagrees with the first
  3  cpu-harness       ours              the finding is the cpu harness's (the cpu
                                         backend: only cpu-side rules) and the harness
                                         reproduces it
  4  stale-nc-reads    nvvm              the failing configuration's launches are all
                                         wrong, in different ways, the static PTX check
                                         finds an `ld.global.nc` of a written buffer,
                                         and PTX without it (-G, no __restrict__) is
                                         right on every launch: the stale reads vary
  5  reruns-differ     nondeterministic  the failing configuration's launches disagree
                                         with each other, or none of them is wrong now
  6  harness-same      ours              the cpu harness is wrong the same way (same
                                         memory, or the same first wrong cell)
  7  every-gpu-same    ours              every GPU configuration that ran (two at
                                         least) is wrong the same way
  8  static-ptx-ours   ours              the static PTX check fails and blames the
                                         `.cu` we emitted (e.g. `const` on a buffer
                                         the kernel writes)
  9  static-ptx        nvvm              the static PTX check fails (evidence: the PTX
                                         line)
 10  jit-vs-sass       driver-jit        the PTX is wrong through the driver's JIT and
                                         right as SASS from the same PTX (nvcc-O3)
 11  ptxas-O0          ptxas             the same PTX is right under ptxas -O0 and wrong
                                         at -O3, and a static check ran and found
                                         nothing (evidence: SASS memory operations)
 12  other-ptx         nvvm              every build of the default PTX is wrong, and a
                                         build of other PTX (-G, no __restrict__) right
 13  undecided         undecided         none of the above

Three verdicts need no runs, and the target gives them itself (`without_runs`): our
compiler raised on a well-typed program (rule `compile-error`: ours), the interpreter
is stuck on one (rule `stuck`: gpusem, a soundness bug), or gpusem's own code raised
(rule `internal`: gpusem).

Note: rule order matters. The static check (8, 9) goes before ptxas-O0 (11): NVVM's
`ld.global.nc` of a buffer the thread wrote (issue 23's T1) is right under ptxas -O0
(the unoptimised SASS happens to read memory in program order) yet NVVM's fault; and
without a static check rule 11 cannot tell NVVM from ptxas, so it does not fire (the
verdict is then `undecided`, saying so). Reproduction (5) goes before every blame:
a race or the hardware makes every later comparison meaningless; except where (4)
the static check explains why the launches differ (a load that may read a stale
line gives timing-dependent values) and the PTX without that load is right. The reference is
questioned (2) before anything is blamed on a compiler.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpusem.compiler.backends.toolchain import DEFAULT_PTX, GPU_CONFIGS, OTHER_PTX
from gpusem.fuzz.bundle import ATTRIBUTION

VERDICTS = ("nondeterministic", "ours", "nvvm", "ptxas", "driver-jit", "gpusem",
            "environment", "undecided")


@dataclass(frozen=True)
class Observation:
    """One launch judged against the reference. `status`: right | wrong | failed (a
    trap, a hang, a crash) | unobserved (it did not build or cannot run here).
    `fingerprint`: a digest of the memory that came back (or the failure's kind);
    `cell`: the first wrong cell; `note`: what to show."""

    status: str
    fingerprint: str = ""
    cell: str = ""
    note: str = ""

    @property
    def bad(self) -> bool:
        return self.status in ("wrong", "failed")

    def same_way(self, other: Observation) -> bool:
        return self.bad and other.bad and (
            self.fingerprint == other.fingerprint
            or bool(self.cell) and self.cell == other.cell)

    def as_dict(self) -> dict[str, str]:
        return {"status": self.status, "fingerprint": self.fingerprint,
                "cell": self.cell, "note": self.note[:300]}


def observe(result: Any, wrong_cell: Callable[[dict], str | None]) -> Observation:
    """Judge one backend `Result`: `wrong_cell(outputs)` is None when the memory is the
    reference's, else the first wrong cell."""
    if result.kind in ("build_error", "unsupported"):
        return Observation("unobserved", note=f"{result.kind}: {result.message}")
    if result.kind != "ok":
        # a hang and a trap look different on the harness and on a GPU (deadlock vs
        # the watchdog's timeout; a crash of the harness vs a CUDA error): one each
        same = {"deadlock": "hang", "timeout": "hang", "crash": "trap",
                "runtime_error": "trap"}.get(result.kind, result.kind)
        return Observation("failed", same, "", f"{result.kind}: {result.message}")
    cell = wrong_cell(result.outputs)
    if cell is None:
        return Observation("right")
    digest = hashlib.sha256()
    for name in sorted(result.outputs):
        digest.update(name.encode() + b"\0" + result.outputs[name].tobytes())
    return Observation("wrong", digest.hexdigest()[:16], cell, cell)


@dataclass
class Evidence:
    """What the rules read: the configuration the finding was made on, every
    configuration's observations, the static check's failures (None: no check
    installed), how a second reference differs (None: it agrees, or there is none)
    and a platform limitation the target met ("" none)."""

    failing: str
    runs: Mapping[str, list[Observation]]
    static: list[Any] | None = None
    second_reference: str | None = None
    environment: str = ""
    sass: dict[str, str] = field(default_factory=dict)

    def observed(self, config: str) -> list[Observation]:
        return [o for o in self.runs.get(config, []) if o.status != "unobserved"]

    def all_bad(self, config: str) -> bool:
        seen = self.observed(config)
        return bool(seen) and all(o.bad for o in seen)

    def all_right(self, config: str) -> bool:
        seen = self.observed(config)
        return bool(seen) and all(o.status == "right" for o in seen)

    def gpu_ran(self) -> list[str]:
        return [c for c in GPU_CONFIGS if self.observed(c)]


@dataclass(frozen=True)
class Attribution:
    verdict: str
    rule: str
    evidence: tuple[str, ...]

    def line(self) -> str:
        return f"{self.verdict} (rule {self.rule}): {'; '.join(self.evidence)}"


# --------------------------------------------------------------------- the rules
# Each takes the evidence and returns its evidence lines when it holds, else None.

Rule = Callable[[Evidence], "list[str] | None"]


def platform_limit(ev: Evidence) -> list[str] | None:
    if ev.environment:
        return [ev.environment]
    if not ev.observed(ev.failing):
        notes = {o.note for o in ev.runs.get(ev.failing, [])} or {"not run"}
        return [f"{ev.failing} cannot run here: {min(notes)[:200]}"]
    return None


def second_reference(ev: Evidence) -> list[str] | None:
    if ev.second_reference is None:
        return None
    return [f"the reference's two paths differ: {ev.second_reference}"]


def cpu_harness(ev: Evidence) -> list[str] | None:
    if ev.failing != "cpu":
        return None
    bad = [o for o in ev.observed("cpu") if o.bad]
    return [f"the cpu harness is wrong: {bad[0].note}"] if bad else None


def reruns_differ(ev: Evidence) -> list[str] | None:
    seen = ev.observed(ev.failing)
    kinds = {(o.status, o.fingerprint) for o in seen}
    if len(kinds) > 1:
        return [(f"{len(seen)} launches of {ev.failing} gave {len(kinds)} different "
                 f"results: {sorted(kinds)}")]
    if not any(o.bad for o in seen):
        return [f"{ev.failing} is right on all {len(seen)} launches now"]
    return None


# the static PTX check that finds a non-coherent load of a buffer the kernel writes
# (`compiler/backends/ptx_check.py`)
NC_CHECKS = ("ld.nc-read-only",)


def stale_nc_reads(ev: Evidence) -> list[str] | None:
    """Launches that differ, explained: the static PTX check finds a non-coherent load
    (`ld.global.nc`) of a buffer the kernel writes (NVVM's, T1's class). Such a load
    reads whatever the read-only cache holds when it runs, so its wrong values vary
    with timing; every launch of the failing configuration is wrong, and the PTX built
    without that load (no-restrict) is right on every launch. Found on the H200 (stop
    28): T1's shape with two wrong launches that differed was called
    `nondeterministic`, blaming a race or the hardware for NVVM's load."""
    nc = [f for f in ev.static or [] if getattr(f, "blame", "nvvm") == "nvvm"
          and f.check in NC_CHECKS]
    seen = ev.observed(ev.failing)
    if not nc or not seen or not all(o.bad for o in seen):
        return None
    if len({o.fingerprint for o in seen}) < 2:
        return None  # the same wrong memory every time: static-ptx's case
    clean = [c for c in OTHER_PTX if ev.all_right(c)]
    if not clean:
        return None
    return [(f"{len(seen)} launches of {ev.failing} are wrong in "
             f"{len({o.fingerprint for o in seen})} different ways; every launch of "
             f"{', '.join(clean)} (PTX without the load below) is right"),
            *_static_lines(nc)]


def harness_same(ev: Evidence) -> list[str] | None:
    failing = [o for o in ev.observed(ev.failing) if o.bad]
    same = [o for o in ev.observed("cpu") if any(o.same_way(f) for f in failing)]
    if same:
        return [f"the cpu harness is wrong the same way: {same[0].note}"]
    return None


def every_gpu_same(ev: Evidence) -> list[str] | None:
    ran = ev.gpu_ran()
    if len(ran) < 2 or not all(ev.all_bad(c) for c in ran):
        return None
    first = ev.observed(ran[0])[0]
    if all(o.same_way(first) for c in ran for o in ev.observed(c)):
        return [(f"every GPU configuration ({', '.join(ran)}) is wrong the same way: "
                 f"{first.note}")]
    return None


def static_ptx_ours(ev: Evidence) -> list[str] | None:
    ours = [f for f in ev.static or [] if getattr(f, "blame", "nvvm") == "ours"]
    return _static_lines(ours) if ours else None


def static_ptx(ev: Evidence) -> list[str] | None:
    return _static_lines(ev.static) if ev.static else None


def _static_lines(failures: list[Any]) -> list[str]:
    return [f"static PTX check {f.check} fails ({f.version}) at PTX line {f.line}: "
            f"{f.text.strip()}" for f in failures[:3]]


def jit_vs_sass(ev: Evidence) -> list[str] | None:
    if ev.all_bad("ptx-jit") and ev.all_right("nvcc-O3"):
        return [("the PTX is wrong through the driver JIT (ptx-jit), right as SASS "
                 "(nvcc-O3)")]
    return None


def ptxas_o0(ev: Evidence) -> list[str] | None:
    if ev.static is None or ev.static:
        return None
    if ev.all_right("ptxas-O0") and ev.all_bad("nvcc-O3"):
        lines = [("the same PTX is right under ptxas -O0, wrong at -O3; the static "
                  "PTX check found nothing")]
        return lines + [f"SASS {c}:\n{s}" for c, s in sorted(ev.sass.items()) if s]
    return None


def other_ptx(ev: Evidence) -> list[str] | None:
    default = [c for c in DEFAULT_PTX if ev.observed(c)]
    right = [c for c in OTHER_PTX if ev.all_right(c)]
    if len(default) >= 2 and all(ev.all_bad(c) for c in default) and right:
        return [(f"every build of the default PTX ({', '.join(default)}) is wrong; "
                 f"other PTX ({', '.join(right)}) is right")]
    return None


def undecided(ev: Evidence) -> list[str]:
    why = [] if ev.static is not None else [
        "no static PTX check installed: NVVM and ptxas cannot be told apart"]
    table = ", ".join(f"{c} {_summary(ev.runs[c])}" for c in ev.runs)
    return [*why, f"no rule decides: {table}"]


RULES: tuple[tuple[str, str, Rule], ...] = (
    ("platform-limit", "environment", platform_limit),
    ("second-reference", "gpusem", second_reference),
    ("cpu-harness", "ours", cpu_harness),
    ("stale-nc-reads", "nvvm", stale_nc_reads),
    ("reruns-differ", "nondeterministic", reruns_differ),
    ("harness-same", "ours", harness_same),
    ("every-gpu-same", "ours", every_gpu_same),
    ("static-ptx-ours", "ours", static_ptx_ours),
    ("static-ptx", "nvvm", static_ptx),
    ("jit-vs-sass", "driver-jit", jit_vs_sass),
    ("ptxas-O0", "ptxas", ptxas_o0),
    ("other-ptx", "nvvm", other_ptx),
)


def decide(ev: Evidence) -> Attribution:
    """The first rule of `RULES` that holds, with its evidence; else `undecided`."""
    for name, verdict, rule in RULES:
        lines = rule(ev)
        if lines is not None:
            return Attribution(verdict, name, tuple(lines))
    return Attribution("undecided", "undecided", tuple(undecided(ev)))


def _summary(observations: list[Observation]) -> str:
    counts: dict[str, int] = {}
    for o in observations:
        counts[o.status] = counts.get(o.status, 0) + 1
    return "/".join(f"{k} {v}" for k, v in sorted(counts.items())) or "not run"


# ------------------------------------------------------------------- the driver


@dataclass
class Case:
    """A finding to attribute: its launches (`Job`s: several are re-runs), the
    configuration it was made on, `wrong_cell` (see `observe`), and what only the
    target knows: a second reference's difference and a platform limitation."""

    jobs: list[Any]
    failing: str
    wrong_cell: Callable[[dict], str | None]
    second_reference: str | None = None
    environment: str = ""


def attribute(case: Case, matrix: Any, checker: Any = None) -> dict[str, Any]:
    """Run `case` under `matrix` (`toolchain.Matrix`), decide, and give the
    `attribution.json` of its bundle: verdict, rule, evidence, every configuration's
    observations, the static check's failures, the cost in seconds."""
    start = time.perf_counter()
    before = dict(getattr(matrix, "seconds", {}))
    results = matrix.run(case.jobs) if not case.environment else {}
    runs = {c: [observe(r, case.wrong_cell) for r in rs] for c, rs in results.items()}
    static = None
    if checker is not None and case.failing != "cpu" and case.jobs:
        static = checker(case.jobs[0].spec.source)
    ev = Evidence(case.failing, runs, static, case.second_reference, case.environment)
    verdict = decide(ev)
    if verdict.rule in ("ptxas-O0", "jit-vs-sass") or (
            verdict.verdict == "undecided" and case.jobs):
        ev.sass = _sass(matrix, case.jobs[0].spec)
        verdict = decide(ev)
    spent = {c: s - before.get(c, 0.0)
             for c, s in getattr(matrix, "seconds", {}).items()}
    # configurations whose SASS for the kernel was another's: launched once
    same = {c: jobs[0] for c, jobs in getattr(matrix, "shared", {}).items()
            if 0 in jobs}
    found = report(verdict, ev, time.perf_counter() - start, spent) | {
        "same_sass": same}
    if case.jobs and case.failing != "cpu":
        spec = case.jobs[0].spec
        found = with_sass_check(found, spec.name, spec.source)
    return found


def with_sass_check(found: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    """`found` with the static SASS check's failures (`sass_check`: T2's class) where
    the verdict is ptxas's or undecided: the evidence that names the cause (`cause_of`)
    and, for an undecided finding, says where to look. One nvcc call; nothing where
    nvcc or cuobjdump is missing."""
    if found.get("verdict") not in ("ptxas", "undecided"):
        return found
    from gpusem.compiler.backends import sass_check

    screen = sass_check.screen([(name, source)])
    failures = screen.failures[0] if screen.failures else []
    return found | {"sass_check": [{"check": f.check, "text": f.one_line()}
                                   for f in failures]}


def cause_of(found: Mapping[str, Any] | None, signature: str) -> str:
    """The cause a finding is grouped under in the reports: `<verdict>:<checks>` where
    its attribution names a check that explains it (the static PTX check's failures,
    the static SASS check's), so one cause seen by several properties or programs is
    one group (T1: `nvvm:ld.nc-read-only`; T2: `ptxas:viaddmnmx-negated-constant`);
    else its signature, a cause of its own (no evidence to say two are one)."""
    if not found:
        return signature
    checks = sorted({str(f.get("check")) for key in ("static_check", "sass_check")
                     for f in (found.get(key) or []) if isinstance(f, dict)})
    verdict = found.get("verdict")
    return f"{verdict}:{'+'.join(checks)}" if verdict and checks else signature


def _sass(matrix: Any, spec: Any) -> dict[str, str]:
    from gpusem.compiler.backends.toolchain_build import sass_memory_ops

    out = {}
    for config in ("nvcc-O3", "ptxas-O0"):
        built = matrix.binary(spec, config) if hasattr(matrix, "binary") else None
        if built is not None:
            out[config] = sass_memory_ops(*built)
    return out


def report(verdict: Attribution, ev: Evidence, seconds: float,
           per_config: Mapping[str, float]) -> dict[str, Any]:
    return {
        "verdict": verdict.verdict, "rule": verdict.rule,
        "evidence": list(verdict.evidence), "failing_config": ev.failing,
        "matrix": {c: [o.as_dict() for o in os_] for c, os_ in ev.runs.items()},
        "static_check": (None if ev.static is None
                         else [f.as_dict() for f in ev.static]),
        "second_reference": ev.second_reference, "environment": ev.environment,
        "sass": ev.sass, "seconds": round(seconds, 3),
        "seconds_per_config": {c: round(s, 3) for c, s in per_config.items()},
    }


def evidence_of(found: Mapping[str, Any], second_reference: str | None = None
                ) -> Evidence:
    """The evidence an `attribution.json` recorded (`report`'s inverse), to decide it
    again under the rules of today (`scripts/redecide_attribution.py`). The second
    reference's difference is the caller's: recorded text cannot say whether a race
    verdict was only undecided, so it is recomputed, never read back."""
    from gpusem.compiler.backends.toolchain import StaticFailure

    runs = {c: [Observation(str(o.get("status", "")), str(o.get("fingerprint", "")),
                            str(o.get("cell", "")), str(o.get("note", "")))
                for o in obs] for c, obs in dict(found.get("matrix") or {}).items()}
    static = found.get("static_check")
    return Evidence(
        str(found.get("failing_config", "nvrtc")), runs,
        None if static is None else [StaticFailure(**f) for f in static],
        second_reference, str(found.get("environment") or ""),
        dict(found.get("sass") or {}))


def without_runs(verdict: str, rule: str, evidence: str, failing: str
                 ) -> dict[str, Any]:
    """The `attribution.json` of a finding decided without running anything (no kernel:
    the compiler raised, or the reference is stuck)."""
    assert verdict in VERDICTS, verdict
    return report(Attribution(verdict, rule, (evidence,)), Evidence(failing, {}), 0.0,
                  {})


def disagreeing(runs: Mapping[str, list[Observation]]) -> tuple[str, ...]:
    """The configurations with a launch that is wrong or failed (signature material)."""
    return tuple(c for c, obs in runs.items() if any(o.bad for o in obs))


# ----------------------------------------------- which program an attribution is of
# A finding is attributed where it was found (`Campaign._seen`, at claim time) and,
# after a completed shrink, again for the shrunk program. A bundle whose shrink was
# cut holds a partly shrunk program beside the attribution of the program as found:
# the attribution names its program (`program`, `program_sha256`), so it never
# silently describes another (issue 23's "Done when"; docs/reports.md).
AS_FOUND, SHRUNK = "as found", "shrunk"


def program_digest(files: Mapping[str, str], program_file: str = "") -> str:
    """sha256 of a finding's program: its `program_file`, else its `program.*` file,
    else every file but the attribution."""
    names = [program_file] if program_file in files else sorted(
        n for n in files if n.startswith("program."))[:1]
    if names:
        text = files[names[0]]
    else:
        text = "\0".join(f"{n}\0{files[n]}" for n in sorted(files)
                         if n != ATTRIBUTION)
    return hashlib.sha256(text.encode()).hexdigest()


def of_program(found: Mapping[str, Any], which: str, digest: str) -> dict[str, Any]:
    """`found` naming the program it was computed for: `which` (AS_FOUND, SHRUNK)
    and its digest (`program_digest`)."""
    return dict(found, program=which, program_sha256=digest)


def recorded(found: Mapping[str, Any], signature: str, files: Mapping[str, str],
             program_file: str = "") -> dict[str, Any]:
    """An attribution as `bundle.json` records it: verdict, rule, seconds, cause and,
    where it names its program, which one and whether it is this bundle's (`files`:
    the bundle's; False where a cut shrink left a partly shrunk program)."""
    meta = {k: found.get(k) for k in ("verdict", "rule", "seconds")} | {
        "cause": cause_of(found, signature)}
    if found.get("program_sha256"):
        meta |= {"program": found.get("program"),
                 "program_sha256": found["program_sha256"],
                 "of_this_program": (found["program_sha256"]
                                     == program_digest(files, program_file))}
    return meta


def in_files(files: Mapping[str, str]) -> dict[str, Any]:
    """The attribution among a finding's `files` (`attribution.json`), {} where it
    has none or it is not a JSON object."""
    try:
        found = json.loads(files.get(ATTRIBUTION, "{}"))
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def kept_on_cut(meta: Mapping[str, Any], files: Mapping[str, str],
                first: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """A bundle whose shrink was cut (`fuzz/shrinker.py`, `engines/dask.py`), as
    (meta, files): its attribution kept, taken from `first` (the files the finding
    was handed over with, attributed where it was found) where the bundle's last
    state lacks it, and recorded against the program the bundle now holds; `shrunk`
    where the bundle holds a smaller program than was found (a step made before the
    cut), as the shrink itself says when it writes its own end first (`Campaign.
    _shrink`: the two race at the deadline)."""
    files = dict(files)
    if ATTRIBUTION not in files and ATTRIBUTION in first:
        files[ATTRIBUTION] = first[ATTRIBUTION]
    meta = dict(meta)
    try:
        meta["shrunk"] = int(meta["size"]) < int(meta["size_before"])
    except (KeyError, TypeError, ValueError):
        meta["shrunk"] = False  # no sizes to compare: no step is known
    if found := in_files(files):
        meta["attribution"] = recorded(found, str(meta.get("signature", "")), files,
                                       str(meta.get("program_file", "")))
    return meta, files
