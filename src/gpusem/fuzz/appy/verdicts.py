"""Each kernel of an APPy program gets its own verdict (issue 17).

A program of several kernels is read kernel by kernel by the sequential reading (with
the legality rules watching), so that each kernel's inputs are the state the kernels
before it leave. appyc then compiles the whole function once; when it agrees, every
kernel agrees. Otherwise each kernel is compiled and run as a function of its own, on
its own inputs: one kernel's failure (a generation error aborts the whole module) no
longer hides another's, and a program whose kernels all agree alone but not together
is an `interaction` finding. On the cuda backend a failing kernel's generated module
is also run by Triton's interpreter (the differential that says whether appyc or
Triton is at fault).

Conventions: `KernelRun` (one kernel: its function, inputs, expected state, outcome,
signature), `ProgramRun` (all kernels and the whole program's outcome).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from gpusem.calculus.appy import ast as A
from gpusem.calculus.appy.printer import print_program
from gpusem.compiler.appy_triton.driver import AppycDriver, Case, Outcome
from gpusem.fuzz.appy.causes import Cause, cause_signature, normalise
from gpusem.fuzz.appy.coverage import features
from gpusem.interpreter.appy.legality import Verdict, check_legal

COMPARED = ("agree", "wrong")  # outcomes that reached a numeric comparison


@dataclass
class KernelRun:
    fn: A.Function
    source: str  # what gpusem printed (never the raw text of a bundle)
    arrays: dict[str, np.ndarray]
    scalars: dict[str, int | float]
    expected: dict[str, np.ndarray]
    feats: set[str]
    outcome: Outcome | None = None
    signature: str = ""
    cause: Cause | None = None
    blame: str = ""  # appyc | triton | triton-interpreter | undecided ("" = agrees)
    differential: dict = field(default_factory=dict)

    @property
    def compared(self) -> bool:
        return self.outcome is not None and self.outcome.kind in COMPARED

    @property
    def failed(self) -> bool:
        return self.outcome is not None and self.outcome.failed and (
            self.outcome.kind != "environment")


@dataclass
class ProgramRun:
    kernels: list[KernelRun]
    verdict: Verdict  # the first illegal kernel's, or the last legal one
    whole: Outcome | None = None
    interaction: str = ""  # signature when the kernels agree alone but not together
    source: str = ""  # the whole function as gpusem printed it

    @property
    def compared(self) -> bool:
        return any(k.compared for k in self.kernels)


def kernel_functions(fn: A.Function, slices: list[tuple[int, int]]) -> list[A.Function]:
    """One function per kernel, with the parameters its statements use."""
    out = []
    for a, b in slices:
        body = fn.body[a:b]
        names = {x.id for s in A.walk_stmts(body) for e in A.stmt_exprs(s)
                 for x in A.walk_expr(e) if isinstance(x, A.Name)}
        arrays = {x.array for s in A.walk_stmts(body) for e in A.stmt_exprs(s)
                  for x in A.walk_expr(e) if isinstance(x, A.Subscript)}
        params = tuple(p for p in fn.params if p.name in (arrays if p.is_array else names))
        out.append(dataclasses.replace(fn, params=params, body=body))
    return out


def read_kernels(fn: A.Function, slices: list[tuple[int, int]],
                 arrays: dict[str, np.ndarray],
                 scalars: dict[str, int | float]) -> ProgramRun:
    """The sequential reading, kernel by kernel: each kernel's inputs and result."""
    state = {k: v.copy() for k, v in arrays.items()}
    runs: list[KernelRun] = []
    verdict = Verdict(True, expected={})
    for kfn in kernel_functions(fn, slices) if len(slices) > 1 else [fn]:
        ins = {p.name: state[p.name] for p in kfn.params if p.is_array}
        sc = {p.name: scalars[p.name] for p in kfn.params if not p.is_array}
        verdict = check_legal(kfn, ins, sc)
        if not verdict.legal or verdict.expected is None:
            return ProgramRun([], verdict)
        feats = features(kfn, {k: v for k, v in scalars.items() if isinstance(v, int)},
                         tuple(sorted({str(v.dtype) for v in ins.values()})))
        runs.append(KernelRun(kfn, print_program(kfn), ins, sc, verdict.expected, feats))
        state |= verdict.expected
    return ProgramRun(runs, Verdict(True, expected=state))


def case_of(fn: A.Function, source: str, arrays: dict[str, np.ndarray],
            scalars: dict[str, int | float], module: str = "") -> Case:
    """The driver's case: `to(..)` arrays are passed as NumPy arrays (appyc's host code
    moves them), and a returned array is compared as that array."""
    host = tuple(sorted({x for s in A.walk_stmts(fn.body) if isinstance(s, A.For)
                         and isinstance(s.directive, A.ParallelFor)
                         for x in s.directive.to}))
    ret = next((s.value.id for s in fn.body if isinstance(s, A.Return)
                and isinstance(s.value, A.Name)), "")
    return Case("c", source, fn.name, [p.name for p in fn.params], arrays, scalars,
                module=module, host_arrays=host, returns=ret)


def run_program(driver: AppycDriver, prog: ProgramRun, whole_fn: A.Function,
                arrays: dict[str, np.ndarray], scalars: dict[str, int | float],
                interp: AppycDriver | None = None) -> ProgramRun:
    """Compile and run: the whole function first, then each kernel alone if needed."""
    final = prog.verdict.expected
    whole_src = prog.source = print_program(whole_fn)
    prog.whole = driver.run(case_of(whole_fn, whole_src, arrays, scalars), final)
    if len(prog.kernels) == 1:
        prog.kernels[0].outcome = prog.whole
    elif not prog.whole.failed:
        for k in prog.kernels:
            k.outcome = prog.whole
    else:
        for k in prog.kernels:
            k.outcome = driver.run(case_of(k.fn, k.source, k.arrays, k.scalars),
                                   k.expected)
        if prog.whole.kind != "environment" and not any(k.failed for k in prog.kernels):
            prog.interaction = f"interaction:{prog.whole.kind}:" + (
                normalise(prog.whole.detail) if prog.whole.kind != "wrong" else "")
    for k in prog.kernels:
        if k.failed:
            sign_kernel(k, interp, driver.backend)
    return prog


def sign_kernel(k: KernelRun, interp: AppycDriver | None, backend: str) -> None:
    assert k.outcome is not None
    k.signature, k.cause, dropped = cause_signature(
        k.outcome.kind, k.outcome.detail, k.feats, k.outcome.module)
    if dropped:
        # Evidence in the emitted module outranks every differential below: the
        # interpreter agreeing would only be its sequential order hiding the race.
        k.blame = "appyc"
        k.differential = {"evidence": dropped, "blame": "appyc"}
        return
    # Without a GPU beside it, an uncatalogued failure could be appyc's code or Triton's
    # interpreter running it: only the differential (cuda backend) decides.
    k.blame = k.cause.blame if k.cause else (
        "appyc" if backend == "cuda" else "undecided (no GPU run)")
    if interp is None or backend != "cuda" or not k.outcome.module:
        return
    # The differential: the same generated module in Triton's interpreter.
    other = interp.run(case_of(k.fn, k.source, k.arrays, k.scalars, k.outcome.module),
                       k.expected)
    k.differential = {"gpu": k.outcome.kind, "interpreter": other.kind,
                      "interpreter_detail": other.detail[:200]}
    if other.kind == "environment":
        k.blame = "undecided"
    elif other.failed and other.kind == k.outcome.kind:
        k.blame = "appyc"  # the generated code fails the same way on both
    elif not other.failed and k.outcome.kind in ("wrong", "oob", "crash", "runtime"):
        k.blame = "triton"  # right in the interpreter, wrong on the GPU
        if k.cause is None:  # a catalogued cause is one signature whoever shows it
            k.signature += "@triton"
    else:
        k.blame = "undecided"  # e.g. the compiler rejects what the interpreter runs
    k.differential["blame"] = k.blame


def reported(prog: ProgramRun) -> KernelRun | None:
    """The kernel whose finding the program reports: one of no known cause before one
    of the catalogue (a known bug must not hide an unknown one), then the first."""
    failing = [k for k in prog.kernels if k.failed]
    failing.sort(key=lambda k: k.cause is not None)
    return failing[0] if failing else None
