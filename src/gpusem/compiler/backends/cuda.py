"""The `cuda` backend: CuPy + NVRTC on a real GPU (sm_90a, an H100).

Kernels are compiled many to a module: each `.cu` text in its own namespace
(`cpu_source.namespaced_unit(for_cpu=False)`, `extern "C"` dropped so same-named
kernels do not collide), and each kernel found through NVRTC name expressions
(`gs_k<i>::name` -> its lowered name). NVRTC is driven directly rather than through
`cupy.RawModule`, because RawModule adds `-ftz=true` and picks `compute_90` where
wgmma and setmaxnreg need `sm_90a`. Options: `--gpu-architecture=sm_90a --fmad=false
--ftz=false --prec-div=true --prec-sqrt=true -std=c++17`.

Every launch runs in a worker process (multiprocessing "spawn": CUDA must never be
initialised in the parent) that owns the CUDA context; a kernel that does not finish
within its job's `timeout_s` is a "timeout" (on a GPU a barrier deadlock looks the
same), the worker is killed and replaced, and the batch goes on. A CUDA error at
launch or synchronisation (illegal address, `__trap()`) is a "runtime_error"; it
poisons the context, so the worker is replaced then too. CuPy is imported only inside
the worker (`cuda_worker.py`; CuPy is not installed on the CI machines).

Replacing a worker is made cheap, because a seeded fault can make most kernels of a
batch trap or hang: the parent keeps every batch's cubin, so a new worker loads it
(milliseconds) instead of running NVRTC again (seconds); after the first replacement a
spare worker is kept warm (CUDA context made), so the next one is ready at once; and a
launch that failed is not repeated within one `run` for jobs that differ only in the
schedule seed (which this backend ignores: the launches would be the same).

Shared memory is scribbled before every launch of a kernel that uses it (dynamic shared
memory or a static `__shared__` array): a kernel fills each SM's whole shared memory
with the byte 0xA5, which on an H100 the next kernel's blocks find in their
uninitialised shared memory (measured: `tests/backends/test_cuda_gpu.py`). That is the
cpu harness's poison byte, so a kernel that reads shared memory before writing it
fails alike on both backends instead of reading a GPU's leftover zeros.

`CudaBackend(in_process=True)` runs launches in the calling process instead (no
watchdog), for benchmarks that compare with CuPy in the same process.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from gpusem.calculus.errors import CannotRunHere
from gpusem.compiler.backends.cuda_worker import Device, Unavailable, serve
from gpusem.compiler.backends.lifetime import from_main_thread
from gpusem.compiler.backends.kernel import Job, KernelSpec, Result, prepare_args

# A backend reused for a whole campaign loads one module per batch into its worker;
# past this many the modules no batch being built wants are unloaded from it (and
# their cubins dropped here), to bound its memory. (Until issue 31.3 the worker was
# replaced instead, as cpu.py bounds dlopen: a new Python, CuPy and CUDA context, with
# the parent waiting for them, about once a minute a process in a campaign.)
MAX_MODULES_PER_WORKER = 64



@dataclass
class _Batch:
    key: str
    index: dict[str, int]  # code_key -> index in the module
    errors: dict[str, str]
    binary: bytes | None = None  # kept here, so a new worker loads it without NVRTC
    lowered: dict[int, str] | None = None


class CudaBackend:
    """CuPy/NVRTC on the GPU; see the module docstring."""

    name = "cuda"

    def __init__(
        self,
        in_process: bool = False,
        start_timeout_s: float = 120.0,
        watchdog_slack_s: float = 5.0,
    ) -> None:
        self.in_process = in_process
        self.start_timeout_s = start_timeout_s  # worker start + NVRTC build
        self.watchdog_slack_s = watchdog_slack_s  # beyond a job's timeout_s
        self._device: Device | None = None
        self._worker: tuple | None = None  # (process, connection)
        self._spare: tuple | None = None  # a started worker, once one was replaced
        # builds (NVRTC), loads (a kept cubin into a new worker), replaced (workers
        # ended after a hang, a CUDA error or a crash), unloaded (modules past
        # MAX_MODULES_PER_WORKER), repeats_skipped (see run)
        self.stats: Counter[str] = Counter()
        self._built: dict[str, _Batch] = {}  # code_key -> batch; outlives workers
        self._loaded: set[str] = set()  # batch keys the current worker has loaded

    # -------------------------------------------------------------- transport
    def _call(self, op: str, payload: tuple, timeout: float):
        if self.in_process:
            if self._device is None:
                self._device = Device()
            return "ok", getattr(self._device, op)(*payload)
        if self._worker is None or not self._worker[0].is_alive():
            self._start()
        assert self._worker is not None
        proc, conn = self._worker
        try:
            conn.send((op, payload))
            deadline = time.monotonic() + timeout
            while not conn.poll(0.05):
                if not proc.is_alive():
                    break
                if time.monotonic() > deadline:
                    self._replace()
                    return "hung", ""
            else:
                reply = conn.recv()
                if isinstance(reply, Unavailable):
                    self.close()
                    raise CannotRunHere(
                        f"the cuda backend cannot start here: {reply.reason}")
                return "ok", reply
        except (EOFError, OSError):
            pass
        proc.join(5.0)
        self._replace()
        return "died", f"crash: the CUDA worker died (exit status {proc.exitcode})"

    @staticmethod
    def _spawn() -> tuple:
        ctx = multiprocessing.get_context("spawn")
        conn, child = ctx.Pipe()
        proc = ctx.Process(target=serve, args=(child, os.getpid(), from_main_thread()),
                           daemon=True)
        proc.start()
        child.close()
        return proc, conn

    def _start(self) -> None:
        spare, self._spare = self._spare, None
        self._worker = spare if spare and spare[0].is_alive() else self._spawn()
        self._loaded.clear()  # modules live in the worker
        if self.stats["replaced"]:  # a backend that lost one worker is likely to lose more
            self._spare = self._spawn()

    def _replace(self) -> None:
        """The worker hung, died or has a poisoned context: end it; the next call
        starts the spare (or a new one)."""
        self.stats["replaced"] += 1
        self._retire()

    def _retire(self) -> None:
        self._end(self._worker)
        self._worker = None
        self._loaded.clear()

    @staticmethod
    def _end(worker: tuple | None) -> None:
        if worker is not None:
            proc, _ = worker
            if proc.is_alive():
                proc.kill()
            proc.join(5.0)

    def start(self) -> None:
        """Start the worker process now where none runs, without waiting for it (it
        imports CuPy and makes its CUDA context by itself): a Dask worker asks this
        at its start (`fuzz/engines/dask_start.warm`), so its first batch does not
        wait seconds for it (issue 31.2)."""
        if not self.in_process and (self._worker is None
                                    or not self._worker[0].is_alive()):
            self._start()

    def close(self) -> None:
        for worker in (self._worker, self._spare):
            self._end(worker)
        self._worker = self._spare = None
        self._loaded.clear()
        self._built.clear()

    # -------------------------------------------------------------- build + run
    def _ensure_built(self, specs: list[KernelSpec],
                      keys: list[str] | None = None) -> dict[str, _Batch]:
        """`keys`: the specs' code keys, where the caller has them."""
        wanted = dict(zip(keys if keys is not None else [s.code_key() for s in specs],
                          specs, strict=True))
        missing = sorted(k for k in wanted if k not in self._built)
        if missing and not self.in_process and self._modules() >= MAX_MODULES_PER_WORKER:
            # bound the worker's and this cache's memory: keep only what is wanted
            keep = {b.key for k, b in self._built.items() if k in wanted}
            self._built = {k: b for k, b in self._built.items() if b.key in keep}
            if len(self._loaded) >= MAX_MODULES_PER_WORKER:
                self._unload(self._loaded - keep)
        if missing:
            batch_key = hashlib.sha256("".join(missing).encode()).hexdigest()[:24]
            items = [
                (i, wanted[k].name, wanted[k].source) for i, k in enumerate(missing)
            ]
            self.stats["builds"] += 1
            status, reply, loaded = self.build_module(batch_key, items)
            if status == "ok":
                errors, binary, lowered = reply
                if loaded:
                    self._loaded.add(batch_key)
            else:
                errors = {i: reply or "build timed out" for i, _ in enumerate(missing)}
                binary, lowered = None, {}
            batch = _Batch(batch_key, {k: i for i, k in enumerate(missing)}, {},
                           binary, lowered)
            for i, k in enumerate(missing):
                if i in errors:
                    batch.errors[k] = errors[i]
                self._built[k] = batch
        return self._built

    def build_module(self, batch_key: str, items: list[tuple[int, str, str]]
                     ) -> tuple[str, Any, bool]:
        """Build `items` ((index, kernel name, source)) into one module: (status,
        reply, loaded) with `_call`'s status and reply = (errors, binary, lowered);
        `loaded`: the worker holds the module already (else it is loaded from the
        binary before its first launch). Here NVRTC in the worker; the toolchain
        matrix (`toolchain.MatrixBackend`) builds with nvcc / ptxas instead."""
        status, reply = self._call("build", (batch_key, items), self.start_timeout_s)
        return status, reply, True

    def _unload(self, keys: set[str]) -> None:
        """Unload the modules of `keys` from the worker; one that does not answer is
        replaced (`_call`), which unloads every module as well."""
        if self._worker is None or not self._worker[0].is_alive():
            self._loaded.clear()  # no worker: nothing is loaded
            return
        status, _ = self._call("unload", (sorted(keys),), self.start_timeout_s)
        if status == "ok":
            self._loaded -= keys
            self.stats["unloaded"] += len(keys)

    def _modules(self) -> int:
        return len({batch.key for batch in self._built.values()})

    def _ensure_loaded(self, batch: _Batch) -> str | None:
        """The batch's module in the current worker (a new one after a replacement);
        None, or why it could not be loaded."""
        if self.in_process or batch.key in self._loaded or batch.binary is None:
            return None
        self.stats["loads"] += 1
        status, reply = self._call(
            "load", (batch.key, batch.binary, batch.lowered), self.start_timeout_s
        )
        if status != "ok":
            return reply or "loading the module timed out"
        self._loaded.add(batch.key)
        return None

    def run(self, jobs: list[Job]) -> list[Result]:
        """One result per job, in order. The launches go to the worker in one message
        and come back one by one as each ends (`cuda_worker.launch_many`), each under
        its own watchdog; after a launch that hangs or fails (the context is then
        unusable) the worker is replaced and the rest are sent to the new one."""
        prepared = [prepare_args(job) for job in jobs]
        keys = _code_keys(jobs)
        built = self._ensure_built([job.spec for job in jobs], keys)  # kept across swaps
        launches = [_launch_key(k, a, s) for k, (a, s) in zip(keys, prepared, strict=True)]
        results: list[Result | None] = [None] * len(jobs)
        failed: dict[tuple, Result] = {}  # same launch, failed: not repeated
        pending = list(range(len(jobs)))
        while pending:
            batch = []
            for i in pending:
                if launches[i] in failed:
                    self.stats["repeats_skipped"] += 1
                    results[i] = failed[launches[i]]
                elif self.in_process or (why := self._not_ready(keys[i], built[keys[i]])
                                         ) is None:
                    batch.append(i)
                else:
                    kind, detail = why
                    results[i] = Result(kind, {}, detail if kind == "build_error"
                                        else f"crash: {detail}", 0.0)
            if not batch:
                break
            if self.in_process:
                for i in batch:
                    arrays, scalars = prepared[i]
                    results[i] = self._run_one(jobs[i], keys[i], built[keys[i]], arrays,
                                               scalars)
                break
            for i, res in self._launch_many(jobs, keys, built, prepared, batch):
                results[i] = res
                if res.kind in ("runtime_error", "timeout", "crash"):
                    failed[launches[i]] = res
            pending = [i for i in batch if results[i] is None]
        return results  # type: ignore[return-value]  # every job has its result

    def _launch_many(self, jobs, keys, built, prepared, batch: list[int]):
        """(index, Result) for the jobs of `batch` in order, until the first that is
        not "ok" (the worker is then replaced; the caller sends the rest again)."""
        payloads = [self._payload(jobs[i], keys[i], built[keys[i]], *prepared[i])
                    for i in batch]
        self.stats["launch_batches"] += 1
        for i, (status, reply) in zip(batch, self._stream(
                payloads, [jobs[i].timeout_s + self.watchdog_slack_s for i in batch])):
            if status == "hung":
                yield i, Result("timeout", {}, f"timeout: kernel ran past "
                                f"{jobs[i].timeout_s}s (watchdog; a GPU deadlock looks "
                                "the same)", 0.0)
                return
            if status == "died":
                yield i, Result("crash", {}, reply, 0.0)
                return
            kind, message, outputs, elapsed = reply
            if kind != "ok":
                self._replace()  # the CUDA context is poisoned; start afresh
                yield i, Result(kind, outputs, message, elapsed)
                return
            yield i, Result(kind, outputs, message, elapsed)

    def _stream(self, payloads: list[tuple], timeouts: list[float]):
        """Send the launches in one message; ("ok", reply) for each as it comes, or a
        last ("hung", "") / ("died", why) (the worker is then replaced)."""
        if self._worker is None or not self._worker[0].is_alive():
            self._start()
        assert self._worker is not None
        proc, conn = self._worker
        try:
            conn.send(("launch_many", payloads))
            for timeout in timeouts:
                deadline = time.monotonic() + timeout
                while not conn.poll(0.05):
                    if not proc.is_alive():
                        raise EOFError
                    if time.monotonic() > deadline:
                        self._replace()
                        yield "hung", ""
                        return
                reply = conn.recv()
                if isinstance(reply, Unavailable):
                    self.close()
                    raise CannotRunHere(
                        f"the cuda backend cannot start here: {reply.reason}")
                yield "ok", reply
                if reply[0] != "ok":
                    return
        except (EOFError, OSError):
            proc.join(5.0)
            self._replace()
            yield "died", f"crash: the CUDA worker died (exit status {proc.exitcode})"

    def _not_ready(self, key: str,
                   batch: _Batch) -> tuple[Literal["build_error", "crash"], str] | None:
        """("build_error", its message) or ("crash", why the module cannot be loaded
        into the current worker) when the kernel cannot be launched; else None."""
        if key in batch.errors:
            return "build_error", batch.errors[key]
        if (why := self._ensure_loaded(batch)) is not None:
            return "crash", why
        return None

    def _payload(self, job: Job, key: str, batch: _Batch, arrays, scalars,
                 timing=None) -> tuple:
        spec = job.spec
        params = [(p.name, p.dtype, p.pointer) for p in spec.params]
        return (
            batch.key,
            batch.index[key],
            spec.grid,
            spec.block,
            spec.dynamic_smem,
            params,
            arrays,
            scalars,
            timing,
            _uses_shared(spec),
        )

    def _run_one(self, job: Job, key: str, batch: _Batch, arrays, scalars) -> Result:
        if (why := self._not_ready(key, batch)) is not None:
            kind, detail = why
            message = detail if kind == "build_error" else f"crash: {detail}"
            return Result(kind, {}, message, 0.0)
        payload = self._payload(job, key, batch, arrays, scalars)
        status, reply = self._call(
            "launch", payload, job.timeout_s + self.watchdog_slack_s
        )
        if status == "hung":
            return Result(
                "timeout",
                {},
                f"timeout: kernel ran past {job.timeout_s}s "
                "(watchdog; a GPU deadlock looks the same)",
                0.0,
            )
        if status == "died":
            return Result("crash", {}, reply, 0.0)
        kind, message, outputs, elapsed = reply
        if kind != "ok" and not self.in_process:
            self._replace()  # the CUDA context is poisoned; start afresh
        return Result(kind, outputs, message, elapsed)

    def time_kernel(self, job: Job, warmup: int = 3, iters: int = 20) -> float:
        """Mean milliseconds per launch over `iters` (CUDA events), after `warmup`."""
        return float(self._timed(job, (warmup, iters)))

    def time_kernel_each(self, job: Job, warmup: int = 3, iters: int = 20
                         ) -> list[float]:
        """Each of `iters` launches' milliseconds (an event between any two, queued
        back to back), after `warmup`: for a median, which one slow launch (a clock
        change, another process) does not move as it moves a mean."""
        return [float(ms) for ms in self._timed(job, (warmup, iters, True))]

    def _timed(self, job: Job, timing: tuple):
        arrays, scalars = prepare_args(job)
        key = job.spec.code_key()
        batch = self._ensure_built([job.spec])[key]
        if (why := self._not_ready(key, batch)) is not None:
            kind, detail = why
            raise RuntimeError(detail if kind == "build_error" else f"timing failed: {detail}")
        payload = self._payload(job, key, batch, arrays, scalars, timing)
        warmup, iters = timing[:2]
        status, reply = self._call(
            "launch", payload, job.timeout_s * (warmup + iters) + 60
        )
        if status != "ok" or reply[0] != "ok":
            raise RuntimeError(f"timing failed: {status} {reply}")
        return reply[3]


def _uses_shared(spec: KernelSpec) -> bool:
    """Dynamic shared memory, or a static `__shared__` array (an `extern` one has
    only the dynamic size: generated kernels declare it whether they use it or not)."""
    return spec.dynamic_smem > 0 or static_shared(spec.source)


def static_shared(source: str) -> bool:
    """Whether `source` says `__shared__` somewhere not right after `extern `: what
    the regex `(?<!extern )__shared__` finds, by `str.find`. Note: a regex that
    begins with a lookbehind has no literal to skip ahead to, and tried every offset
    of a kernel's ~4 KB text: ~0.1-0.25 ms, once per launch, four launches a program
    (issue 31.3; scripts/profile_cuda_host.py)."""
    at = source.find(_SHARED)
    while at != -1:
        if source[max(0, at - len(_EXTERN)):at] != _EXTERN:
            return True
        at = source.find(_SHARED, at + 1)
    return False


_SHARED, _EXTERN = "__shared__", "extern "


def _code_keys(jobs: list[Job]) -> list[str]:
    """Each job's `spec.code_key()`, hashed once per spec: a program's jobs (one per
    harness seed) share theirs, and each hash reads the whole source."""
    by_spec: dict[int, str] = {}  # id(spec): the jobs keep every spec alive
    keys = []
    for job in jobs:
        key = by_spec.get(id(job.spec))
        if key is None:
            key = by_spec[id(job.spec)] = job.spec.code_key()
        keys.append(key)
    return keys


def _launch_key(code_key: str, arrays: dict, scalars: dict) -> tuple:
    """What a launch on this backend depends on (not the schedule seed)."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        digest.update(name.encode() + b"\0" + arrays[name].tobytes())
    scalar_bytes = tuple((k, np.asarray(v).tobytes()) for k, v in sorted(scalars.items()))
    return code_key, digest.hexdigest(), scalar_bytes
