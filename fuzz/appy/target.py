"""APPy as a campaign target: generate, check with the legality oracle, run appyc.

Properties:
  compile   (default) a legal program compiled by appyc computes its sequential reading
  legality  a mutant that breaks a directive rule is rejected by the legality checker
            (the teeth of `typing_rules/appy/legality.py`; no compiler involved)

Signatures (de-duplication): `<kind>:<normalised first error line>` for errors, and
`wrong:<directive path of the loop nest writing the first bad array>` for wrong results.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time

import numpy as np
from gpusem.calculus.appy import ast as A
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.appy.printer import directive_text, print_program
from gpusem.calculus.errors import BadInput, GpusemError
from gpusem.compiler.appy_triton.driver import (
    AppycDriver,
    Case,
    Outcome,
    appyc_available,
    ensure_appyc,
    versions,
)
from gpusem.fuzz.appy.mutators import mutants
from gpusem.fuzz.appy.strategies import AppyProgram, programs
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
            raise BadInput(f"target unavailable: {why}")
        self.backend = backend
        self.timeout = timeout
        self._driver: AppycDriver | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def driver(self) -> AppycDriver:
        if self._driver is None:
            self._driver = AppycDriver(self.backend, self.timeout)
        return self._driver

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    def strategy(self, prop: str):
        if prop == "legality":
            return programs().flatmap(lambda p: st.sampled_from(mutants(p) or [p]))
        return programs()

    def size(self, program: AppyProgram) -> int:
        return A.stmt_count(program.fn.body)

    # ---------------------------------------------------------------------- check
    def check(self, program: AppyProgram, prop: str = "compile") -> CheckResult:
        arrays, scalars = program.inputs()
        source = print_program(program.fn)
        if prop == "legality":
            return self._check_legality(program, source, arrays, scalars)
        return self.check_source(source, arrays, scalars, size=self.size(program))

    def _check_legality(self, program, source, arrays, scalars) -> CheckResult:
        if not getattr(program, "mutated", False):
            return CheckResult("pass")
        v = check_legal(program.fn, arrays, scalars)
        if not v.legal:
            return CheckResult("pass", detail=v.message)
        return CheckResult(
            "finding", "legality:missed:" + program.mutated, "legality-missed",
            f"mutant '{program.mutated}' accepted by the legality checker",
            {"program.py": source, "inputs.json": _inputs_json(arrays, scalars)},
            self.size(program))

    def minimise(self, program: AppyProgram, res: CheckResult,
                 prop: str = "compile") -> CheckResult:
        """`drop_statement`: delete top-level statements while the signature stays
        (hypothesis shrinks a kernel's choices well, but rarely deletes an earlier
        kernel whose choices precede the failing one)."""
        changed = True
        while changed:
            changed = False
            for k in range(len(program.fn.body)):
                cand = _drop_statement(program, k)
                if cand is None:
                    continue
                try:
                    r = self.check(cand, prop)
                except GpusemError:  # the deletion left the program invalid
                    continue         # (e.g. a name used but no longer defined)
                if r.status == "finding" and r.signature == res.signature:
                    program, res, changed = cand, r, True
                    break
        return res

    def check_source(self, source: str, arrays: dict, scalars: dict,
                     size: int | None = None) -> CheckResult:
        fn = parse_program(source)
        verdict = check_legal(fn, arrays, scalars)
        if not verdict.legal:  # never blame the compiler for an illegal program
            return CheckResult("invalid", detail=verdict.message)
        case = Case("c", source, fn.name, [p.name for p in fn.params], arrays, scalars)
        t0 = time.perf_counter()
        if self.backend == "sm90":
            return self._check_sm90(fn, case, size)
        out = self.driver.run(case, verdict.expected)
        if not out.failed:
            return CheckResult("pass", seconds=time.perf_counter() - t0)
        why = self._not_runnable_here(out)
        if why:
            return CheckResult("skip", detail=why)
        sig = signature(fn, out)
        files = {"program.py": source, "kernel_triton.py": out.module,
                 "inputs.json": _inputs_json(arrays, scalars),
                 "expected.json": _arrays_json(verdict.expected),
                 "actual.json": _actual_json(out),
                 "trace.txt": _trace(fn, out)}
        return CheckResult("finding", sig, out.kind, out.detail, files,
                           size if size is not None else A.stmt_count(fn.body),
                           time.perf_counter() - t0)

    def _check_sm90(self, fn: A.Function, case: Case, size: int | None) -> CheckResult:
        """Compile-only: every kernel the host code launches must build for sm_90."""
        res = self.driver.compile_sm90(case)
        if not res["errors"]:
            return CheckResult("pass")
        err = res["errors"][0]
        kind = "host" if err.startswith("host: ") else "triton"
        files = {"program.py": case.source, "inputs.json": _inputs_json(
            case.arrays, case.scalars), "actual.json": json.dumps(res) + "\n"}
        return CheckResult("finding", f"sm90:{kind}:{_normalise(err)}", kind,
                           f"sm_90 compile: {err}", files,
                           size if size is not None else A.stmt_count(fn.body))

    def _not_runnable_here(self, out: Outcome) -> str:
        """Failures of the CPU stand-in itself, not of appyc: Triton's interpreter has no
        libdevice, and appyc's data pragmas hard-code device="cuda" (those programs
        run on the `cuda` backend, and `--sm90` compiles their kernels)."""
        if self.backend != "cpu" or out.kind not in ("triton", "host", "runtime"):
            return ""
        if "libdevice." in out.module and out.kind == "triton":
            return "libdevice is not available in Triton's interpreter"
        if "CUDA" in out.detail or "cuda" in out.detail:
            return "the generated host code needs a CUDA device"
        return ""

    def confirm_sm90(self, source: str, arrays: dict, scalars: dict) -> dict:
        """Compile the kernels for sm_90 (no GPU): does a Triton error reproduce there?"""
        fn = parse_program(source)
        case = Case("c", source, fn.name, [p.name for p in fn.params], arrays, scalars)
        with AppycDriver("sm90", max(self.timeout, 60.0)) as d:
            return d.compile_sm90(case)

    def finding_meta(self, result: CheckResult) -> dict:
        return {"versions": versions(), "device": device_name(self.backend)}

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        arrays, scalars = read_inputs(files["inputs.json"])
        if meta.get("property") == "legality":
            fn = parse_program(files["program.py"])
            v = check_legal(fn, arrays, scalars)
            return CheckResult("pass") if not v.legal else CheckResult(
                "finding", meta["signature"], "legality-missed", "still accepted")
        return self.check_source(files["program.py"], arrays, scalars)


def _drop_statement(program: AppyProgram, k: int) -> AppyProgram | None:
    body = program.fn.body[:k] + program.fn.body[k + 1:]
    if not body:
        return None
    used = {x.array for s in A.walk_stmts(body) for x in _stmt_exprs(s)
            if isinstance(x, A.Subscript)}
    names = {x.id for s in A.walk_stmts(body) for x in _stmt_exprs(s)
             if isinstance(x, A.Name)}
    params = tuple(p for p in program.fn.params
                   if (p.name in used if p.is_array else p.name in names))
    fn = dataclasses.replace(program.fn, body=body, params=params)
    return dataclasses.replace(
        program, fn=fn, arrays=tuple(a for a in program.arrays if a[0] in used),
        scalars=tuple(s for s in program.scalars if s[0] in names))


def _stmt_exprs(s: A.Stmt):
    match s:
        case A.Assign(target=t, value=v):
            roots = [t, v]
        case A.If(cond=c):
            roots = [c]
        case A.For(start=a, stop=b, step=c):
            roots = [a, b, c]
    for r in roots:
        yield from A.walk_expr(r)


# ------------------------------------------------------------------- signatures


def _normalise(text: str) -> str:
    text = text.split(" | at ")[0]  # the user's source line is context, not the class
    text = re.sub(r"\b(fp|float|int|i|u|bf)(16|32|64|8|1)\b", "<ty>", text)
    text = re.sub(r"'[^']*'", "'…'", text) if len(text) > 160 else text
    text = re.sub(r"\d+", "N", text)
    text = re.sub(r"\b[A-Z]\d+\b|\b(acc|t)N\b", "X", text)
    return text[:160]


def signature(fn: A.Function, out: Outcome) -> str:
    if out.kind == "wrong" and out.mismatch is not None:
        return "wrong:" + _writer_path(fn, out.mismatch.array)
    if out.kind == "oob" and out.array:
        return "oob:" + _writer_path(fn, out.array)
    if out.kind in ("hang", "crash"):
        return f"{out.kind}:{_normalise(out.detail)}"
    return f"{out.kind}:{_normalise(out.detail)}"


def _writer_path(fn: A.Function, array: str) -> str:
    """The directives on the path to the first statement storing to `array`."""

    def walk(body, path):
        for s in body:
            match s:
                case A.For(directive=d, body=inner):
                    # simd(64) and simd are one class: the width is not the cause
                    tag = "for" if d is None else re.sub(r"\(\d+\)", "",
                                                         directive_text(d))
                    tag = re.sub(r"\(\+:[^)]*\)", "(+:x)", tag)
                    r = walk(inner, path + [tag])
                    if r:
                        return r
                case A.If(body=then, orelse=orelse):
                    r = walk(then + orelse, path + ["if"])
                    if r:
                        return r
                case A.Assign(target=A.Subscript(array=a)) if a == array:
                    tags = (["atomic"] if s.atomic else []) + (
                        ["tensor:" + ",".join(_dimtag(d) for d in s.pragma.dims)]
                        if s.pragma else []) + ([f"op{s.op}"] if s.op else [])
                    return path + (tags or ["store"])
        return None

    return "/".join(walk(fn.body, []) or ["?"])


def _dimtag(d: A.DimProps) -> str:
    return "+".join(k for k, v in (("parallel", d.parallel), ("simd", d.simd),
                                   ("reduce", d.reduce), ("le", d.le)) if v) or "plain"


# ------------------------------------------------------------------------ files


def _arr(a: np.ndarray) -> dict:
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.tolist()}


def _inputs_json(arrays: dict, scalars: dict) -> str:
    return json.dumps({"arrays": {k: _arr(v) for k, v in arrays.items()},
                       "scalars": scalars}, indent=1) + "\n"


def read_inputs(text: str) -> tuple[dict, dict]:
    d = json.loads(text)
    arrays = {k: np.asarray(v["data"], dtype=v["dtype"]).reshape(v["shape"])
              for k, v in d["arrays"].items()}
    return arrays, d["scalars"]


def _arrays_json(arrays: dict | None) -> str:
    return json.dumps({k: _arr(v) for k, v in (arrays or {}).items()}) + "\n"


def _actual_json(out: Outcome) -> str:
    if out.kind == "wrong":
        return json.dumps({"outcome": out.kind, "mismatch": out.detail,
                           "arrays": {k: _arr(v) for k, v in out.outputs.items()}}) + "\n"
    return json.dumps({"outcome": out.kind, "error": out.detail}) + "\n"


def _trace(fn: A.Function, out: Outcome) -> str:
    return (f"legality: legal (Legal-Range, Legal-Private, Legal-SimdScalar, "
            f"Legal-Atomic, Legal-Disjoint, Legal-SimdLanes all hold)\n"
            f"outcome: {out.kind}\ndetail: {out.detail}\n"
            f"seconds: {out.seconds:.3f}\n")


def device_name(backend: str) -> str:
    if backend == "cpu":
        return "Triton interpreter (TRITON_INTERPRET=1), torch CPU"
    try:
        import torch

        return torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - no torch or no GPU: say so
        return "cuda (device unknown)"
