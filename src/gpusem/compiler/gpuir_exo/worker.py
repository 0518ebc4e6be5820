"""The Exo-GPU worker: one process of an installed Exo answers many cases, one JSON
line in, one JSON line out.

Run by `driver.py` as `EXO_PYTHON worker.py` (by path: this file imports nothing from
gpusem, only the standard library and the `exo` package of the interpreter that runs
it, which need not be gpusem's). Exo's checker is C++ loaded with ctypes and may
segfault; its JIT prints to stdout; importing `exo.platforms.Sm90` costs seconds. So
the protocol runs on a private duplicate of the original stdout while fd 1 goes to
stderr, and the driver owns time limits and restarts; one import serves a batch.

Requests (`op`):
  check    load `source` as a module, pick proc `proc`, `sync_check(**sizes)`, then
           (`compile`) `ext_compile_procs_to_strings` (code generation runs checks that
           sync_check does not). The answer names the stage reached (`load`,
           `sync_check`, `compile`, `ok`) and, on an exception, its class, MRO and
           text; with `code`, the generated files.
  explain  the same sync_check with Exo's debug log on; answers the log's
           `*-sync-error.py` text (the hazard's location and Exo's remarks). Separate
           from `check` because the debug log printer is where Exo's checker has been
           seen to segfault: a crash here loses the explanation, not the verdict.
The first line the worker writes is `{"ready": true, "info": {...}}`: where `exo` was
found, its distribution metadata, a fingerprint of its sources, and feature probes
that tell the two public branches apart.

Never import this module from gpusem (it is a script for another interpreter).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback

HEADER_NAMES: set[str] = set()
_COUNTER = [0]


def _fingerprint(root: str) -> str:
    """sha256 over the package's .py/.cpp/.hpp sources (sorted relative paths and
    contents): identifies the exact code under test when no git metadata exists."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith((".py", ".cpp", ".hpp")):
                p = os.path.join(dirpath, f)
                h.update(os.path.relpath(p, root).encode())
                with open(p, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()[:16]


def _dist_info() -> dict:
    out: dict = {}
    try:
        from importlib.metadata import distribution

        d = distribution("exo-lang")
        out["version"] = d.version
        direct = d.read_text("direct_url.json")
        if direct:
            out["direct_url"] = json.loads(direct)
    except Exception as err:  # noqa: BLE001 - metadata is optional
        out["metadata_error"] = str(err)[:200]
    return out


def _git_info(pkg_dir: str) -> dict:
    """Branch and commit from a git checkout above the package, if there is one."""
    import subprocess

    d = pkg_dir
    for _ in range(4):
        if os.path.exists(os.path.join(d, ".git")):
            try:
                rev = subprocess.run(["git", "-C", d, "rev-parse", "HEAD"],
                                     capture_output=True, text=True, timeout=10,
                                     check=False)
                br = subprocess.run(["git", "-C", d, "rev-parse", "--abbrev-ref",
                                     "HEAD"], capture_output=True, text=True, timeout=10,
                                     check=False)
                return {"commit": rev.stdout.strip(), "branch": br.stdout.strip()}
            except Exception:  # noqa: BLE001 - no git: no metadata
                return {}
        d = os.path.dirname(d)
    return {}


def info() -> dict:
    import exo

    pkg = os.path.dirname(exo.__file__)
    probes: dict[str, object] = {
        "camspork_error_module": None,
        "ring_buffer_by": hasattr(exo, "ring_buffer_by"),
    }
    for mod in ("exo.spork.camspork.camspork", "exo.spork.camspork"):
        try:
            m = __import__(mod, fromlist=["CamsporkError"])
            if hasattr(m, "CamsporkError"):
                probes["camspork_error_module"] = mod
                break
        except Exception:  # noqa: BLE001 - probing
            continue
    return {"exo_file": exo.__file__, "python": sys.version.split()[0],
            "executable": sys.executable, "fingerprint": _fingerprint(pkg),
            "dist": _dist_info(), "git": _git_info(pkg), "probes": probes,
            "jit_dir": os.environ.get("CAMSPORK_JIT_DIR", "")}


def _load(source: str, workdir: str):
    """Import `source` from a file (Exo's @proc reads its own source back through
    `inspect`), under a fresh module name."""
    _COUNTER[0] += 1
    name = f"gpusem_exo_case_{os.getpid()}_{_COUNTER[0]}"
    path = os.path.join(workdir, name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(name, None)
    return mod, path


def _error(stage: str, err: BaseException, path: str) -> dict:
    tb = traceback.extract_tb(err.__traceback__) if err.__traceback__ else []
    where = [f"{os.path.basename(f.filename)}:{f.lineno}:{f.name}" for f in tb[-4:]]
    text = str(err)
    if path:  # the temporary file name is noise; the line:col after it is not
        text = text.replace(path, "<proc>")
    return {"stage": stage, "outcome": "error", "exc_class": type(err).__qualname__,
            "exc_module": type(err).__module__,
            "mro": [c.__name__ for c in type(err).__mro__],
            "message": text[:4000], "where": where}


def check(req: dict, workdir: str) -> dict:
    import exo

    t0 = time.perf_counter()
    seconds: dict = {}
    path = ""
    try:
        mod, path = _load(req["source"], workdir)
        p = getattr(mod, req["proc"], None)
        if not isinstance(p, exo.Procedure):
            raise LookupError(f"no Exo proc named {req['proc']} in the source")
    except BaseException as err:  # noqa: BLE001 - every failure is a verdict
        out = _error("load", err, path)
        out["seconds"] = {"load": time.perf_counter() - t0}
        return out
    seconds["load"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        p.sync_check(**req.get("sizes", {}))
    except BaseException as err:  # noqa: BLE001
        out = _error("sync_check", err, path)
        seconds["sync_check"] = time.perf_counter() - t1
        out["seconds"] = seconds
        return out
    seconds["sync_check"] = time.perf_counter() - t1
    ok: dict = {"stage": "ok", "outcome": "accept"}
    if req.get("compile", True):
        t2 = time.perf_counter()
        try:
            code = exo.ext_compile_procs_to_strings([p], req.get("stem", "exo_out"))
        except BaseException as err:  # noqa: BLE001
            bad = _error("compile", err, path)
            seconds["compile"] = time.perf_counter() - t2
            bad["seconds"] = seconds
            return bad
        seconds["compile"] = time.perf_counter() - t2
        if req.get("code"):
            ok["code"] = code
        ok["extensions"] = sorted(code)
    ok["seconds"] = seconds
    return ok


def compile_batch(req: dict, workdir: str) -> dict:
    """One `ext_compile_procs_to_strings` over the procs of many sources (distinct
    names): one set of files, one nvcc build, for a batch of kernels."""
    import exo

    procs = []
    try:
        for item in req["items"]:
            mod, _ = _load(item["source"], workdir)
            procs.append(getattr(mod, item["proc"]))
        code = exo.ext_compile_procs_to_strings(procs, req.get("stem", "batch"))
    except BaseException as err:  # noqa: BLE001 - a failing batch is an answer
        return _error("compile", err, "")
    return {"stage": "ok", "outcome": "accept", "code": code}


def explain(req: dict, workdir: str) -> dict:
    """sync_check again with the debug log on; the `*-sync-error.py` text."""
    import exo.core.LoopIR as L

    logdir = tempfile.mkdtemp(prefix="dbg", dir=workdir)
    from pathlib import Path

    L.set_global_debug_log_path(Path(logdir))
    text, err_text = "", ""
    try:
        mod, _ = _load(req["source"], workdir)
        p = getattr(mod, req["proc"])
        try:
            p.sync_check(**req.get("sizes", {}))
        except BaseException as err:  # noqa: BLE001 - the hazard we came for
            err_text = str(err)[:400]
        log = L.get_global_debug_log()
        log.write_all_impl()
        dbg = os.path.join(logdir, "debug")
        for f in sorted(os.listdir(dbg)) if os.path.isdir(dbg) else []:
            if f.endswith("-sync-error.py"):
                with open(os.path.join(dbg, f)) as fh:
                    text = fh.read()
        text = re.sub(r"\S*gpusem_exo_case_\d+_\d+\.py", "<proc>", text)
    finally:
        L.set_global_debug_log_path(None)
        getattr(L, "_debug_log_dict", {}).pop(Path(logdir), None)
        shutil.rmtree(logdir, ignore_errors=True)
    return {"stage": "explain", "outcome": "ok", "error": err_text,
            "sync_error": log_excerpt(text)}


def log_excerpt(text: str, limit: int = 20000, before: int = 30) -> str:
    """The first `limit` characters of Exo's sync-error log, or, where its first
    `HAZARD @` remark lies past them, the log from `before` lines above that remark:
    verdict.hazard_location reads the remark and the location just above it (stop 29's
    H200 census: 16 of 15,700 pldi26 logs ran to 24-26 k characters with the remark
    past 20 k, so those classes lost their statement; results/exo/FINDINGS.md)."""
    head = text[:limit]
    if len(text) <= limit or "HAZARD" in head:
        return head
    lines = text.splitlines(keepends=True)
    k = next((i for i, ln in enumerate(lines) if "HAZARD" in ln), None)
    if k is None:
        return head
    return "".join(lines[max(0, k - before):])[:limit]


WARM_UP = """from __future__ import annotations
from exo import *
from exo.platforms.cuda import *

@proc
def gpusem_warm_up(A: f32[32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            for tid in cuda_threads(0, 32, unit=cuda_thread):
                A[tid] = 0.0
"""


def warm_up(workdir: str) -> None:
    """Run the checker once under a lock on the JIT folder: endgame JIT-builds its C++
    checker with ninja on the first sync_check of a process, and concurrent builds in
    one folder (parallel jobs) corrupt each other. ninja keeps its log (what it built
    with which command) in the current directory: without running in the JIT folder
    every process would rebuild the checker (25 s)."""
    jit = os.environ.get("CAMSPORK_JIT_DIR", "")
    lock = None
    if jit:
        import fcntl

        os.makedirs(jit, exist_ok=True)
        lock = open(os.path.join(jit, ".gpusem-warm-up.lock"), "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        os.chdir(jit)
    try:
        check({"source": WARM_UP, "proc": "gpusem_warm_up", "compile": False}, workdir)
    finally:
        os.chdir(workdir)
        if lock is not None:
            lock.close()


def main() -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # Exo's prints (JIT, ninja, debug notices) go to stderr
    sys.stdout = sys.stderr
    workdir = tempfile.mkdtemp(prefix="gpusem-exo-")
    try:
        import exo.platforms.cuda  # noqa: F401 - the import cost, paid once

        warm_up(workdir)
        proto.write(json.dumps({"ready": True, "info": info()}) + "\n")
    except BaseException as err:  # noqa: BLE001 - no Exo here: say so and stop
        proto.write(json.dumps({"ready": False, "error": f"{type(err).__name__}: "
                                f"{err}"[:400]}) + "\n")
        return
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            t0 = time.perf_counter()
            if req.get("op") == "explain":
                out = explain(req, workdir)
            elif req.get("op") == "compile_batch":
                out = compile_batch(req, workdir)
            else:
                out = check(req, workdir)
            out["id"] = req.get("id")
            out["wall"] = time.perf_counter() - t0
            proto.write(json.dumps(out) + "\n")
            for f in os.listdir(workdir):  # the loaded module files
                if f.endswith(".py"):
                    os.unlink(os.path.join(workdir, f))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
