"""APPy as a campaign target: generate, check with the legality oracle, run appyc.

Properties:
  compile   (default) a legal program compiled by appyc computes its sequential reading,
            kernel by kernel (`verdicts.py`: each kernel its own verdict)
  legality  a mutant that breaks a directive rule is rejected by the legality checker
            (the teeth of `typing_rules/appy/legality.py`; no compiler involved)

Signatures name causes (`causes.py`), not directive paths. Once a cause is seen, the
generator steers away from its trigger (`strategies.programs(avoid=...)`), switched
between rounds only, so that the hunting re-run of a round draws what its first run
drew. The round's programs are checked in `prefetch`, where the campaign's statistics
are kept (`stats.py`: programs, the fraction reaching a comparison, coverage, causes
by minute), so that the re-checks of shrinking never count as programs.

Replaying a bundle runs only what gpusem's own parser read and printed again (issue 15):
the bundle's raw `program.py` never reaches appyc, whose host code keeps parameter
annotations and defaults that the worker's import would evaluate.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

from gpusem.calculus.appy import ast as A
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.appy.printer import print_program
from gpusem.calculus.errors import BadInput, CannotRunHere, GpusemError
from gpusem.compiler.appy_triton.driver import (
    AppycDriver,
    Case,
    appyc_available,
    ensure_appyc,
    versions,
)
from gpusem.fuzz.appy.causes import STRUCTURAL, normalise, trigger_of
from gpusem.fuzz.appy.files import (
    actual_json,
    arrays_json,
    inputs_json,
    read_inputs,
    trace,
)
from gpusem.fuzz.appy.mutators import mutants
from gpusem.fuzz.appy.stats import CampaignStats
from gpusem.fuzz.appy.strategies import AppyProgram, programs
from gpusem.fuzz.appy.verdicts import ProgramRun, read_kernels, reported, run_program
from gpusem.fuzz.targets import CheckResult, Target
from gpusem.interpreter.appy.legality import check_legal
from hypothesis import strategies as st


class AppyTarget(Target):
    name = "appy"
    properties = ("compile", "legality")
    backends = ("cpu", "cuda", "sm90")  # sm90: compile for sm_90 with ptxas, run nothing

    def __init__(self, backend: str = "cpu", timeout: float = 20.0):
        ensure_appyc()  # from a vendored wheel folder where there is no network
        ok, why = appyc_available()
        if not ok:
            raise CannotRunHere(f"target unavailable: {why}")
        self.backend = backend
        self.timeout = timeout
        self._driver: AppycDriver | None = None
        self._interp: AppycDriver | None = None
        self._cache: dict[str, tuple[CheckResult, ProgramRun | None]] = {}
        self.stats = CampaignStats(backend, os.environ.get("GPUSEM_APPY_STATS"))
        self.triggers: dict[str, frozenset[str]] = {}  # signature -> constructs
        self._avoid: tuple[frozenset[str], ...] = ()
        self._rerun_next = False

    # ------------------------------------------------------------------ lifecycle
    @property
    def driver(self) -> AppycDriver:
        if self._driver is None:
            self._driver = AppycDriver(self.backend, self.timeout)
        return self._driver

    @property
    def interp(self) -> AppycDriver | None:
        """Triton's interpreter beside the GPU (the differential; cuda only)."""
        if self.backend != "cuda":
            return None
        if self._interp is None:
            self._interp = AppycDriver("cpu", self.timeout)
        return self._interp

    def close(self) -> None:
        for d in (self._driver, self._interp):
            if d is not None:
                d.close()
        self._driver = self._interp = None
        self.stats.flush(force=True)

    def strategy(self, prop: str):
        if prop == "legality":
            return programs().flatmap(lambda p: st.sampled_from(mutants(p) or [p]))
        if self._rerun_next:  # the hunting re-run of a round: draw what it drew
            self._rerun_next = False
        else:
            self._avoid = tuple(sorted(set(self.triggers.values()), key=sorted))
        return programs(avoid=self._avoid)

    def size(self, program: AppyProgram) -> int:
        return A.stmt_count(program.fn.body)

    # ---------------------------------------------------------------------- check
    def prefetch(self, progs: list, prop: str) -> bool:
        """Check the round's programs (as the campaign drew them, before any shrinking)
        and keep the statistics; `check` then finds them in the cache."""
        if prop != "compile":
            return False
        self._cache.clear()
        new = False
        for p in progs:
            res, run = self.check_program(p)
            self._cache[_key(p)] = (res, run)
            new |= self.stats.record(p, run, res, self.triggers)
            self._learn(run)
        self._rerun_next = new
        self.stats.flush()
        return True

    def check(self, program: AppyProgram, prop: str = "compile") -> CheckResult:
        if prop == "legality":
            arrays, scalars = program.inputs()
            return self._check_legality(program, print_program(program.fn), arrays,
                                        scalars)
        hit = self._cache.get(_key(program))
        if hit is not None:
            return hit[0]
        return self.check_program(program)[0]

    def _learn(self, run: ProgramRun | None) -> None:
        """Remember the trigger of every cause seen (steered away from next round)."""
        for k in run.kernels if run else []:
            if k.failed and k.signature not in self.triggers:
                self.triggers[k.signature] = trigger_of(k.signature) or frozenset(
                    f for f in k.feats if f in STRUCTURAL)

    def check_program(self, program: AppyProgram) -> tuple[CheckResult, ProgramRun | None]:
        arrays, scalars = program.inputs()
        t0 = time.perf_counter()
        run = read_kernels(program.fn, program.kernel_slices(), arrays, scalars)
        if not run.verdict.legal:  # never blame the compiler for an illegal program
            return CheckResult("invalid", detail=run.verdict.message), run
        if self.backend == "sm90":
            return self._check_sm90(program.fn, arrays, scalars), run
        run_program(self.driver, run, program.fn, arrays, scalars, self.interp)
        return self._result(run, time.perf_counter() - t0), run

    def _result(self, run: ProgramRun, seconds: float) -> CheckResult:
        k = reported(run)
        if k is None and run.interaction and run.whole is not None:
            return self._interaction(run, seconds)
        if k is None:
            status = "pass" if run.compared else "skip"
            detail = "" if run.compared else "; ".join(
                x.outcome.detail[:120] for x in run.kernels if x.outcome)
            return CheckResult(status, detail=detail, seconds=seconds)
        out = k.outcome
        assert out is not None
        files = {"program.py": k.source, "kernel_triton.py": out.module,
                 "inputs.json": inputs_json(k.arrays, k.scalars),
                 "expected.json": arrays_json(k.expected),
                 "actual.json": actual_json(out),
                 "trace.txt": trace(run, k),
                 "cause.json": json.dumps({
                     "signature": k.signature, "cause": k.cause.title if k.cause else "",
                     "blame": k.blame, "differential": k.differential,
                     "constructs": sorted(k.feats), "adapted": list(out.adapted),
                     "numpy": "expected.json: what plain NumPy computes (the "
                              "sequential reading)"}, indent=1) + "\n"}
        return CheckResult("finding", k.signature, out.kind, out.detail, files,
                           A.stmt_count(k.fn.body), seconds)

    def _interaction(self, run: ProgramRun, seconds: float) -> CheckResult:
        assert run.whole is not None
        k0 = run.kernels[0]
        arrays = {n: a for k in run.kernels for n, a in k.arrays.items()}
        return CheckResult("finding", run.interaction, run.whole.kind, run.whole.detail,
                           {"program.py": run.source, "trace.txt": trace(run, None),
                            "inputs.json": inputs_json(
                                {n: a for n, a in arrays.items()}, k0.scalars |
                                {n: v for k in run.kernels for n, v in k.scalars.items()}),
                            "kernel_triton.py": run.whole.module},
                           sum(A.stmt_count(k.fn.body) for k in run.kernels), seconds)

    def _check_legality(self, program, source, arrays, scalars) -> CheckResult:
        if not getattr(program, "mutated", False):
            return CheckResult("pass")
        v = check_legal(program.fn, arrays, scalars)
        if not v.legal:
            return CheckResult("pass", detail=v.message)
        return CheckResult(
            "finding", "legality:missed:" + program.mutated, "legality-missed",
            f"mutant '{program.mutated}' accepted by the legality checker",
            {"program.py": source, "inputs.json": inputs_json(arrays, scalars)},
            self.size(program))

    def minimise(self, program: AppyProgram, res: CheckResult,
                 prop: str = "compile", budget_s: float | None = None) -> CheckResult:
        """`drop_statement`: delete top-level statements while the signature stays
        (hypothesis shrinks a kernel's choices well, but rarely deletes an earlier
        kernel whose choices precede the failing one); no new check past `budget_s`
        seconds (None: until no deletion keeps the finding)."""
        import time

        deadline = None if budget_s is None else time.monotonic() + budget_s
        changed = True
        while changed and (deadline is None or time.monotonic() < deadline):
            changed = False
            for k in range(len(program.fn.body)):
                if deadline is not None and time.monotonic() >= deadline:
                    break
                cand = drop_statement(program, k)
                if cand is None:
                    continue
                try:
                    r = self.check(cand, prop)
                except GpusemError:  # the deletion left the program invalid
                    continue         # (e.g. a name used but no longer defined)
                if r.status == "finding" and r.signature == res.signature:
                    program, res, changed = cand, r, True
                    break
        if prop == "compile" and trigger_of(res.signature) is None:
            # The smallest failing kernel's constructs are a sharper trigger than
            # those of the first program that showed the cause.
            _, run = self.check_program(program)
            bad = reported(run) if run else None
            if bad is not None and bad.signature == res.signature:
                self.triggers[res.signature] = frozenset(
                    f for f in bad.feats if f in STRUCTURAL)
        return res

    def check_source(self, source: str, arrays: dict, scalars: dict,
                     size: int | None = None) -> CheckResult:
        """Check a program given as text: parsed, then printed again by gpusem (only
        that text reaches appyc), run as one kernel."""
        return self.check_program(program_of(source, arrays, scalars))[0]

    def load_program(self, files: dict[str, str], meta: dict) -> AppyProgram:
        """A bundle's program and inputs as a program `check` and `minimise` take
        (`gpusem reduce`)."""
        if "program.py" not in files or "inputs.json" not in files:
            raise BadInput("malformed bundle: an APPy bundle needs program.py and "
                           "inputs.json")
        arrays, scalars = read_inputs(files["inputs.json"])
        return program_of(files["program.py"], arrays, scalars)

    def _check_sm90(self, fn: A.Function, arrays: dict, scalars: dict) -> CheckResult:
        """Compile-only: every kernel the host code launches must build for sm_90."""
        source = print_program(fn)
        case = Case("c", source, fn.name, [p.name for p in fn.params], arrays, scalars)
        res = self.driver.compile_sm90(case)
        if not res["errors"]:
            return CheckResult("pass")
        err = res["errors"][0]
        kind = "host" if err.startswith("host: ") else "triton"
        files = {"program.py": source, "inputs.json": inputs_json(arrays, scalars),
                 "actual.json": json.dumps(res) + "\n"}
        return CheckResult("finding", f"sm90:{kind}:{normalise(err)}", kind,
                           f"sm_90 compile: {err}", files, A.stmt_count(fn.body))

    def confirm_sm90(self, source: str, arrays: dict, scalars: dict) -> dict:
        """Compile the kernels for sm_90 (no GPU): does a Triton error reproduce there?"""
        fn = parse_program(source)
        text = print_program(fn)
        case = Case("c", text, fn.name, [p.name for p in fn.params], arrays, scalars)
        with AppycDriver("sm90", max(self.timeout, 60.0)) as d:
            return d.compile_sm90(case)

    def finding_meta(self, result: CheckResult) -> dict:
        return {"versions": versions(), "device": device_name(self.backend)}

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        if "program.py" not in files or "inputs.json" not in files:
            raise BadInput("malformed bundle: an APPy bundle needs program.py and "
                           "inputs.json")
        arrays, scalars = read_inputs(files["inputs.json"])
        if meta.get("property") == "legality":
            fn = parse_program(files["program.py"])
            v = check_legal(fn, arrays, scalars)
            return CheckResult("pass") if not v.legal else CheckResult(
                "finding", meta["signature"], "legality-missed", "still accepted")
        return self.check_source(files["program.py"], arrays, scalars)


def program_of(source: str, arrays: dict, scalars: dict) -> AppyProgram:
    """A program given as text with its inputs (read back from a bundle)."""
    fn = parse_program(source)
    return AppyProgram(fn, tuple((k, str(v.dtype), v.shape) for k, v in arrays.items()
                                 if k in {p.name for p in fn.params}),
                       tuple((k, v) for k, v in scalars.items()), fixed=arrays)


def _key(p: AppyProgram) -> str:
    return repr((print_program(p.fn), p.arrays, p.scalars, p.data_seed, p.negative,
                 p.kernels, p.gens, p.fixed is None))


def drop_statement(program: AppyProgram, k: int) -> AppyProgram | None:
    """`program` without its k-th top-level statement (and the parameters only it
    used); kernel boundaries follow."""
    body = program.fn.body[:k] + program.fn.body[k + 1:]
    if not body:
        return None
    used = {x.array for s in A.walk_stmts(body) for e in A.stmt_exprs(s)
            for x in A.walk_expr(e) if isinstance(x, A.Subscript)}
    names = {x.id for s in A.walk_stmts(body) for e in A.stmt_exprs(s)
             for x in A.walk_expr(e) if isinstance(x, A.Name)}
    params = tuple(p for p in program.fn.params
                   if (p.name in used if p.is_array else p.name in names))
    fn = dataclasses.replace(program.fn, body=body, params=params)
    kernels, at = [], 0
    for c in program.kernels or (len(program.fn.body),):
        kernels.append(c - (1 if at <= k < at + c else 0))
        at += c
    return dataclasses.replace(
        program, fn=fn, arrays=tuple(a for a in program.arrays if a[0] in used),
        scalars=tuple(s for s in program.scalars if s[0] in names),
        kernels=tuple(c for c in kernels if c > 0))


def device_name(backend: str) -> str:
    if backend == "cpu":
        return "Triton interpreter (TRITON_INTERPRET=1), torch CPU"
    try:
        import torch

        return torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - no torch or no GPU: say so
        return "cuda (device unknown)"
