"""The `cpu` backend: the same `.cu` text built by g++ against the SIMT harness.

Pipeline for `CpuBackend.run(jobs)`:
1. distinct kernels (by source, name and parameter types) are screened: raw inline
   `asm` -> "unsupported"; a cached build error -> "build_error";
2. the rest are built together into ONE shared library (`cpu_source.translation_unit`,
   split in up to `parallel` translation units compiled side by side where the batch
   is big and a core idle (`_unit_count`), linked by a fast linker where one works
   (`_link`), the runtime header
   precompiled, and the runtime's code compiled into an object every library links,
   once per harness version), cached by content hash under `cache_dir`;
   the generated launchers static_assert that each kernel's parameter types are the
   spec's; when g++ fails, the kernels its diagnostics blame are built
   alone to confirm, the confirmed ones become "build_error" with their own messages,
   and the batch is rebuilt without them;
3. the launches run in a forked worker process (`cpu_worker`), one at a time, global
   arrays flush against guard pages: a kernel that crashes the process ("crash"), or
   that outlives its time budget and the harness's own SIGALRM stop ("timeout", killed
   by the watchdog), costs a worker restart, and the batch goes on. The worker is
   also replaced after MAX_LIBRARIES_PER_WORKER libraries, to bound its memory.

The harness semantics (fibres, barriers, schedules, poison, lazy async copies) are
documented in `simt_harness.h`.
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.cache import cache_dir, touch
from gpusem.compiler.backends.kernel import Job, KernelSpec, Result, prepare_args
from gpusem.compiler.backends.lifetime import (
    from_main_thread,
    kill_tree,
    run_killing_tree,
)
from gpusem.compiler.backends.machine_load import idle_cores

HERE = Path(__file__).resolve().parent
HARNESS_FILES = (
    "gpusem_rt.cuh",
    "simt_harness.h",
    "simt_core.h",
    "simt_sync.h",
    "simt_sched.h",
    "simt_intrinsics.h",
)
CXX = os.environ.get("GPUSEM_CXX", "g++")
# g++ is given this long per call, then killed: a hung compiler must not hang a
# campaign past its budget (stop 29 saw a Dask piece hang with g++ one suspect). A
# batch's build takes seconds; a build that hits the limit is gpusem's internal error
# (BuildHung), reported as such, never a verdict on the program.
GXX_TIMEOUT_S = float(os.environ.get("GPUSEM_CXX_TIMEOUT_S", "900"))


# A batch is split into translation units compiled side by side (`parallel`) only
# where each unit gets at least MIN_UNIT_BYTES of kernel text and a core is idle to
# compile it. A unit costs g++ ~0.25 CPU-s before any kernel (loading the 26 MB
# precompiled header, the harness's deferred template instantiations) and, at -O1,
# more again for what its kernels instantiate: two units took 43% more CPU than one
# for 6 kernels (6 KB, a shrink step's first batch), 50% for 23 (30 KB), 25% for 97
# (238 KB, a campaign's round), for at most half the build's wall time, which only
# a core with nothing else to do gives (scripts/measure_cpu_units.py). On a loaded
# machine (the suite's two workers on two cores) a second unit is all cost.
MIN_UNIT_BYTES = 64 * 1024


def _unit_count(specs: list[KernelSpec], parallel: int) -> int:
    """How many translation units a batch of `specs` is compiled in: at most
    `parallel`, one per MIN_UNIT_BYTES of kernel text, one more than the idle cores."""
    text = sum(len(s.source) for s in specs)
    wanted = min(parallel, len(specs), text // MIN_UNIT_BYTES)
    return max(1, min(wanted, idle_cores() + 1)) if wanted > 1 else 1


class BuildHung(RuntimeError):
    """g++ did not finish within GXX_TIMEOUT_S."""


def _gxx(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run of a g++ command line, killed after GXX_TIMEOUT_S with what it
    runs (`run_killing_tree`)."""
    try:
        return run_killing_tree(cmd, timeout=GXX_TIMEOUT_S, **kwargs)
    except subprocess.TimeoutExpired as e:
        raise BuildHung(f"g++ did not finish in {GXX_TIMEOUT_S:g} s: "
                        f"{' '.join(cmd[:1] + cmd[-3:])}") from e
BASE_CXXFLAGS = (
    "-O1",
    "-std=c++17",
    "-ffp-contract=off",
    "-fno-fast-math",
    # Signed overflow in generated code is undefined behaviour that nvcc may exploit on
    # the GPU; here it traps (the launch ends as "crash"), so a compiler that emits
    # plain signed arithmetic is caught on the cpu backend too. The gs_* helpers
    # compute through uint32 and never overflow.
    "-fsanitize=signed-integer-overflow",
    "-fsanitize-undefined-trap-on-error",
    "-fno-strict-aliasing",
    "-fPIC",
    "-w",
)
# Used where the compiler has them (g++ >= 12 and >= 10): poison uninitialised locals;
# one diagnostic per line, so errors can be attributed to kernels.
OPTIONAL_CXXFLAGS = ("-ftrivial-auto-var-init=pattern", "-fdiagnostics-plain-output")


# Linkers tried before g++'s default (GNU ld): gold links a batch's library in ~0.03
# CPU-s where ld takes ~0.1-0.15 (every batch links one). The objects and their code
# are the same; only the program that joins them differs.
FAST_LINKERS = ("-fuse-ld=gold",)
_unusable: set[str] = set()  # fast linkers that failed where the default linked


def _link(args: list[str]) -> subprocess.CompletedProcess:
    """`g++ -shared -o <args>`: through the first fast linker that links, else the
    default one. A fast linker that fails where the default links (missing here, or
    a bug of its own) is not tried again by this process; a link that fails with
    every linker is reported as the default linker says, never as a fast one's."""
    for flag in [*(f for f in FAST_LINKERS if f not in _unusable), ""]:
        done = _gxx([CXX, *([flag] if flag else []), "-shared", "-o", *args],
                    stderr=subprocess.PIPE, text=True)
        if done.returncode == 0:
            if not flag:
                _unusable.update(FAST_LINKERS)
            return done
    return done


@functools.cache
def cxxflags() -> tuple[str, ...]:
    """BASE_CXXFLAGS plus whichever OPTIONAL_CXXFLAGS this g++ accepts."""
    extra = []
    for flag in OPTIONAL_CXXFLAGS:
        probe = _gxx(
            [CXX, flag, "-x", "c++", "-fsyntax-only", "-"],
            input="",
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0:
            extra.append(flag)
    return (*BASE_CXXFLAGS, *extra)


MAX_LIBRARIES_PER_WORKER = 32
WATCHDOG_SLACK_S = 3.0  # beyond a job's timeout_s, before the worker is killed
STATUS_KINDS = {
    0: "ok",
    1: "runtime_error",
    2: "deadlock",
    3: "timeout",
    4: "unsupported",
    5: "runtime_error",
}


def default_cache_dir() -> Path:
    return cache_dir("cpu")


def _harness_hash() -> str:
    h = hashlib.sha256(" ".join((CXX, *cxxflags())).encode())
    for name in HARNESS_FILES:
        h.update((HERE / name).read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Built:
    """Where a kernel's launcher lives, or why it has none."""

    library: str = ""
    symbol: str = ""
    kind: str = "ok"  # ok | build_error | unsupported
    message: str = ""


class CpuBackend:
    """g++ + simt_harness.h; see the module docstring."""

    name = "cpu"

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        parallel: int = 2,
        max_switches: int = 50_000_000,
        stack_bytes: int = 64 * 1024,
        poison: int = 0xA5,
    ) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.parallel = max(1, parallel)
        self.max_switches = max_switches
        self.stack_bytes = stack_bytes
        self.poison = poison
        self._harness = _harness_hash()
        self._worker: _WorkerHandle | None = None
        self._pch: str | None = None  # "" once known to be unavailable
        self._rt: str | None = None  # the runtime object; "" once known unavailable

    # ------------------------------------------------------------------ build
    def build(self, specs: list[KernelSpec]) -> dict[str, Built]:
        """Build every distinct spec; map code_key -> Built."""
        out: dict[str, Built] = {}
        todo: dict[str, KernelSpec] = {}
        for spec in specs:
            key = spec.code_key()
            if key in out or key in todo:
                continue
            err = self._key_path(key, ".err")
            loc = self._key_path(key, ".loc")
            if cpu_source.raw_asm(spec.source):
                out[key] = Built(
                    kind="unsupported",
                    message="unsupported: inline asm (PTX) has no CPU meaning; "
                    "wrap it in GS_PTX_ONLY(...) or use the gs_* wrappers",
                )
            elif err.exists():
                out[key] = Built(kind="build_error", message=err.read_text())
            elif (where := _read_loc(loc)) is not None:
                out[key] = Built(*where)
            else:
                todo[key] = spec
        if todo:
            out.update(self._build_batch(todo))
        return out

    def _includes(self) -> list[str]:
        """-I flags: the precompiled runtime header's folder first, when there is one."""
        if self._pch is None:
            self._pch = self._precompiled_header() or ""
        return [f"-I{self._pch}", f"-I{HERE}"] if self._pch else [f"-I{HERE}"]

    def _precompiled_header(self) -> str | None:
        """A folder holding the runtime headers and `gpusem_rt.cuh.gch` built with the
        same flags: g++ then skips parsing the harness (most of a small batch's time).
        None where g++ cannot make one (the plain headers are used). It lives in the
        default cache (keyed by the harness hash), shared by every backend's cache_dir."""
        home = default_cache_dir()
        final = home / f"{self._harness}_pch"
        if (final / "gpusem_rt.cuh.gch").exists():
            return str(final)
        home.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=home))
        for name in HARNESS_FILES:
            shutil.copy(HERE / name, tmp / name)
        header = tmp / "gpusem_rt.cuh"
        cmd = [CXX, *cxxflags(), "-x", "c++-header", str(header), "-o", f"{header}.gch"]
        made = _gxx(cmd, capture_output=True).returncode == 0
        if made:
            try:
                os.rename(tmp, final)
            except OSError:  # another process got there first
                made = (final / "gpusem_rt.cuh.gch").exists()
        shutil.rmtree(tmp, ignore_errors=True)
        return str(final) if made else None

    def _runtime_object(self) -> str:
        """`cpu_source.RUNTIME_UNIT` compiled once per harness version (beside the
        precompiled header, shared by every backend's cache_dir) and linked into each
        library: the units then leave the runtime's code out (simt_sched.h says why).
        "" where g++ cannot build it: the units then define it themselves."""
        if self._rt and not os.path.exists(self._rt):  # trimmed from the cache by
            self._rt = None  # another process since: built again, never linked missing
        if self._rt is None:
            final = default_cache_dir() / f"{self._harness}_gs_rt.o"
            if not final.exists():
                with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
                    src = Path(tmp) / "gs_rt.cpp"
                    src.write_text(cpu_source.RUNTIME_UNIT)
                    cmd = [CXX, *cxxflags(), *self._includes(), "-c", str(src),
                           "-o", f"{src}.o"]
                    if _gxx(cmd, capture_output=True).returncode == 0:
                        os.replace(f"{src}.o", final)  # atomic: others share it
            self._rt = str(final) if final.exists() else ""
        if self._rt:
            touch(Path(self._rt))  # in use: the cache's LRU trim keeps it
        return self._rt

    def _key_path(self, key: str, suffix: str) -> Path:
        return self.cache_dir / f"{self._harness}_{key}{suffix}"

    def _build_batch(self, todo: dict[str, KernelSpec]) -> dict[str, Built]:
        keys = sorted(todo)
        out: dict[str, Built] = {}
        while keys:
            lib = self._library_path(keys)
            if lib.exists():
                break
            failed = self._compile_library(lib, [todo[k] for k in keys])
            if failed is None:
                break
            if not failed:
                # Each kernel builds alone but the batch does not (a name or macro leak
                # between kernels): give each kernel a library of its own.
                for key in keys:
                    out.update(self._build_batch({key: todo[key]}))
                return out
            for index, message in failed.items():
                key = keys[index]
                write_atomic(self._key_path(key, ".err"), message)
                out[key] = Built(kind="build_error", message=message)
            keys = [k for i, k in enumerate(keys) if i not in failed]
        for index, key in enumerate(keys):  # each kernel remembers where it lives
            built = Built(str(self._library_path(keys)), f"gs_launch_{index}")
            write_atomic(
                self._key_path(key, ".loc"), f"{built.library}\n{built.symbol}"
            )
            out[key] = built
        return out

    def _library_path(self, keys: list[str]) -> Path:
        digest = hashlib.sha256("".join(keys).encode()).hexdigest()[:24]
        return self.cache_dir / f"{self._harness}_batch_{digest}.so"

    def _compile_library(
        self, lib: Path, specs: list[KernelSpec]
    ) -> dict[int, str] | None:
        """Build `lib`; None on success, else {index: message} of confirmed failures."""
        indexed = list(enumerate(specs))
        units = _unit_count(specs, self.parallel)
        chunks = [indexed[i :: units] for i in range(units)]
        chunks = [c for c in chunks if c]
        runtime = self._runtime_object()
        with tempfile.TemporaryDirectory(dir=self.cache_dir) as tmp:
            procs = []
            for n, chunk in enumerate(chunks):
                src = Path(tmp) / f"tu{n}.cpp"
                src.write_text(cpu_source.translation_unit(chunk, bool(runtime)))
                cmd = [
                    CXX,
                    *cxxflags(),
                    *self._includes(),
                    "-c",
                    str(src),
                    "-o",
                    f"{src}.o",
                ]
                procs.append(
                    (chunk, subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True))
                )
            errors: dict[int, str] = {}
            logs = []
            deadline = time.monotonic() + GXX_TIMEOUT_S
            for chunk, proc in procs:
                try:
                    _, stderr = proc.communicate(
                        timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired as e:
                    for _, p in procs:
                        kill_tree(p.pid)  # the driver and its cc1plus
                        p.communicate()
                    raise BuildHung(f"g++ did not finish in {GXX_TIMEOUT_S:g} s: a "
                                    f"batch of {len(indexed)} kernels") from e
                logs.append(stderr)
                if proc.returncode != 0:
                    errors.update(self._confirm_failures(chunk, stderr, tmp))
            if errors or any(p.returncode for _, p in procs):
                if not errors and len(indexed) == 1:  # fails in the batch TU, not alone
                    errors = {0: "build error: " + _trim(logs[0])}
                return errors
            objs = [f"{Path(tmp) / f'tu{n}.cpp'}.o" for n in range(len(chunks))]
            part = Path(tmp) / "lib.so"
            link = _link([str(part), *objs, *([runtime] if runtime else [])])
            if link.returncode != 0:
                return {
                    i: f"build error: link failed: {link.stderr[-2000:]}"
                    for i, _ in indexed
                }
            os.replace(part, lib)
        return None

    def _compile_alone(self, index: int, spec: KernelSpec, tmp: str) -> str | None:
        src = Path(tmp) / f"alone{index}.cpp"
        src.write_text(cpu_source.translation_unit([(index, spec)],
                                                   bool(self._runtime_object())))
        cmd = [CXX, *cxxflags(), *self._includes(), "-fsyntax-only", str(src)]
        proc = _gxx(cmd, stderr=subprocess.PIPE, text=True)
        if proc.returncode == 0:
            return None
        return "build error: " + _trim(proc.stderr)

    def _confirm_failures(self, chunk, stderr: str, tmp: str) -> dict[int, str]:
        """Kernels g++ blamed (or the whole chunk if it blamed none), built alone."""
        blamed = cpu_source.blamed_kernels(stderr)
        suspects = [(i, s) for i, s in chunk if i in blamed] or chunk
        confirmed = {}
        for index, spec in suspects:
            message = self._compile_alone(index, spec, tmp)
            if message is not None:
                confirmed[index] = message
        return confirmed

    # ------------------------------------------------------------------ run
    def run(self, jobs: list[Job]) -> list[Result]:
        prepared = [prepare_args(job) for job in jobs]  # BadInput before any work
        built = self.build([job.spec for job in jobs])
        results = []
        for job, (arrays, scalars) in zip(jobs, prepared, strict=True):
            b = built[job.spec.code_key()]
            if b.kind != "ok":
                results.append(Result(b.kind, {}, b.message, 0.0))  # type: ignore[arg-type]
                continue
            results.append(self._launch(job, b, arrays, scalars))
        return results

    def _launch(self, job: Job, built: Built, arrays, scalars) -> Result:
        spec = job.spec
        cfg = (
            spec.grid,
            spec.block,
            spec.dynamic_smem,
            job.schedule_seed,
            self.max_switches,
            job.timeout_s,
            self.stack_bytes,
            self.poison,
            spec.cluster,
        )
        params = [(p.name, p.dtype, p.pointer) for p in spec.params]
        request = (built.library, built.symbol, cfg, params, arrays, scalars)
        worker = self._worker_handle(built.library)
        reply = worker.call(request, job.timeout_s + WATCHDOG_SLACK_S)
        if reply[0] == "died":
            self._worker = None
            return Result("crash", {}, reply[1], 0.0)
        if reply[0] == "hung":
            self._worker = None
            return Result(
                "timeout",
                {},
                f"timeout: kernel ran past {job.timeout_s}s (watchdog)",
                0.0,
            )
        status, message, outputs, elapsed = reply[1]
        kind = STATUS_KINDS.get(status, "crash")
        if status == 5:
            message = f"runtime error: {message}"
        return Result(kind, outputs, message, elapsed)  # type: ignore[arg-type]

    def _worker_handle(self, library: str) -> _WorkerHandle:
        worker = self._worker
        full = worker is not None and len(worker.libraries) >= MAX_LIBRARIES_PER_WORKER
        if full and library not in worker.libraries:  # type: ignore[union-attr]
            self.close()  # bound a long campaign's dlopen count and memory
            worker = None
        if worker is None or not worker.alive():
            worker = self._worker = _WorkerHandle()
        worker.libraries.add(library)
        return worker

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110  (interpreter shutdown: nothing to report to)
            pass


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and a rename: other processes share the cache."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _read_loc(path: Path) -> tuple[str, str] | None:
    """(library, symbol) where an earlier build put a kernel, if it is still there."""
    try:
        library, symbol = path.read_text().split("\n")
    except (OSError, ValueError):
        return None
    if not Path(library).exists():
        return None
    touch(path)  # used now: the cache's LRU trim keeps it (backends/cache.py)
    touch(Path(library))
    return library, symbol


def _trim(stderr: str, limit: int = 4000) -> str:
    lines = [ln for ln in stderr.splitlines() if "error" in ln or "required from" in ln]
    text = "\n".join(lines) or stderr
    return text[:limit]


class _Sender:
    """`conn.send(request)` on a daemon thread; `done` is set when it returns."""

    def __init__(self, conn, request) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        threading.Thread(target=self._send, args=(conn, request), daemon=True).start()

    def _send(self, conn, request) -> None:
        try:
            conn.send(request)
        except (OSError, ValueError, TypeError) as e:  # the pipe closed under it
            # (stop()); closed on this side mid-write, its handle is None and
            # `write(None, ...)` raises TypeError (a thread warning in CI, stop 43)
            self.error = e
        finally:
            self.done.set()


class _WorkerHandle:
    """A forked process running launches; killed and replaced when one misbehaves.

    Note: a plain fork, because spawn and forkserver re-run an unguarded `__main__`
    script in the child. Forking a multi-threaded parent can, rarely, deadlock the
    child; the watchdog then ends it as a "timeout" and the batch goes on.
    """

    def __init__(self) -> None:
        from gpusem.compiler.backends import cpu_worker

        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=cpu_worker.serve, args=(
            child, os.getpid(), from_main_thread()), daemon=True)
        self.proc.start()
        child.close()
        self.libraries: set[str] = set()

    def alive(self) -> bool:
        return self.proc.is_alive()

    def call(self, request, timeout: float):
        deadline = time.monotonic() + timeout
        # The request is sent by a helper thread under the same deadline: a request
        # larger than the pipe's buffer blocks `send` until the child reads it, and a
        # child deadlocked at its fork (see above; Dask's workers are multi-threaded)
        # never does. Sent inline, that wait had no watchdog and hung the campaign.
        sending = _Sender(self.conn, request)
        while not sending.done.wait(0.05):
            if not self.proc.is_alive():
                return ("died", self._death())
            if time.monotonic() > deadline:
                self.stop()  # closing the pipe ends the blocked send
                return ("hung", "")
        if sending.error is not None:
            self.proc.join(1.0)
            return ("died", self._death())
        try:
            while not self.conn.poll(0.05):
                if not self.proc.is_alive():
                    return ("died", self._death())
                if time.monotonic() > deadline:
                    self.stop()
                    return ("hung", "")
            return ("ok", self.conn.recv())
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self.proc.join(1.0)
            return ("died", self._death())

    def _death(self) -> str:
        self.proc.join(1.0)
        code = self.proc.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            return f"crash: the kernel killed the harness process ({name})"
        return f"crash: the harness process exited with status {code}"

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(2.0)
        self.conn.close()
