"""Drive an installed Exo-GPU in a worker subprocess (`worker.py`), as `appy_triton/
driver.py` drives appyc: Exo's import cost is paid once per worker, and its crashes
(its C++ checker segfaults on some programs), hangs and prints stay out of the
campaign. The driver owns the clocks: no answer in `timeout` seconds is a `hang` (the
worker is killed and a fresh one serves the rest); a worker that dies is a `crash`.

Which Exo: `--exo-python PATH` (the CLI sets `GPUSEM_EXO_PYTHON`), else the
environment variable `GPUSEM_EXO_PYTHON`, else the current interpreter if it can
import `exo.spork` (Exo-GPU; PyPI's exo-lang 1.0.0 has no GPU support). None: a
one-line `BadInput` (exit 2). The worker reports what it found: where `exo` lives, a
fingerprint of its sources, and feature probes; `ExoInstall` turns that into the
branch and commit (`dialect.KNOWN_BUILDS`) and the dialect the emitter must write.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

from gpusem.calculus.errors import CannotRunHere
from gpusem.compiler.backends.cache import cache_root
from gpusem.compiler.backends.json_worker import JsonWorkerDriver
from gpusem.compiler.gpuir_exo.dialect import KNOWN_BUILDS, Dialect
from gpusem.compiler.gpuir_exo.verdict import ExoVerdict, classify

ENV_PYTHON = "GPUSEM_EXO_PYTHON"
WORKER = Path(__file__).with_name("worker.py")


class ExoUnavailable(CannotRunHere):
    """No usable Exo-GPU: exit 2 with one line (`replay`: cannot test, 125)."""


def find_exo_python(explicit: str | None = None) -> str:
    """The interpreter that runs the worker (see the module docstring)."""
    cand = explicit or os.environ.get(ENV_PYTHON)
    if cand:
        path = shutil.which(cand) or cand
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ExoUnavailable(f"target unavailable: {ENV_PYTHON}={cand} is not an "
                                 "executable Python")
        return path
    try:
        found = find_spec("exo") is not None and find_spec("exo.spork") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        return sys.executable
    raise ExoUnavailable("target unavailable: no Exo-GPU found (install exo-lang from "
                         "github exo-lang/exo branch akeley98/pldi26 or akeley98/endgame,"
                         f" then pass --exo-python PATH or set {ENV_PYTHON}; see "
                         "docs/exo.md)")


@dataclass(frozen=True)
class ExoInstall:
    """What the worker found: the interpreter, Exo's location, the fingerprint of its
    sources, the branch and commit (known fingerprint or git metadata) and the dialect
    (feature probes decide: endgame has `ring_buffer_by`)."""

    python: str
    exo_file: str
    fingerprint: str
    branch: str
    commit: str
    dialect: Dialect
    version: str
    raw: dict = field(default_factory=dict, compare=False)

    @classmethod
    def from_info(cls, python: str, info: dict) -> ExoInstall:
        probes = info.get("probes", {})
        dialect: Dialect = "endgame" if probes.get("ring_buffer_by") else "pldi26"
        known = KNOWN_BUILDS.get(info.get("fingerprint", ""))
        git = info.get("git") or {}
        if git.get("commit"):
            branch, commit = git.get("branch", "?"), git["commit"]
        elif known is not None:
            branch, commit = known.branch, known.commit
        else:
            branch, commit = f"unknown ({dialect}-like)", "unknown"
        return cls(python, info.get("exo_file", ""), info.get("fingerprint", ""),
                   branch, commit, dialect, info.get("dist", {}).get("version", "?"),
                   info)

    def describe(self) -> str:
        return (f"Exo-GPU {self.branch} @ {self.commit[:12]} (sources {self.fingerprint},"
                f" dialect {self.dialect}) from {self.exo_file} via {self.python}")

    def as_json(self) -> dict:
        return {"python": self.python, "exo_file": self.exo_file,
                "fingerprint": self.fingerprint, "branch": self.branch,
                "commit": self.commit, "dialect": self.dialect,
                "version": self.version}


@dataclass
class ExoAnswer:
    """One check: the verdict, the raw answer (None on crash/hang), the seconds."""

    verdict: ExoVerdict
    raw: dict | None
    seconds: float

    @property
    def code(self) -> dict[str, str]:
        return (self.raw or {}).get("code", {})


class ExoDriver(JsonWorkerDriver):
    """A pool of one worker; `check` answers one proc at a time. The worker is
    replaced every `recycle_after` requests: Exo keeps every loaded proc alive, and a
    worker slows down as they pile up (2.5x after 2,000 checks)."""

    def __init__(self, python: str | None = None, timeout: float = 60.0,
                 recycle_after: int = 300):
        self.python = find_exo_python(python)
        self.timeout = timeout
        self.recycle_after = recycle_after
        self.proc: subprocess.Popen | None = None
        self.served = 0
        self.workdir = tempfile.mkdtemp(prefix="gpusem-exo-drv-")
        self._install: ExoInstall | None = None

    # -------------------------------------------------------------- lifecycle
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if not env.get("CAMSPORK_JIT_DIR"):  # endgame's checker JIT: one shared cache
            env["CAMSPORK_JIT_DIR"] = str(cache_root() / "camspork-jit")
        return env

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [self.python, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=self.workdir, env=self._env(), text=True,
            bufsize=1)
        self.served = 0
        ready = self._read_line(max(300.0, self.timeout))  # a cold JIT build: minutes
        if ready is None or not ready.get("ready"):
            why = (ready or {}).get("error", "no answer")
            self._kill()
            raise ExoUnavailable(f"target unavailable: the Exo worker did not start "
                                 f"with {self.python}: {why}")
        self._install = ExoInstall.from_info(self.python, ready["info"])

    @property
    def install(self) -> ExoInstall:
        if self._install is None:
            self._start()
        assert self._install is not None
        return self._install

    # -------------------------------------------------------------------- ask
    def raw(self, request: dict) -> tuple[dict | None, str]:
        """Send one request; the answer, or None with `hang` / `crash:<signal>`."""
        return self.ask(request)

    def check(self, source: str, proc: str, sizes: dict[str, int], *,
              compile: bool = True, code: bool = False) -> ExoAnswer:
        t0 = time.perf_counter()
        answer, why = self.raw({"op": "check", "source": source, "proc": proc,
                                "sizes": sizes, "compile": compile, "code": code,
                                "stem": proc})
        return ExoAnswer(classify(answer, why), answer, time.perf_counter() - t0)

    def compile_batch(self, items: list[tuple[str, str]], stem: str = "batch"
                      ) -> tuple[dict[str, str] | None, str]:
        """Exo's code for many (source, proc) pairs compiled together: the files
        (extension -> text), or None and why."""
        answer, why = self.raw({"op": "compile_batch", "stem": stem, "items": [
            {"source": s, "proc": p} for s, p in items]})
        if answer is None:
            return None, why
        if answer.get("stage") != "ok":
            return None, f"{answer.get('exc_class')}: {answer.get('message', '')[:500]}"
        return answer["code"], ""

    def explain(self, source: str, proc: str, sizes: dict[str, int]) -> str:
        """Exo's debug-log account of a rejection (`*-sync-error.py`), or why none."""
        answer, why = self.raw({"op": "explain", "source": source, "proc": proc,
                                "sizes": sizes})
        if answer is None:
            return f"(no debug log: the worker {why} while writing it)"
        return answer.get("sync_error", "")


