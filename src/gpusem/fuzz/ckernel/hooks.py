"""The `toolchain` and `ptx` properties of the CKernel target, through two small
interfaces (issue 23) that `compiler/backends/toolchain.py` (the toolchain matrix) and
`compiler/backends/ptx_oracle.py` (the static PTX checker) implement. Neither is
written here.

- `ToolchainMatrix`: `run(jobs) -> {config: [Result per job]}` (toolchain.Matrix is
  one as it stands); a configuration whose result differs from the reference is a
  finding `toolchain:<configs that disagree>`.
- `PtxChecker`: `(sources) -> [[finding line, ...] per source]`; `ptx_oracle`'s
  `check_many` is adapted to it by `oracle_checker`. A kernel with a finding line is
  a finding `ptx:<check names>`.

`sass_round` is the `sass` property: `compiler/backends/sass_check.py` (ptxas -O3
SASS against the PTX, T2's class) on every kernel, a finding `sass:<check names>`.

`target.matrix` / `target.ptx_checker` take a test's or a user's own; left None, the
first use takes this tree's; where there is none (or no NVRTC to check with) the
property says so (`invalid`, kind `not-installed`), never a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends.kernel import Job, Result
from gpusem.compiler.ckernel_cuda.emit import emit_kernel, kernel_spec
from gpusem.fuzz.ckernel.check import LAUNCH_TIMEOUT_S, first_difference, seeds_for
from gpusem.fuzz.targets import CheckResult
from gpusem.interpreter.ckernel.inputs import initial_memory


class ToolchainMatrix(Protocol):
    def run(self, jobs: list[Job]) -> dict[str, list[Result]]: ...


class PtxChecker(Protocol):
    def __call__(self, sources: Sequence[str]) -> list[list[str]]: ...


def oracle_checker() -> PtxChecker | None:
    """ptx_oracle.check_many as a PtxChecker (no NVRTC installed: it raises BadInput,
    which `ptx_round` reports as not installed)."""
    from gpusem.compiler.backends import ptx_oracle

    def check(sources: Sequence[str]) -> list[list[str]]:
        reports = ptx_oracle.check_many(list(sources))
        return [[f.one_line() for f in r.findings] for r in reports]

    return check


def default_matrix(backend: str) -> ToolchainMatrix | None:
    from gpusem.compiler.backends import toolchain

    matrix: ToolchainMatrix = toolchain.Matrix(backend=backend)
    return matrix


def _missing(what: str, n: int) -> list[CheckResult]:
    return [CheckResult("invalid", kind="not-installed",
                        detail=f"{what} is not installed in this tree")] * n


def toolchain_round(target: Any, kernels: list[A.Kernel]) -> list[CheckResult]:
    """Every kernel under every configuration of `target.matrix`, one call (on cuda:
    the GPU configurations, then the cpu harness for the kernels they get wrong)."""
    if target.matrix is None:
        target.matrix = default_matrix(target.backend)
    if target.matrix is None:
        return _missing("the toolchain matrix (compiler/backends/toolchain.py)",
                        len(kernels))
    refs = [target.reference(k) for k in kernels]
    seeds = seeds_for(target.backend)
    jobs, owners = [], []
    for i, (k, ref) in enumerate(zip(kernels, refs, strict=True)):
        if ref.run is None:
            continue
        for s in seeds:
            jobs.append(Job(kernel_spec(k), initial_memory(k), s, LAUNCH_TIMEOUT_S))
            owners.append(i)
    gpu = _gpu_configs(target)
    runs = (target.matrix.run(jobs, gpu) if gpu else target.matrix.run(jobs)) \
        if jobs else {}
    ran = tuple(sorted(runs))  # the configurations that checked the round's kernels
    launched = set(owners)
    bad = _disagreements(runs, owners, refs)
    if gpu and bad:  # the cpu harness, where attribution and the signature read it
        mine = [k for k, o in enumerate(owners) if o in bad]
        cpu = target.matrix.run([jobs[k] for k in mine], ("cpu",))
        for i, diffs in _disagreements(cpu, [owners[k] for k in mine], refs).items():
            bad[i] |= diffs
    out = []
    for i, (k, ref) in enumerate(zip(kernels, refs, strict=True)):
        if ref.run is None:
            out.append(CheckResult("finding", signature="toolchain:ill-typed",
                                   kind="ill-typed", files=target.program_files(k)))
        elif i in bad:
            configs = ",".join(sorted(bad[i]))
            detail = "; ".join(f"{c}: {d}" for c, d in sorted(bad[i].items()))
            out.append(CheckResult("finding", signature=f"toolchain:{configs}",
                                   kind="toolchain", detail=detail[:200],
                                   files=target.program_files(k)
                                   | {"kernel.cu": emit_kernel(k),
                                      "trace.txt": detail + "\n"},
                                   size=target.size(k),
                                   configs=tuple(sorted({*ran, *(("cpu",) if gpu
                                                               else ())}))))
        else:  # counted per configuration by the campaign (`by_configuration`)
            out.append(CheckResult("pass", configs=ran if i in launched else ()))
    return out


def _gpu_configs(target: Any) -> tuple[str, ...] | None:
    """The GPU configurations to run first, on cuda with this tree's matrix (the cpu
    harness then runs only for kernels a GPU configuration gets wrong: it is not
    NVIDIA's toolchain, and what it alone finds is the `compile` property's on cpu);
    None: run the matrix as it is (a test's, the cpu backend, GPUSEM_TOOLCHAIN_EAGER)."""
    from gpusem.compiler.backends import toolchain

    matrix = target.matrix
    if (target.backend != "cuda" or not isinstance(matrix, toolchain.Matrix)
            or "cpu" not in matrix.configs or toolchain.eager()):
        return None
    return tuple(c for c in matrix.configs if c != "cpu")


def _disagreements(runs: dict[str, list[Result]], owners: list[int],
                   refs: list[Any]) -> dict[int, dict[str, str]]:
    bad: dict[int, dict[str, str]] = {}
    for config, results in runs.items():
        for i, res in zip(owners, results, strict=True):
            diff = (res.kind if not res.ok else
                    first_difference(refs[i].expected, res.outputs))
            if diff is not None:
                bad.setdefault(i, {}).setdefault(config, diff)
    return bad


def ptx_round(target: Any, kernels: list[A.Kernel]) -> list[CheckResult]:
    """The static PTX check of every kernel, one call."""
    if target.ptx_checker is None:
        target.ptx_checker = oracle_checker()
    if target.ptx_checker is None:
        return _missing("the static PTX checker (compiler/backends/ptx_oracle.py)",
                        len(kernels))
    sources = [emit_kernel(k) for k in kernels]
    try:
        verdicts = target.ptx_checker(sources)
    except BadInput as err:  # e.g. no NVRTC installed: nothing checked, say so
        return [CheckResult("invalid", kind="not-installed", detail=err.one_line())
                ] * len(kernels)
    out = []
    for k, src, lines in zip(kernels, sources, verdicts, strict=True):
        if not lines:
            out.append(CheckResult("pass"))
            continue
        checks = ",".join(sorted({ln.split(":", 1)[0] for ln in lines}))
        out.append(CheckResult("finding", signature=f"ptx:{checks}", kind="ptx",
                               detail=lines[0][:200],
                               files=target.program_files(k)
                               | {"kernel.cu": src, "trace.txt": "\n".join(lines)
                                  + "\n"}, size=target.size(k)))
    return out


def sass_round(target: Any, kernels: list[A.Kernel]) -> list[CheckResult]:
    """The static SASS check (`compiler/backends/sass_check.py`: T2's class) of every
    kernel, one nvcc and one cuobjdump call; no GPU. Where nvcc or cuobjdump is
    missing, nothing is checked and the property says so."""
    import json

    from gpusem.compiler.backends import sass_check
    from gpusem.compiler.ckernel_cuda.emit import kernel_spec
    from gpusem.fuzz.attribution import without_runs

    specs = [kernel_spec(k) for k in kernels]
    screen = sass_check.screen([(s.name, s.source) for s in specs])
    if screen.missing:
        return [CheckResult("invalid", kind="not-installed", detail=screen.missing)
                ] * len(kernels)
    out = []
    for k, spec, failures in zip(kernels, specs, screen.failures, strict=True):
        if not failures:
            out.append(CheckResult("pass"))
            continue
        lines = [f.one_line() for f in failures]
        checks = ",".join(sorted({f.check for f in failures}))
        # the PTX is right and the SASS contradicts it: ptxas's, with the check as
        # the cause key that GPU findings of the same fold are grouped under
        blame = without_runs("ptxas", "static-sass", lines[0], "nvcc-O3") | {
            "sass_check": [{"check": f.check, "text": f.one_line()}
                           for f in failures]}
        out.append(CheckResult("finding", signature=f"sass:{checks}", kind="sass",
                               detail=lines[0][:200],
                               files=target.program_files(k)
                               | {"kernel.cu": spec.source,
                                  "trace.txt": "\n".join(lines) + "\n",
                                  "attribution.json": json.dumps(
                                      blame, indent=1, sort_keys=True) + "\n"},
                               size=target.size(k)))
    return out
