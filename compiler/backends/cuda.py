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
the worker (it is not installed on the CI machines).

`CudaBackend(in_process=True)` runs launches in the calling process instead (no
watchdog), for benchmarks that compare with CuPy in the same process.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import time
from dataclasses import dataclass

from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.cpu import HERE
from gpusem.compiler.backends.kernel import Job, KernelSpec, Result, prepare_args

NVRTC_OPTIONS = (
    "--gpu-architecture=sm_90a",
    "--fmad=false",
    "--ftz=false",
    "--prec-div=true",
    "--prec-sqrt=true",
    "-std=c++17",
    f"-I{HERE}",
)
_MAX_DYN_SMEM_ATTR = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
# A backend reused for a whole campaign loads one module per batch into its worker;
# past this many the worker is replaced, to bound its memory (as cpu.py bounds dlopen).
MAX_MODULES_PER_WORKER = 64


# ---------------------------------------------------------------------- worker side
class _Device:
    """What lives in the process that owns the CUDA context."""

    def __init__(self) -> None:
        import cupy  # noqa: F401  (lazy: only on GPU machines)

        self.modules: dict[str, tuple[object, dict[int, str]]] = {}

    def compile(
        self, items: list[tuple[int, str, str]]
    ) -> tuple[bytes | None, dict, str]:
        """NVRTC over (index, kernel name, source); (cubin, {index: lowered}, log)."""
        from cupy_backends.cuda.libs import nvrtc

        unit = cpu_source.namespaced_unit(
            [(i, f"k{i}_src", src, "") for i, _, src in items], for_cpu=False
        )
        # Older CuPy spells it addAddNameExpression and lacks getCUBIN (then: PTX for
        # compute_90a, which the driver JIT-compiles on load).
        add_name = (
            getattr(nvrtc, "addNameExpression", None) or nvrtc.addAddNameExpression
        )
        cubin = hasattr(nvrtc, "getCUBIN")
        options = list(NVRTC_OPTIONS)
        if not cubin:
            options[0] = "--gpu-architecture=compute_90a"
        prog = nvrtc.createProgram(unit, "batch.cu", [], [])
        try:
            exprs = {i: f"gs_k{i}::{name}" for i, name, _ in items}
            for expr in exprs.values():
                add_name(prog, expr)
            try:
                nvrtc.compileProgram(prog, options)
            except nvrtc.NVRTCError:
                return None, {}, nvrtc.getProgramLog(prog)
            lowered = {i: nvrtc.getLoweredName(prog, e) for i, e in exprs.items()}
            if cubin:
                return nvrtc.getCUBIN(prog), lowered, ""
            return nvrtc.getPTX(prog).encode() + b"\0", lowered, ""
        finally:
            nvrtc.destroyProgram(prog)

    def build(self, key: str, items: list[tuple[int, str, str]]) -> dict[int, str]:
        """Load a module for `items`; {index: error} for kernels that do not build."""
        from cupy.cuda import function

        errors: dict[int, str] = {}
        remaining = list(items)
        while remaining:
            binary, lowered, log = self.compile(remaining)
            if binary is not None:
                module = function.Module()
                module.load(binary)
                self.modules[key] = (module, lowered)
                return errors
            blamed = cpu_source.blamed_kernels(log)
            suspects = [it for it in remaining if it[0] in blamed] or remaining
            failed = set()
            for item in suspects:
                alone, _, alone_log = self.compile([item])
                if alone is None:
                    errors[item[0]] = "build error: " + _trim(alone_log)
                    failed.add(item[0])
            if not failed:
                for item in remaining:
                    errors[item[0]] = "build error: fails only when batched: " + _trim(
                        log
                    )
                return errors
            remaining = [it for it in remaining if it[0] not in failed]
        return errors

    def _function(self, key: str, index: int, dyn_smem: int):
        import cupy

        module, lowered = self.modules[key]
        fn = module.get_function(lowered[index])
        if dyn_smem > 48 * 1024:
            cupy.cuda.driver.funcSetAttribute(fn.ptr, _MAX_DYN_SMEM_ATTR, dyn_smem)
        return fn

    def launch(
        self, key, index, grid, block, dyn, params, arrays, scalars, timing=None
    ):
        """Run once (or time: (warmup, iters) -> ms); (status, message, outputs, t)."""
        import cupy

        try:
            fn = self._function(key, index, dyn)
            dev = {name: cupy.asarray(a) for name, a in arrays.items()}
            args = tuple(dev[n] if ptr else scalars[n] for n, _, ptr in params)
            if timing is not None:
                return "ok", "", {}, _time(fn, grid, block, args, dyn, *timing)
            start = time.perf_counter()
            fn(grid, block, args, shared_mem=dyn)
            cupy.cuda.runtime.deviceSynchronize()
            elapsed = time.perf_counter() - start
            return "ok", "", {n: cupy.asnumpy(a) for n, a in dev.items()}, elapsed
        except Exception as err:  # noqa: BLE001  (a CUDA error: the context is unusable)
            return (
                "runtime_error",
                f"runtime error: {type(err).__name__}: {err}",
                {},
                0.0,
            )


def _time(fn, grid, block, args, dyn, warmup: int, iters: int) -> float:
    import cupy

    for _ in range(warmup):
        fn(grid, block, args, shared_mem=dyn)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(iters):
        fn(grid, block, args, shared_mem=dyn)
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / max(1, iters)


def _trim(log: str, limit: int = 4000) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower()]
    return ("\n".join(lines) or log)[:limit]


def _serve(conn) -> None:
    device = _Device()
    while True:
        try:
            op, payload = conn.recv()
        except EOFError:
            return
        if op == "build":
            conn.send(device.build(*payload))
        else:
            conn.send(device.launch(*payload))


# ---------------------------------------------------------------------- parent side
@dataclass
class _Batch:
    key: str
    index: dict[str, int]  # code_key -> index in the module
    errors: dict[str, str]


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
        self._device: _Device | None = None
        self._proc = None
        self._conn = None
        self._built: dict[str, _Batch] = {}

    # -------------------------------------------------------------- transport
    def _call(self, op: str, payload: tuple, timeout: float):
        if self.in_process:
            if self._device is None:
                self._device = _Device()
            fn = self._device.build if op == "build" else self._device.launch
            return "ok", fn(*payload)
        if self._proc is None or not self._proc.is_alive():
            self._start()
        assert self._conn is not None and self._proc is not None
        proc = self._proc
        try:
            self._conn.send((op, payload))
            deadline = time.monotonic() + timeout
            while not self._conn.poll(0.05):
                if not proc.is_alive():
                    break
                if time.monotonic() > deadline:
                    self.close()
                    return "hung", ""
            else:
                return "ok", self._conn.recv()
        except (EOFError, OSError):
            pass
        proc.join(5.0)
        self._forget()
        return "died", f"crash: the CUDA worker died (exit status {proc.exitcode})"

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        child.close()
        self._built.clear()  # modules live in the worker

    def _forget(self) -> None:
        self._built.clear()
        self._proc = None
        self._conn = None

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(5.0)
        self._forget()

    # -------------------------------------------------------------- build + run
    def _ensure_built(self, specs: list[KernelSpec]) -> dict[str, _Batch]:
        wanted = {s.code_key(): s for s in specs}
        missing = sorted(k for k in wanted if k not in self._built)
        if missing and not self.in_process and self._modules() >= MAX_MODULES_PER_WORKER:
            self.close()  # a fresh worker; every wanted kernel is built again below
            missing = sorted(wanted)
        if missing:
            batch_key = hashlib.sha256("".join(missing).encode()).hexdigest()[:24]
            items = [
                (i, wanted[k].name, wanted[k].source) for i, k in enumerate(missing)
            ]
            status, reply = self._call(
                "build", (batch_key, items), self.start_timeout_s
            )
            errors = (
                reply
                if status == "ok"
                else {i: reply or "build timed out" for i, _ in enumerate(missing)}
            )
            batch = _Batch(batch_key, {k: i for i, k in enumerate(missing)}, {})
            for i, k in enumerate(missing):
                if i in errors:
                    batch.errors[k] = errors[i]
                self._built[k] = batch
        return self._built

    def _modules(self) -> int:
        return len({batch.key for batch in self._built.values()})

    def run(self, jobs: list[Job]) -> list[Result]:
        prepared = [prepare_args(job) for job in jobs]
        results = []
        for job, (arrays, scalars) in zip(jobs, prepared, strict=True):
            built = self._ensure_built([job.spec for job in jobs])
            results.append(self._run_one(job, built, arrays, scalars))
        return results

    def _payload(self, job: Job, batch: _Batch, arrays, scalars, timing=None) -> tuple:
        spec = job.spec
        params = [(p.name, p.dtype, p.pointer) for p in spec.params]
        index = batch.index[spec.code_key()]
        return (
            batch.key,
            index,
            spec.grid,
            spec.block,
            spec.dynamic_smem,
            params,
            arrays,
            scalars,
            timing,
        )

    def _run_one(self, job: Job, built: dict[str, _Batch], arrays, scalars) -> Result:
        batch = built[job.spec.code_key()]
        if job.spec.code_key() in batch.errors:
            return Result("build_error", {}, batch.errors[job.spec.code_key()], 0.0)
        payload = self._payload(job, batch, arrays, scalars)
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
            self.close()  # the CUDA context is poisoned; start afresh
        return Result(kind, outputs, message, elapsed)

    def time_kernel(self, job: Job, warmup: int = 3, iters: int = 20) -> float:
        """Mean milliseconds per launch over `iters` (CUDA events), after `warmup`."""
        arrays, scalars = prepare_args(job)
        built = self._ensure_built([job.spec])
        batch = built[job.spec.code_key()]
        if job.spec.code_key() in batch.errors:
            raise RuntimeError(batch.errors[job.spec.code_key()])
        payload = self._payload(job, batch, arrays, scalars, (warmup, iters))
        status, reply = self._call(
            "launch", payload, job.timeout_s * (warmup + iters) + 60
        )
        if status != "ok" or reply[0] != "ok":
            raise RuntimeError(f"timing failed: {status} {reply}")
        return float(reply[3])
