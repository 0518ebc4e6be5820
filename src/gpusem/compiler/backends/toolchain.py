"""The toolchain matrix (issue 23): named configurations of NVIDIA's toolchain that
build and run the same kernel source on the same inputs, one `Result` per `Job` each,
so that a wrong answer can be pinned on the layer that made it (`fuzz/attribution.py`).

    config        builds the source with                          runs on
    nvrtc         NVRTC in the cuda worker, cubin for sm_90a        the GPU (as the cuda
                  (exactly what the cuda backend does)              backend does)
    nvcc-O3       nvcc -cubin sm_90a, ptxas -O3                     the GPU
    nvcc-G        nvcc -cubin -G (device debug: no optimisation)    the GPU
    ptxas-O0      nvcc's NVVM PTX through `ptxas -O0`               the GPU
    ptx-jit       nvcc's NVVM PTX, compiled by the driver's JIT     the GPU
    no-restrict   `nvrtc` on the source with `__restrict__` removed the GPU
    cpu           g++ against the SIMT harness (`cpu.py`)           the CPU

`nvrtc`, `nvcc-O3`, `ptxas-O0` and `ptx-jit` are builds of the default NVVM PTX (the
same NVVM version where NVRTC and nvcc come from one CUDA); `nvcc-G` and `no-restrict`
change the PTX itself. Every GPU configuration runs in ONE cuda worker
(`MatrixBackend`, a `CudaBackend` whose modules come from nvcc / ptxas on the host for
the host configurations, `toolchain_build.py`): one build per configuration for a
whole batch of kernels, the worker's watchdog and trap handling for every launch. A
configuration's jobs carry a tag line at the end of their source (a comment: the
compilers ignore it), so the same kernel under two configurations has two code keys
and two modules; the host configurations build it untagged, the batch numbered by its
text (`host_unit`), so their nvcc front end runs once a round.

A launch is made once per machine code: where a configuration's cubin holds, for a
job's kernel, exactly what another configuration's held (`toolchain_build.
kernel_digests`: the kernel's sections, relocations and symbols, byte for byte), the
job's launches are not made again: the configuration gets the other's results, and
`Matrix.shared` says so ({config: {job: the configuration it shares}}, evidence in
an attribution: the two builds made one SASS). A `no-restrict` job whose source has
no `__restrict__` is `nvrtc`'s own build, never built twice. The comparison of a
configuration whose binary differs is never dropped. `GPUSEM_TOOLCHAIN_SHARE=0`
launches every configuration (scripts/toolchain_cost.py measures both).

Which configurations a campaign asks about a program is the property's choice: the
Bundl `toolchain` property runs `SAMPLED` (nvcc-G) for clean programs on every K-th
round only (`g_every`, GPUSEM_TOOLCHAIN_G_EVERY).

On a machine without a GPU only `cpu` runs; `build_only` builds the host
configurations without running them (what the cpu backend's `toolchain` property
checks: a kernel one configuration refuses and another accepts).

The static PTX check (no `ld.global.nc` of a parameter the kernel writes) is another
module's (`ptx_check`, with an NVRTC per installed version); it is called through
`StaticChecker`, and `installed_checker()` says which one this tree has.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Protocol

from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends import toolchain_build
from gpusem.compiler.backends.cuda import MAX_MODULES_PER_WORKER, CudaBackend
from gpusem.compiler.backends.kernel import Job, KernelSpec, Result

CONFIGS: dict[str, str] = {
    "nvrtc": "NVRTC in the cuda worker, cubin for sm_90a (the cuda backend)",
    "nvcc-O3": "nvcc -cubin -arch=sm_90a, ptxas -O3",
    "nvcc-G": "nvcc -cubin -arch=sm_90a -G (device debug, unoptimised)",
    "ptxas-O0": "nvcc -ptx (NVVM), then ptxas -O0",
    "ptx-jit": "nvcc -ptx (NVVM), compiled by the driver's JIT at load",
    "no-restrict": "NVRTC as nvrtc, on the source without __restrict__",
    "cpu": "g++ and the SIMT harness",
}
GPU_CONFIGS = tuple(c for c in CONFIGS if c != "cpu")
DEFAULT_PTX = ("nvrtc", "nvcc-O3", "ptxas-O0", "ptx-jit")
OTHER_PTX = ("nvcc-G", "no-restrict")
BUILD_ONLY = ("nvcc-O3", "nvcc-G", "ptxas-O0")
TAG = "// gpusem toolchain config: "


def variant(spec: KernelSpec, config: str) -> KernelSpec:
    """`spec` as `config` builds it: the source changed where the configuration is a
    source variant, and tagged with the configuration's name."""
    assert config in CONFIGS, config
    source = spec.source
    if config == "no-restrict":
        source = toolchain_build.strip_restrict(source)
    return replace(spec, source=f"{source.rstrip()}\n{TAG}{config}\n")


def untagged(source: str) -> str:
    """A tagged source without its tag line (the text the configuration builds)."""
    head, _, last = source.rstrip().rpartition("\n")
    return head + "\n" if last.startswith(TAG) else source


def config_of(source: str) -> str:
    """The configuration a tagged source names ("nvrtc" when it has no tag)."""
    last = source.rstrip().rsplit("\n", 1)[-1]
    return last[len(TAG):].strip() if last.startswith(TAG) else "nvrtc"


class MatrixBackend(CudaBackend):
    """The cuda backend with the toolchain's configurations: a tagged spec is built as
    its tag says (NVRTC in the worker, or nvcc / ptxas here), then launched as usual."""

    name = "cuda-matrix"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._digests: dict[str, dict[int, str]] = {}  # batch key -> kernel digests
        # batch key -> {index in the batch: the kernel's namespace gs_k<n> in the
        # host build's unit} (`host_unit`), kept while the batch is; nvrtc's and
        # no-restrict's batches have none (their number is the index)
        self._slots: dict[str, dict[int, int]] = {}

    def build_module(self, batch_key: str, items: list[tuple[int, str, str]]
                     ) -> tuple[str, Any, bool]:
        configs = {config_of(src) for _, _, src in items}
        assert len(configs) == 1, configs  # Matrix.run builds one config at a time
        config = configs.pop()
        if config in ("nvrtc", "no-restrict"):
            return super().build_module(batch_key, items)
        plain, slots = host_unit(items)
        errors, binary, lowered = toolchain_build.build(config, plain)
        back = {n: i for i, n in slots.items()}
        if len(self._slots) >= 4 * MAX_MODULES_PER_WORKER:  # keep the kept batches'
            live = {batch.key for batch in self._built.values()}
            self._slots = {k: v for k, v in self._slots.items() if k in live}
        self._slots[batch_key] = slots
        return "ok", ({back[n]: e for n, e in errors.items()}, binary,
                      {back[n]: entry for n, entry in lowered.items()}), False

    def prepare(self, specs: list[KernelSpec]) -> None:
        """Build (not launch) every spec not built yet."""
        self._ensure_built(specs)

    def kernel_digest(self, spec: KernelSpec) -> str | None:
        """What the built module holds for `spec`'s kernel (`kernel_digests`); None
        where it did not build or the binary is PTX (ptx-jit)."""
        batch = self._built.get(spec.code_key())
        if batch is None or batch.binary is None or spec.code_key() in batch.errors:
            return None
        if batch.key not in self._digests:
            if len(self._digests) >= 64:  # one per module a worker holds at most
                self._digests.pop(next(iter(self._digests)))
            self._digests[batch.key] = toolchain_build.kernel_digests(batch.binary)
        index = batch.index[spec.code_key()]
        slot = index if config_of(spec.source) in ("nvrtc", "no-restrict") else \
            self._slots.get(batch.key, {}).get(index)
        # a host build whose numbering is not known: launched, never shared on a guess
        return None if slot is None else self._digests[batch.key].get(slot)

    def binary_of(self, spec: KernelSpec) -> tuple[bytes, str] | None:
        """(module binary, the kernel's entry name) of a spec this backend built."""
        batch = self._built.get(spec.code_key())
        if batch is None or batch.binary is None or batch.lowered is None:
            return None
        index = batch.index[spec.code_key()]
        entry = batch.lowered.get(index)
        return (batch.binary, entry) if entry else None


def host_unit(items: list[tuple[int, str, str]]
              ) -> tuple[list[tuple[int, str, str]], dict[int, int]]:
    """A host configuration's batch (index, name, tagged source) as the unit it builds:
    the untagged texts in their own order (by text, then name), numbered from 0, and
    {index in the batch: its number}. The batch orders kernels by the TAGGED code key,
    so each configuration had them in another order, hence another unit, and nvcc-O3,
    nvcc-G, ptxas-O0 and ptx-jit each ran the nvcc front end (`toolchain_build._nvvm`
    is keyed by the unit): four nvcc calls a round where one was meant (measured:
    scripts/toolchain_speed.py). The same kernels in one order make one unit for
    them all. A kernel's machine code does not depend on its namespace's number or
    place (`kernel_digests` reads it with the number left out; tests/backends/
    test_toolchain_unit.py compares every host build of generated rounds both ways)."""
    order = sorted((untagged(src), name, i) for i, name, src in items)
    plain = [(n, name, text) for n, (text, name, _) in enumerate(order)]
    return plain, {i: n for n, (_, _, i) in enumerate(order)}


@dataclass(frozen=True)
class StaticFailure:
    """One failure of the static PTX check: the check's name, the NVRTC version whose
    PTX fails it, the PTX line (number and text), what it concerns, and whom the
    check itself blames: `nvvm` (the PTX breaks an ISA rule for a correct `.cu`) or
    `ours` (the `.cu` we emitted promised something false, e.g. `const` on a buffer
    the kernel writes)."""

    check: str
    version: str
    line: int
    text: str
    detail: str = ""
    blame: str = "nvvm"

    def as_dict(self) -> dict[str, object]:
        return {"check": self.check, "version": self.version, "line": self.line,
                "text": self.text, "detail": self.detail, "blame": self.blame}


class StaticChecker(Protocol):
    """Kernel source -> the static PTX check's failures ([] when the PTX of every
    installed NVRTC passes)."""

    def __call__(self, source: str) -> list[StaticFailure]: ...


def installed_checker() -> StaticChecker | None:
    """The static PTX check over every installed NVRTC (`ptx_oracle.check_cuda`: each
    version's PTX through `ptx_check`), or None where no NVRTC is installed:
    attribution then says so rather than guessing (its rule `ptxas-O0` needs a check
    that ran and found nothing)."""
    from gpusem.compiler.backends import ptx_oracle

    try:
        ptx_oracle.installed()
    except BadInput:  # no NVRTC to compile the PTX with
        return None

    def check(source: str) -> list[StaticFailure]:
        return [StaticFailure(f.check, f.toolchain, f.line, f.text, f.one_line(),
                              f.attribution)
                for f in ptx_oracle.check_cuda(source).findings]

    return check


class Matrix:
    """Runs jobs under configurations; see the module docstring. `backend`: "cuda"
    (every configuration; a GPU) or "cpu" (`cpu` only). `cpu_runner`: the cpu backend
    to reuse (its build cache), else one of its own."""

    def __init__(self, backend: str = "cuda", configs: tuple[str, ...] | None = None,
                 cpu_runner: Any = None, share: bool | None = None) -> None:
        self.backend = backend
        self.configs = configs or (tuple(CONFIGS) if backend == "cuda" else ("cpu",))
        self._cpu = cpu_runner
        self._gpu: MatrixBackend | None = None
        self.seconds: dict[str, float] = {}  # per configuration, summed over runs
        self.share = (os.environ.get("GPUSEM_TOOLCHAIN_SHARE", "1") != "0"
                      if share is None else share)
        # of the last run: {config: {job index: the configuration whose launches
        # it shares}}; and over all runs, the launches shared and made
        self.shared: dict[str, dict[int, str]] = {}
        self.counts: dict[str, int] = {"shared": 0, "launched": 0}

    def run(self, jobs: list[Job], configs: tuple[str, ...] | None = None
            ) -> dict[str, list[Result]]:
        """{config: one Result per job, in order}, for `configs` (default: all of
        this matrix's)."""
        out: dict[str, list[Result]] = {}
        self.shared = {}
        digests: dict[tuple[int, str], str] = {}  # (job, kernel digest) -> config
        for config in configs or self.configs:
            start = time.perf_counter()
            out[config] = self._run(config, jobs, out, digests)
            self.seconds[config] = self.seconds.get(config, 0.0) + (
                time.perf_counter() - start)
        return out

    def _run(self, config: str, jobs: list[Job], done: dict[str, list[Result]],
             digests: dict[tuple[int, str], str]) -> list[Result]:
        if config == "cpu":
            if self._cpu is None:
                from gpusem.compiler.backends.cpu import CpuBackend

                self._cpu = CpuBackend()
            results: list[Result] = self._cpu.run(jobs)
            return results
        if self._gpu is None:
            self._gpu = MatrixBackend()
        gpu = self._gpu
        specs = [variant(j.spec, config) for j in jobs]
        out: list[Result | None] = [None] * len(jobs)
        shared: dict[int, str] = {}
        if self.share and config == "no-restrict" and "nvrtc" in done:
            for k, job in enumerate(jobs):  # the same text: nvrtc's build itself
                if "__restrict__" not in job.spec.source:
                    out[k], shared[k] = done["nvrtc"][k], "nvrtc"
        todo = [k for k in range(len(jobs)) if out[k] is None]
        gpu.prepare([specs[k] for k in todo])
        mine: dict[int, str] = {}
        for k in todo if self.share else ():
            if (digest := gpu.kernel_digest(specs[k])) is not None:
                mine[k] = digest
        for k in todo:
            other = digests.get((k, mine[k])) if k in mine else None
            if other is not None and other in done:
                out[k], shared[k] = done[other][k], other
        launch = [k for k in todo if out[k] is None]
        for k, res in zip(launch, gpu.run([replace(jobs[k], spec=specs[k])
                                           for k in launch]), strict=True):
            out[k] = res
            if k in mine:
                digests.setdefault((k, mine[k]), config)
        if shared:
            self.shared[config] = shared
        self.counts["shared"] += len(shared)
        self.counts["launched"] += len(launch)
        return out  # type: ignore[return-value]  # every job has its result

    def binary(self, spec: KernelSpec, config: str) -> tuple[bytes, str] | None:
        """The module binary and entry name `config` built for `spec` (after `run`)."""
        if self._gpu is None or config == "cpu":
            return None
        return self._gpu.binary_of(variant(spec, config))

    def close(self) -> None:
        if self._gpu is not None:
            self._gpu.close()
            self._gpu = None


def eager() -> bool:
    """GPUSEM_TOOLCHAIN_EAGER=1: a `toolchain` property on cuda runs every
    configuration, the cpu harness included, for every program (by default the
    harness runs only for programs a GPU configuration got wrong: the properties'
    docstrings say why)."""
    return os.environ.get("GPUSEM_TOOLCHAIN_EAGER", "0") not in ("", "0")


# nvcc-G: device debug, the most expensive build of a program (scripts/toolchain_cost.py)
# and mostly evidence for attribution ("right at -G": an optimiser is wrong), so a
# clean program is built and run with it only on every K-th round of a campaign
SAMPLED = ("nvcc-G",)
G_EVERY = 4  # the default K (docs/toolchain.md, results/toolchain/INDEX.toml say why)


def g_every() -> int:
    """K of GPUSEM_TOOLCHAIN_G_EVERY (default `G_EVERY`): a `toolchain` campaign builds
    and runs the `SAMPLED` configurations for every program of every K-th round of a
    shard (1: every round), and for every program another configuration gets wrong
    whatever the round. BadInput for anything but a whole number >= 1."""
    raw = os.environ.get("GPUSEM_TOOLCHAIN_G_EVERY", "").strip()
    if not raw:
        return G_EVERY
    if not raw.isdigit() or int(raw) < 1:
        raise BadInput(f"bad GPUSEM_TOOLCHAIN_G_EVERY: {raw} (a whole number, at "
                       "least 1: build nvcc-G on every K-th round)")
    return int(raw)


def build_only(specs: list[KernelSpec], configs: tuple[str, ...] = BUILD_ONLY
               ) -> dict[str, list[str | None]]:
    """{config: per spec, None (it builds) or the error} for the host configurations:
    one nvcc / ptxas call per configuration for all the specs (no GPU needed)."""
    items = [(i, s.name, s.source) for i, s in enumerate(specs)]
    out: dict[str, list[str | None]] = {}
    for config in configs:
        errors, _, _ = toolchain_build.build(config, items)
        out[config] = [errors.get(i) for i in range(len(specs))]
    return out

