"""Drive appyc (APPy -> Triton) in a worker subprocess and classify each case.

A worker (`worker.py`) serves a batch of cases from one process, in a scratch directory,
so the import cost of torch/triton/appyc is paid once per batch rather than per case. The
driver owns the clocks: a case that does not answer in `timeout` seconds is run again
in a fresh worker with `RETRY_FACTOR` times the limit (a loaded machine, a cold start),
and only a case that times out twice is a `hang` (issues 15, 17); a worker that dies is
a `crash` (with its signal). Outcomes (issue 7):

  generation  appyc raised while generating Triton code
  host        the generated module or its host code failed
  triton      Triton rejected a kernel (compile error, interpreter type error)
  runtime     another error while running the kernels
  oob         a kernel wrote outside an array (caught in a red zone around it)
  crash       the worker died (signal or exit) on this case
  hang        no answer within the time limit
  wrong       outputs differ from the sequential reading (first cell, max error)
  agree       outputs match within the dtype-aware tolerance (`compare.py`)
  environment the stand-in cannot run the case (a NumPy/Triton mismatch): not a
              finding against the compiler
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gpusem.compiler.appy_triton.compare import Mismatch, compare_outputs
from gpusem.compiler.backends.json_worker import JsonWorkerDriver
from gpusem.compiler.backends.machine_load import load_factor

FAILURE_KINDS = ("generation", "host", "triton", "runtime", "oob", "crash", "hang",
                 "wrong")
RETRY_FACTOR = 4.0  # a timed-out case is retried once, fresh worker, 4x the limit


@dataclass
class Case:
    """One program on one input: APPy source plus arrays and scalar arguments."""

    id: str
    source: str
    func: str
    params: list[str]
    arrays: dict[str, np.ndarray]
    scalars: dict[str, int | float]
    options: dict = field(default_factory=dict)
    module: str = ""  # run this generated module instead of asking appyc again
    host_arrays: tuple[str, ...] = ()  # passed as NumPy arrays (`to(..)` clauses)
    returns: str = ""  # the array the function returns (compared as that array)

    def to_wire(self, sm90: bool = False) -> dict:
        from gpusem.compiler.appy_triton.worker import encode

        return {"id": self.id, "source": self.source, "func": self.func,
                "params": self.params, "scalars": self.scalars, "options": self.options,
                "arrays": {k: encode(v) for k, v in self.arrays.items()}, "sm90": sm90,
                "module": self.module, "host_arrays": list(self.host_arrays),
                "returns": self.returns}


@dataclass
class Outcome:
    kind: str  # one of FAILURE_KINDS or "agree"
    detail: str = ""
    module: str = ""
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    mismatch: Mismatch | None = None
    sm90: dict | None = None
    seconds: float = 0.0
    array: str = ""  # for `oob`: the array written out of bounds
    adapted: tuple[str, ...] = ()  # what the cpu stand-in adapted (worker.py)
    retried: bool = False  # timed out once, answered in a fresh worker

    @property
    def failed(self) -> bool:
        return self.kind != "agree"


def find_wheel_dir() -> Path | None:
    """A vendored wheel folder (`$GPUSEM_APPY_WHEELS`, else `.whl` in the working
    directory): where the device machine, without network, finds appyc."""
    for cand in (os.environ.get("GPUSEM_APPY_WHEELS"), ".whl"):
        if cand and Path(cand).is_dir() and any(Path(cand).glob("appyc-*.whl")):
            return Path(cand)
    return None


def appyc_available() -> tuple[bool, str]:
    """Whether appyc, torch and triton are installed (found, not imported: importing
    torch costs seconds, and the worker process imports them anyway)."""
    from importlib.util import find_spec

    missing = [m for m in ("appy", "torch", "triton") if find_spec(m) is None]
    if missing:
        return False, (f"the appy extra is not installed (no {', '.join(missing)}): "
                       "pip install -e '.[appy]'")
    return True, ""


def ensure_appyc() -> None:
    """Install appyc from a vendored wheel folder if it is missing (no network)."""
    if appyc_available()[0]:
        return
    wheels = find_wheel_dir()
    if wheels is None:
        return
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--find-links",
                    str(wheels), "appyc==0.2.0"], check=False, capture_output=True)


def versions() -> dict[str, str]:
    from importlib.metadata import version

    out = {}
    for dist in ("appyc", "triton", "torch", "numpy"):
        try:
            out[dist] = version(dist)
        except Exception:  # noqa: BLE001 - not installed: say so in the bundle
            out[dist] = "absent"
    return out


START_WAITS_S = (120.0, 360.0)  # the worker's ready line: first try, then once more


class AppycDriver(JsonWorkerDriver):
    """A pool of one worker process; `run(case)` answers one case at a time.

    Backends: `cpu` (Triton's interpreter, torch CPU tensors), `cuda` (real kernels),
    `sm90` (compile every launched kernel for sm_90 with ptxas, run nothing)."""

    def __init__(self, backend: str = "cpu", timeout: float = 20.0,
                 recycle_after: int = 200):
        if backend not in ("cpu", "cuda", "sm90"):
            raise ValueError(f"unknown backend: {backend}")
        self.backend = backend
        self.timeout = timeout
        self.retry_limit = timeout * RETRY_FACTOR  # the last retry's (load-stretched)
        self.recycle_after = recycle_after
        self.proc: subprocess.Popen | None = None
        self.served = 0
        self.workdir = tempfile.mkdtemp(prefix="gpusem-appy-")

    # ------------------------------------------------------------------ lifecycle
    def _start(self) -> None:
        env = dict(os.environ)
        env["GPUSEM_PARENT_PID"] = str(os.getpid())  # the worker dies with us
        if self.backend == "cpu":
            env["TRITON_INTERPRET"] = "1"
        else:
            env.pop("TRITON_INTERPRET", None)
        # A start that only runs late (importing torch and triton took over 120 s
        # at load 20 on two cores: the 2-hour campaign's one internal finding) is
        # tried once more with three times the wait; a worker that exits is not.
        for wait in START_WAITS_S:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gpusem.compiler.appy_triton.worker",
                 self.backend],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                cwd=self.workdir, env=env, text=True, bufsize=1)
            self.served = 0
            ready = self._read_line(wait)
            if ready is not None and ready.get("ready"):
                return
            exited = self.proc.poll() is not None
            self._kill()
            if exited:
                break
        raise RuntimeError("appyc worker did not start (is the appy extra "
                           "installed? pip install -e '.[appy]')")

    # ----------------------------------------------------------------------- run
    def raw(self, case: Case, sm90: bool = False) -> tuple[dict | None, str]:
        """Send one case; the worker's answer, or None with `crash`/`hang`."""
        return self.ask(case.to_wire(sm90))

    def raw_retrying(self, case: Case, sm90: bool = False) -> tuple[dict | None, str,
                                                                     bool]:
        """`raw`, with a timeout run again once in a fresh worker under RETRY_FACTOR
        times the limit: a hang is a finding only when it reproduces."""
        answer, why = self.raw(case, sm90)
        if why != "hang":
            return answer, why, False
        limit = self.timeout
        # a loaded machine stretches the retry too (machine_load.py: the 2-hour
        # campaign's false hang, 20 s and 80 s at a load of ~10 per core)
        self.retry_limit = limit * RETRY_FACTOR * load_factor()
        self.timeout = self.retry_limit
        try:
            answer, why = self.raw(case, sm90)  # raw() starts a fresh worker
        finally:
            self.timeout = limit
        if why == "hang":
            why = "hang:twice"
        return answer, why, True

    def run(self, case: Case, expected: dict[str, np.ndarray] | None) -> Outcome:
        """Compile and run `case`; compare with `expected` (the sequential reading)."""
        t0 = time.perf_counter()
        answer, why, retried = self.raw_retrying(case)
        dt = time.perf_counter() - t0
        if answer is None:
            kind, _, sig = why.partition(":")
            detail = (f"no answer within {self.timeout:g}s, nor within "
                      f"{self.retry_limit:g}s in a fresh worker"
                      if kind == "hang" else f"worker died ({sig})")
            return Outcome(kind, detail, seconds=dt, retried=retried)
        adapted = tuple(answer.get("adapted", ()))
        if answer["stage"] != "ok":
            out = Outcome(answer["stage"], answer.get("error", ""), answer["module"],
                          seconds=dt, adapted=adapted, retried=retried)
            out.array = answer.get("array", "")
            return out
        from gpusem.compiler.appy_triton.worker import decode

        outputs = {k: decode(v) for k, v in answer["outputs"].items()}
        out = Outcome("agree", "", answer["module"], outputs, seconds=dt,
                      adapted=adapted, retried=retried)
        if expected is not None:
            mm = compare_outputs(expected, outputs)
            if mm is not None:
                out.kind, out.detail, out.mismatch = "wrong", mm.describe(), mm
        return out

    def compile_sm90(self, case: Case) -> dict:
        """Compile the case's kernels for sm_90 without running them (CPU only)."""
        answer, why = self.raw(case, sm90=True)
        if answer is None:
            return {"kernels": 0, "errors": [why]}
        if answer["stage"] != "ok":
            return {"kernels": 0, "errors": [f"{answer['stage']}: {answer.get('error')}"]}
        return answer.get("sm90", {"kernels": 0, "errors": []})


