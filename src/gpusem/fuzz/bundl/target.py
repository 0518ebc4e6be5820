"""The Bundl target of `gpusem fuzz`: the oracle properties of DESIGN.md over
generated well-typed programs (`fuzz/bundl/strategies/`).

Properties:
  compile     compiled CUDA (cpu harness or a GPU) ends in the interpreter's memory
  motion      the same with wait motion off (the unoptimised barrier placement)
  prism-sync  the same with Prism Sec. 5's placement (rules 1, 2: `--sync prism`)
  soundness   progress + preservation (Theorem 4.1) under a random schedule
  printparse  printing then parsing is the identity
  toolchain   every configuration of the toolchain matrix (NVRTC, nvcc -O3 / -G,
              ptxas -O0, the PTX JIT, no __restrict__, the cpu harness) gives the
              interpreter's memory; a disagreement is attributed at once
              (`fuzz/bundl/toolchain_property.py`)
  ptx         the PTX every installed NVRTC makes of the compiled kernel obeys the PTX
              ISA's rules (`ptx_property.py`; no GPU)

A finding's signature is the property, the verdict kind and its class (the backend
result kind, the exception type, or the rule), so one bug class yields one bundle.

The compiler properties draw `Generated` programs (`fuzz/bundl/generated.py`): whether
a program is race-free by construction (kernel-shaped) or must be proved so by the z3
analysis before it is compared is part of the drawn value, not remembered elsewhere.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.printer import print_program
from gpusem.calculus.bundl.walk import statement_count
from gpusem.calculus.errors import BadInput
from gpusem.fuzz.bundl.audit import Auditor, fast_enabled
from gpusem.fuzz.bundl.compile_property import (
    HARNESS_SEEDS,
    SYNC_OF_PROPERTY,
    Unconfirmed,
    Verdict,
    check_program,
)
from gpusem.fuzz.bundl.generated import Generated, as_generated
from gpusem.fuzz.environment import device_name, tool_versions
from gpusem.fuzz.targets import (
    CUDA_RUNTIME,
    Z3,
    CheckResult,
    Target,
    bundle_fault,
    checked,
    ptx_probe,
)
from gpusem.interpreter.bundl.reference import (
    Reference,
    fast_reference,
    outcome_difference,
    reference,
)

if TYPE_CHECKING:
    from gpusem.compiler.backends.toolchain import Matrix
    from gpusem.fuzz.bundl.ptx_property import DeferredPtx
    from hypothesis.strategies import SearchStrategy

BundlProgram = B.Program | Generated  # a plain program is not race-free by construction

PROPERTIES = ("compile", "motion", "prism-sync", "soundness", "printparse", "teeth",
              "determinism", "bigsmall", "soundness-paper", "toolchain", "ptx")


SHRINK_BUDGET_S = 60.0  # the AST reducer's default time cap per finding
MAX_CELLS_ENV = "GPUSEM_BUNDL_MAX_CELLS"


def kernel_max_cells() -> int:
    """The kernel generator's size bound (`strategies/kernels.MAX_CELLS`: the output
    cells one thread's code writes, loops unrolled) for the compiler properties:
    $GPUSEM_BUNDL_MAX_CELLS where set, else the default. The default is the trade-off
    measured in results/scale/progsize/ (issue 31.3); a larger bound draws the bigger
    kernels NVRTC spent most of a campaign's build on."""
    from gpusem.fuzz.bundl.strategies.kernels import MAX_CELLS, MIN_CELLS

    raw = os.environ.get(MAX_CELLS_ENV, "").strip()
    if not raw:
        return MAX_CELLS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < MIN_CELLS:
        raise BadInput(f"bad {MAX_CELLS_ENV}: {raw} (an integer, at least {MIN_CELLS})")
    return value


class BundlTarget(Target):
    name = "bundl"
    properties = PROPERTIES
    backends = ("cpu", "cuda")
    requires = (Z3,)  # the race checker: every property's reference
    requires_on: ClassVar = {"cuda": CUDA_RUNTIME}

    def __init__(self, backend: str = "cpu", max_blocks: int = 2, max_threads: int = 8):
        self.backend = backend
        self.max_blocks, self.max_threads = max_blocks, max_threads
        self._cache: dict[tuple[str, Generated],
                          Verdict | Unconfirmed | CheckResult] = {}
        # the semantic rules a property's own run of a program applied, for coverage
        # (so a campaign's table costs no second interpreter run): (prop, program)
        self._seen: dict[tuple[str, Generated], frozenset[str]] = {}
        self._prop: str | None = None  # the property of the last `check`
        self._auditor = Auditor()  # the fast reference's audit (audit.py)
        self._matrix: Matrix | None = None  # the toolchain matrix, made when needed
        self.shrink_budget_s, self.shrink_max_tried = SHRINK_BUDGET_S, 400
        # signature -> ShrinkStats.as_dict(), for the bundle's meta
        self.shrink_stats: dict[str, dict[str, Any]] = {}
        # the ptx property: the installed NVRTCs (found once) and, per program, the
        # coverage labels its check saw
        self._nvrtcs: tuple | None = None
        self._ptx_seen: dict[Generated, frozenset[str]] = {}
        # a reducer's batch: the programs its screen failed, checked alone when read
        self._ptx_deferred: dict[Generated, DeferredPtx] = {}
        # the shard's round being checked (`begin_round`), None outside a campaign's
        # rounds (shrinking, replay): the toolchain property then builds everything
        self._round: int | None = None
        # the texts of the findings this target's checks compared (`attribute`)
        self._compared: set[str] = set()

    def close(self) -> None:
        self._cache.clear()
        self._seen.clear()
        self._ptx_deferred.clear()
        if self._matrix is not None:
            self._matrix.close()
            self._matrix = None

    def matrix(self) -> Matrix:
        """The toolchain matrix of this target's backend (made once: its cuda worker
        and builds are reused by every attribution and `toolchain` check)."""
        if self._matrix is None:
            from gpusem.compiler.backends.toolchain import Matrix
            from gpusem.fuzz.bundl.compile_property import shared_backend

            self._matrix = Matrix(self.backend, cpu_runner=shared_backend("cpu"))
        return self._matrix

    def probe(self, prop: str) -> str | None:
        """The campaign's preflight (`targets.preflight`): the `toolchain` property
        on a GPU builds with nvcc, ptxas and cuobjdump (nvcc-O3, nvcc-G, ptxas-O0); the
        `ptx` property needs an installed NVRTC (`ptx_probe`)."""
        if prop == "ptx":
            return ptx_probe(self)
        if prop != "toolchain" or self.backend != "cuda":
            return None
        from gpusem.compiler.backends.toolchain_build import find_tool

        return None if find_tool("nvcc") else "nvcc not found (nvcc-O3, nvcc-G, ptxas-O0)"

    def warm(self, prop: str) -> None:
        """The cuda backend's worker (CuPy, a CUDA context: seconds) started now,
        not at the first batch (`targets.Target`'s optional `warm`)."""
        if self.backend == "cuda":
            from gpusem.fuzz.bundl.compile_property import shared_backend

            start = getattr(shared_backend("cuda"), "start", None)
            if start is not None:
                start()

    def second_reference_of(self, files: dict[str, str]) -> str | None:
        """The second reference path's difference for a stored bundle's program
        (`fuzz/redecide.py`: attribution decided again without a GPU)."""
        if "program.bundl" not in files:
            return None
        from gpusem.fuzz.bundl.attribute import stored_second_reference

        return stored_second_reference(files["program.bundl"])

    def begin_round(self, index: int | None) -> None:
        """Round `index` of the shard: the `toolchain` property builds and runs
        nvcc-G for its clean programs when `index` is a multiple of K
        (GPUSEM_TOOLCHAIN_G_EVERY, `toolchain.g_every`); None (shrinking): always."""
        self._round = index

    def attribute(self, result: CheckResult, prop: str) -> dict | None:
        """The `attribution.json` of a finding (`fuzz/attribution.py`): for the
        compiler properties, the finding's kernel re-run under the toolchain matrix
        (on the cpu backend: the cpu harness only); None for the other properties."""
        from gpusem.fuzz.attribution import without_runs

        if prop not in SYNC_OF_PROPERTY or "program.bundl" not in result.files:
            return None
        failing = "nvrtc" if self.backend == "cuda" else "cpu"
        kind = result.signature.split(":")[1] if ":" in result.signature else ""
        if result.kind == "internal":  # an exception out of gpusem's own code
            return without_runs("gpusem", "internal", result.detail, failing)
        if kind == "compile-error":
            return without_runs("ours", "compile-error", result.detail, failing)
        if kind == "stuck":
            return without_runs("gpusem", "stuck", result.detail, failing)
        from gpusem.compiler.backends.toolchain import installed_checker
        from gpusem.fuzz.bundl.attribute import attribute_program

        text = result.files["program.bundl"]
        program = parse_program(text, "program.bundl")
        # a finding this target's check compared is race-free as that check found
        # it (by construction, or proved): its references are not proved again. A
        # kernel-shaped program as found (405 statements, attributed where it was
        # found) had its z3 proof exhaust the analysis budget after 11 s: verdict
        # `environment` where the cpu harness said `ours` in 1.4 s
        return attribute_program(program, prop == "compile", self.backend,
                                 self.matrix(), installed_checker(),
                                 result.files.get("kernel.cu", ""),
                                 prove_race_free=text not in self._compared,
                                 sync=SYNC_OF_PROPERTY[prop])

    def _remember_compared(self, text: str) -> None:
        """`text` is a finding's program that a check compared with the reference:
        its race freedom is established (`_finding` is reached only then)."""
        if len(self._compared) >= 4096:
            self._compared.clear()
        self._compared.add(text)

    def strategy(self, prop: str) -> SearchStrategy[BundlProgram]:
        """Compiler properties mix kernel-shaped programs (race-free by construction,
        observable) with the general well-typed generator (every statement form), each
        drawn as a `Generated` that says which it is; the other properties draw plain
        programs of the general generator."""
        from gpusem.fuzz.bundl.strategies.kernels import generated_kernels
        from gpusem.fuzz.bundl.strategies.programs import generated_programs, programs
        from hypothesis import strategies as st

        machine = {"max_blocks": self.max_blocks, "max_threads": self.max_threads}
        if prop == "ptx":
            self.nvrtcs()  # no NVRTC installed: BadInput before any program (exit 2)
        if prop == "toolchain":
            from gpusem.compiler.backends.toolchain import g_every

            g_every()  # a bad GPUSEM_TOOLCHAIN_G_EVERY: BadInput before any program
        if prop in (*SYNC_OF_PROPERTY, "toolchain", "ptx"):
            return st.one_of(generated_kernels(max_blocks=4, max_threads=128,
                                               max_cells=kernel_max_cells()),
                             generated_programs(**machine))
        if prop == "determinism":  # small machines: exhaustive exploration stays cheap
            return st.one_of(generated_kernels(max_blocks=2, max_threads=8),
                             generated_programs(**machine))
        return programs(**machine)

    def prefetch(self, programs: Sequence[BundlProgram], prop: str) -> bool:
        """Batch-check a round's programs (one backend build for all of them); True
        when their verdicts are cached (the campaign then counts them directly)."""
        return self.prefetch_until(programs, prop, None) is not None

    def prefetch_until(self, programs: Sequence[BundlProgram], prop: str,
                       deadline: float | None, defer: bool = False) -> int | None:
        """`prefetch`, with no reference begun and no finding confirmed past
        `deadline` (time.monotonic()): how many of `programs`, from the first, have
        their verdicts cached (None: this property is checked one by one). `defer`
        (the reducer's batches): a verdict to confirm against the full reference is
        confirmed when `check` reads it, not now (`compile_property.Unconfirmed`)."""
        from gpusem.fuzz.bundl.compile_property import check_batch

        if prop == "toolchain":
            self._cache.clear()
            self._seen.clear()
            self._toolchain(list(dict.fromkeys(as_generated(p) for p in programs)))
            return len(programs)
        if prop == "ptx":
            return len(programs) if self._ptx_prefetch(programs, defer) else None
        if prop not in SYNC_OF_PROPERTY:
            return None
        self._cache.clear()
        self._seen.clear()
        todo = list(dict.fromkeys(as_generated(p) for p in programs))
        refs = []
        for g in todo:
            if deadline is not None and time.monotonic() >= deadline:
                break
            refs.append(self._reference(g, prop))
        todo = todo[:len(refs)]
        verdicts = check_batch([g.program for g in todo], self.backend, HARNESS_SEEDS,
                               prop == "compile", [r for r, _ in refs],
                               confirm=lambda i: self._full_if_fast(todo[i], refs[i][0],
                                                                    prop),
                               sync=SYNC_OF_PROPERTY[prop], deadline=deadline,
                               defer=defer)
        for generated, verdict, (_, mismatch) in zip(todo, verdicts, refs, strict=True):
            result = mismatch if mismatch is not None else verdict
            if result is not None:  # None: past the deadline, not decided
                self._cache[(prop, generated)] = result
        done = 0
        for p in programs:  # the leading programs whose verdicts are all in
            if (prop, as_generated(p)) not in self._cache:
                break
            done += 1
        return done

    def minimise(self, program: BundlProgram, res: CheckResult,
                 prop: str = "compile", budget_s: float | None = None,
                 on_step: Callable[[CheckResult], None] | None = None,
                 ) -> CheckResult:
        """AST-level reduction after hypothesis's (`fuzz/bundl/shrink.py`): the kernel
        templates' parts hang together, which choice shrinking cannot undo. Capped by
        `budget_s` (the campaign's --shrink-time left; None: `shrink_budget_s`) and
        `shrink_max_tried` candidates; `on_step` is told each smaller failure."""
        from gpusem.fuzz.bundl.shrink import shrink

        if res.status != "finding":
            return res
        budget = self.shrink_budget_s if budget_s is None else budget_s
        _, small_res, stats = shrink(
            as_generated(program), res.signature,
            lambda g: checked(self, g, prop),  # internal: too
            lambda gs, deadline: self.prefetch_until(gs, prop, deadline, defer=True),
            budget, self.shrink_max_tried, on_step=on_step)
        self.shrink_stats[res.signature] = stats.as_dict()
        return small_res if small_res is not None else res

    def hypothesis_share_of(self, prop: str) -> float | None:
        """Hypothesis's share of a finding's shrinking (`shrink_jobs.hunt_share`): none
        on the cpu backend for the properties this reducer checks in batches, where
        each of hypothesis's candidates is a g++ build of its own (about a second on
        a fresh cache: a 20 s campaign's shrink saw 15 of them and shrank nothing,
        where the batched reducer takes a 15-statement finding to 3); None (the
        campaign's default) otherwise: on a GPU a candidate is one NVRTC call."""
        if self.backend == "cpu" and prop in (*SYNC_OF_PROPERTY, "toolchain"):
            return 0.0
        return None

    def confirm(self, program: BundlProgram, result: CheckResult,
                prop: str = "compile") -> CheckResult:
        """A `timeout` is checked again with four times the launch limit, in a fresh
        backend worker (issue 15: a watchdog under load is not a bug)."""
        if prop not in SYNC_OF_PROPERTY:
            return self.check(program, prop)
        from gpusem.compiler.backends import get_backend
        from gpusem.compiler.backends.machine_load import load_factor

        generated = as_generated(program)
        runner = get_backend(self.backend)
        try:
            verdict = check_program(generated.program, self.backend, HARNESS_SEEDS,
                                    prop == "compile",
                                    ref=self._full_reference(generated, prop),
                                    timeout_scale=4.0 * load_factor(),
                                    runner=runner,
                                    sync=SYNC_OF_PROPERTY[prop])
        finally:
            getattr(runner, "close", lambda: None)()
        if verdict.agree or verdict.kind in ("racy", "not-compared", "unsupported"):
            return CheckResult("pass", detail=verdict.message)
        return self._finding(generated, verdict, prop)

    def program_files(self, program: BundlProgram) -> dict[str, str]:
        return {"program.bundl": print_program(as_generated(program).program)}

    def size(self, program: BundlProgram) -> int:
        return statement_count(as_generated(program).program)

    def coverage(self, program: BundlProgram, prop: str | None = None) -> set[str]:
        """The rules and lowering paths `program` exercises under property `prop`, for
        a campaign's coverage table (issue 14, item 7; `fuzz/targets.py`: the campaign
        calls `coverage(program)` after `check(program, prop)`, so `prop` defaults to
        the property of the last check, and to all three judgments before any).
        Names: typing rules `T-*` / `V-Function`, semantic rules `S-*` / `E-*`, compiler
        paths `compile:<pass>:<case>`; every one is in `coverage_labels(prop)`. A
        campaign counts, per property, the programs that exercised each name and
        reports them per 10,000 programs; a name at 0 is a blind spot of the
        generators. After a check of the same program the semantic rules are those the
        property's own run applied (no second run); otherwise this costs one
        round-robin run (at most 200,000 steps). Typing costs one derivation, the
        compiler properties one compilation to KIR (no backend run). Deterministic: the
        same program gives the same set."""
        from gpusem.fuzz.bundl.coverage import coverage, judgments, typing_rules

        prop = prop if prop is not None else self._prop
        generated = as_generated(program)
        if prop == "ptx":
            from gpusem.fuzz.bundl.coverage import lowering_paths, typing_rules

            if generated not in self._ptx_seen:
                self._ptx(generated)
            return (set(self._ptx_seen[generated]) | typing_rules(generated.program)
                    | lowering_paths(generated.program))
        ran = self._seen.get((prop or "", generated))
        if ran is None or "semantics" not in judgments(prop):
            return coverage(generated.program, prop)
        out = set(ran) | typing_rules(generated.program)
        if "compiler" in judgments(prop):
            from gpusem.fuzz.bundl.coverage import lowering_paths, sync_of

            out |= lowering_paths(generated.program, sync=sync_of(prop))
        return out

    def coverage_labels(self, prop: str | None = None) -> tuple[str, ...]:
        """Every name `coverage(_, prop)` can return, in table order (typing rules,
        semantic rules, compiler paths): the rows of the coverage table, zeros
        included. `prop` defaults as `coverage`'s does."""
        from gpusem.fuzz.bundl.coverage import universe

        prop = prop if prop is not None else self._prop
        if prop == "ptx":
            from gpusem.fuzz.ptx_findings import labels_of

            return universe(prop) + labels_of(self.nvrtcs())
        return universe(prop)

    coverage_universe = coverage_labels

    def check(self, program: BundlProgram, prop: str = "compile") -> CheckResult:
        """The verdict of `prop` on a program: a `Generated` one (the compiler
        properties' strategy) or a plain one (not race-free by construction)."""
        generated = as_generated(program)
        self._prop = prop
        match prop:
            case "compile" | "motion" | "prism-sync":
                return self._compile(generated, prop)
            case "soundness":
                return self._soundness(generated)
            case "printparse":
                return self._printparse(generated.program)
            case "toolchain":
                cached = self._cache.get((prop, generated))
                if isinstance(cached, CheckResult):
                    return cached
                return self._toolchain([generated])[0]
            case "ptx":
                return self._ptx(generated)
            case "teeth" | "determinism" | "bigsmall" | "soundness-paper":
                from gpusem.fuzz.bundl import properties as bundl_properties

                verdict: CheckResult = getattr(bundl_properties, prop.replace("-", "_"))(
                    generated.program)
                return verdict
        raise AssertionError(prop)

    # ------------------------------------------------------------------ properties

    def nvrtcs(self) -> tuple:
        """The installed NVRTCs (the ptx property; BadInput when there is none)."""
        if self._nvrtcs is None:
            from gpusem.compiler.backends.ptx_oracle import installed

            self._nvrtcs = installed()
        return self._nvrtcs

    def _ptx(self, generated: Generated) -> CheckResult:
        from gpusem.fuzz.bundl.ptx_property import check_ptx_property

        cached = self._cache.get(("ptx", generated))
        if isinstance(cached, CheckResult):
            return cached
        if (deferred := self._ptx_deferred.pop(generated, None)) is not None:
            outcome = deferred.decide()  # a reducer's batch: decided when read
            self._cache[("ptx", generated)] = outcome.result
        else:
            outcome = check_ptx_property(generated, self.nvrtcs())
        self._ptx_seen[generated] = outcome.labels
        return outcome.result

    def _ptx_prefetch(self, programs: Sequence[BundlProgram], defer: bool) -> bool:
        """The ptx property of a round at once: one NVRTC program per version; with
        `defer` (the reducer's batches) a program the screen fails is checked alone
        only when `check` reads it (`ptx_property.DeferredPtx`)."""
        from gpusem.fuzz.bundl.ptx_property import DeferredPtx, check_ptx_round

        self._cache.clear()
        self._ptx_seen.clear()
        self._ptx_deferred.clear()
        todo = list(dict.fromkeys(as_generated(p) for p in programs))
        for generated, outcome in zip(todo, check_ptx_round(todo, self.nvrtcs(), defer),
                                      strict=True):
            if isinstance(outcome, DeferredPtx):
                self._ptx_deferred[generated] = outcome
                continue
            self._cache[("ptx", generated)] = outcome.result
            self._ptx_seen[generated] = outcome.labels
        return True

    def _compile(self, generated: Generated, prop: str) -> CheckResult:
        verdict = self._cache.get((prop, generated))
        if isinstance(verdict, Unconfirmed):  # a reducer's batch: confirmed when read
            verdict = self._cache[(prop, generated)] = verdict.decide()
        if verdict is None:
            ref, mismatch = self._reference(generated, prop)
            if mismatch is not None:
                return mismatch
            verdict = check_program(generated.program, self.backend, HARNESS_SEEDS,
                                    prop == "compile", ref=ref,
                                    confirm=lambda: self._full_if_fast(generated, ref,
                                                                       prop),
                                    sync=SYNC_OF_PROPERTY[prop])
        if isinstance(verdict, CheckResult):  # an audit difference (see _reference)
            return verdict
        if verdict.kind in ("racy", "not-compared", "unsupported"):
            return CheckResult("invalid", kind=verdict.kind, detail=verdict.message)
        if verdict.agree:
            return CheckResult("pass")
        return self._finding(generated, verdict, prop)

    def _finding(self, generated: Generated, v: Verdict, prop: str) -> CheckResult:
        program = generated.program
        text = print_program(program)
        self._remember_compared(text)
        klass = (v.details.get("rule") or v.kind if v.kind == "stuck"
                 else v.message.split(":", 1)[0] if v.message else v.kind)
        tail, construct, line = _signature_tail(text, v)
        files = {
            "program.bundl": text,
            "kernel.cu": v.kernel_source,
            "inputs.json": _inputs_json(program),
            "expected.json": json.dumps(v.expected, indent=1) + "\n",
            "actual.json": json.dumps(v.actual if v.actual is not None
                                      else {"error": v.message}, indent=1) + "\n",
            "trace.txt": (f"property {prop}; backend {self.backend}; harness schedule "
                          f"{v.schedule}\n{v.describe()}\n"
                          f"construct nearest the divergence: {construct}\n"
                          f"{RACE_FREE_LINE[generated.race_free_by_construction]}\n"),
        }
        if v.kernel_source:
            files["repro.cu"], files["repro_cpu.cpp"] = _repro(program, v, prop)
        return CheckResult("finding", signature=f"{prop}:{v.kind}:{klass}{tail}",
                           kind=f"{prop} {v.kind}", detail=v.describe(), files=files,
                           size=self.size(program), program_file="program.bundl",
                           line=line)

    def _toolchain(self, todo: list[Generated]) -> list[CheckResult]:
        """The `toolchain` verdicts of `todo`, run together; cached for `check`."""
        from gpusem.compiler.backends.toolchain import g_every, installed_checker
        from gpusem.fuzz.bundl.toolchain_property import check_round

        sampled = self._round is None or self._round % g_every() == 0
        refs = [self._reference(g, "toolchain") for g in todo]  # fast where it may
        verdicts = check_round(
            [g.program for g in todo], [r for r, _ in refs], self.backend,
            self.matrix(), installed_checker(),
            confirm=lambda i: self._full_if_fast(todo[i], refs[i][0], "toolchain"),
            sampled=sampled)
        out = [mismatch or verdict  # an audit's difference is the finding then
               for verdict, (_, mismatch) in zip(verdicts, refs, strict=True)]
        for generated, result in zip(todo, out, strict=True):
            self._cache[("toolchain", generated)] = result
        return out

    def _soundness(self, generated: Generated) -> CheckResult:
        from gpusem.interpreter.bundl.schedulers import run_program

        program, seen = generated.program, set[str]()
        outcome = run_program(program, schedule="random:7", max_steps=200_000,
                              seen=seen)
        self._remember(("soundness", generated), seen)
        if outcome.kind in ("terminated", "budget") or getattr(outcome, "trap", False):
            return CheckResult("pass")
        files = {"program.bundl": print_program(program),
                 "trace.txt": f"{outcome.kind} in {outcome.rule}: {outcome.message}\n"}
        return CheckResult("finding", signature=f"soundness:{outcome.kind}:{outcome.rule}",
                           kind=f"soundness {outcome.kind}",
                           detail=f"{outcome.rule}: {outcome.message}", files=files,
                           size=self.size(program))

    def _printparse(self, program: B.Program) -> CheckResult:
        text = print_program(program)
        try:
            back = parse_program(text, "<printed>")
        except Exception as err:  # noqa: BLE001 - any failure is the finding
            back, why = None, f"{type(err).__name__}: {err}"
        else:
            why = "" if back == program else "parse(print(p)) != p"
        if not why:
            return CheckResult("pass")
        return CheckResult("finding", signature=f"printparse:{why.split(':')[0]}",
                           kind="printparse", detail=why,
                           files={"program.bundl": text, "trace.txt": why + "\n"},
                           size=self.size(program))

    def _reference(self, generated: Generated, prop: str
                   ) -> tuple[Reference, CheckResult | None]:
        """The reference (`interpreter/bundl/reference.py`: big-step where it is
        race-free, unless GPUSEM_REFERENCE=full), and for an audited program whose two
        references differ, the `internal` finding that reports it (its verdict is then
        taken from the full reference)."""
        if not fast_enabled():
            return self._full_reference(generated, prop), None
        ref = fast_reference(generated.program,
                             prove_race_free=not generated.race_free_by_construction)
        if not ref.fast or not self._auditor.due():
            return ref, None
        full = self._full_reference(generated, prop)
        if (why := outcome_difference(ref, full)) is None:
            return full, None
        self._auditor.seen()
        text = print_program(generated.program)
        return full, CheckResult(
            "finding", signature=f"internal:fast-reference:{why.split(':')[0]}",
            kind="internal error", detail=f"fast and full reference differ: {why}"[:200],
            files={"program.bundl": text, "trace.txt": f"fast reference: {why}\n"},
            size=self.size(generated.program))

    def _full_reference(self, generated: Generated, prop: str,
                        proven: bool = False) -> Reference:
        """The interpreter's reference; kernel-shaped programs are race-free by
        construction, the others must be proved race-free by the z3 analysis before
        they are compared (`proven`: the caller holds that proof already). The rules
        its round-robin run applies are remembered for `coverage` (a fast reference
        runs no small-step machine: coverage then runs the program itself)."""
        seen: set[str] = set()
        prove = not (generated.race_free_by_construction or proven)
        ref = reference(generated.program, seen=seen, prove_race_free=prove)
        self._remember((prop, generated), seen)
        return ref

    def _full_if_fast(self, generated: Generated, ref: Reference,
                      prop: str) -> Reference | None:
        """The full reference to confirm a verdict with, if `ref` is a fast one.
        Only a compared program's verdict is confirmed, and a fast reference that is
        compared ran to its end and was proved race-free (by construction, or by
        `race_verdict`, the z3 analysis the full path would run again on the same
        program): the full path then runs the four schedules without that second
        proof (issue 31.3: the proof again was ~35% of the confirmations' CPU, which
        are ~1.4 of the ~20 in-process CPU ms a program of a cpu campaign; a proof
        stands, as `outcome_difference` says of an undecided second analysis). The
        audit (`_reference`) still runs both paths in full."""
        if not ref.fast:
            return None
        proven = ref.kind == "terminated" and not ref.racy
        return self._full_reference(generated, prop, proven=proven)

    def _remember(self, key: tuple[str, Generated], seen: set[str]) -> None:
        if len(self._seen) >= 4096:  # a campaign asks about the round it just checked
            self._seen.clear()
        self._seen[key] = frozenset(seen)

    # --------------------------------------------------------------------- bundles

    def finding_meta(self, result: CheckResult) -> dict:
        meta: dict[str, Any] = {
            "versions": tool_versions(self.backend), "device": device_name(self.backend),
            "fault": os.environ.get("GPUSEM_FAULT", ""),
            "race_free_by_construction":
                RACE_FREE_LINE[True] in result.files.get("trace.txt", "")}
        if "repro.cu" in result.files:
            from gpusem.compiler.bundl_cuda.standalone import CPU_COMMAND, NVCC_COMMAND

            meta["nvcc_command"] = NVCC_COMMAND
            meta["cpu_command"] = CPU_COMMAND
        if result.signature in self.shrink_stats:
            meta["minimised"] = self.shrink_stats[result.signature]
        if result.signature.startswith("ptx:"):
            from gpusem.fuzz.ptx_findings import meta as ptx_meta

            meta["nvrtc"] = ptx_meta(self.nvrtcs())
        return meta

    def load_program(self, files: dict[str, str], meta: dict[str, Any]) -> Generated:
        """A bundle's program, for `gpusem reduce`: race-free by construction where the
        campaign compared it as such (`race_free_by_construction` in its metadata),
        else the oracle proves it."""
        return Generated(parse_program(files["program.bundl"], "program.bundl"),
                         race_free_by_construction=_by_construction(meta))

    def replay(self, files: dict[str, str], meta: dict[str, Any]) -> CheckResult:
        """Re-run the bundle's property; a finding made with a seeded fault is replayed
        with that fault on again (the bundle records it), unless one is already set. A
        bundle's program is checked as the campaign checked it: race-free by
        construction where its metadata says so (a kernel-shaped program whose race
        freedom z3 may leave undecided: replayed "cannot test" before stop 31), else
        proved by the oracle."""
        program = parse_program(files["program.bundl"], "program.bundl")
        with bundle_fault(meta):  # the next bundle, or a campaign after, has its own
            return self.check(Generated(program, _by_construction(meta)),
                              meta["property"])


# The trace line saying how the finding's program was known race-free; the bundle's
# metadata carries it as `race_free_by_construction` (replay and reduce honour it).
RACE_FREE_LINE = {True: "race freedom: by construction (a kernel-shaped program)",
                  False: "race freedom: proved by the race analysis"}


def _by_construction(meta: dict[str, Any]) -> bool:
    return meta.get("race_free_by_construction") is True


def _repro(program: B.Program, v: Verdict, prop: str) -> tuple[str, str]:
    """The standalone reproducers (`compiler/bundl_cuda/standalone.py`): the kernel
    compiled as the finding's was, the interpreter's output embedded; `repro.cu`
    (`nvcc` alone builds it) and `repro_cpu.cpp` (g++ alone, the cpu harness inlined,
    under the finding's harness schedule)."""
    from gpusem.compiler.bundl_cuda.launch import initial_globals
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.compiler.bundl_cuda.standalone import standalone_cpu, standalone_source

    kernel = compile_program(program, CompileOptions(
        sync_motion=prop == "compile", sync=SYNC_OF_PROPERTY.get(prop, "")))
    title = f"a `{prop}` finding ({v.kind})"
    inputs = initial_globals(program)
    return (standalone_source(kernel, inputs, v.expected, title),
            standalone_cpu(kernel, inputs, v.expected, title, v.schedule or 0))


def _signature_tail(text: str, v: Verdict) -> tuple[str, str, int]:
    """What separates one bug from another beyond `PROP:KIND:CLASS`
    (`fuzz/bundl/signature.py`), and the program line it points at; computed on the
    printed program re-read, so the line is the bundle file's."""
    from gpusem.compiler.bundl_cuda.launch import initial_globals
    from gpusem.fuzz.bundl.signature import divergence

    if v.kind == "compile-error":
        return f":{v.details.get('pass', '?')}", v.details.get("pass", "?"), 0
    if v.kind != "disagree" or v.difference is None or v.expected is None:
        return "", "", 0
    printed = parse_program(text, "program.bundl")
    tail, construct, line = divergence(printed, v.difference, v.expected,
                                       initial_globals(printed))
    return ":" + tail, construct, line


def _inputs_json(program: B.Program) -> str:
    from gpusem.compiler.bundl_cuda.launch import initial_globals

    arrays = {k: v.tolist() for k, v in initial_globals(program).items()}
    return json.dumps(arrays, indent=1) + "\n"
