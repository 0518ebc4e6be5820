"""Attribution by evidence (issue 24): a failing APPy kernel is blamed only after the
emitted module has been read, the stand-in's limits are environment, and a worker that
exits after a fatal answer is not the next case's crash."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from gpusem.calculus.appy.parser import parse_program
from gpusem.compiler.appy_triton.driver import AppycDriver, Case, Outcome
from gpusem.compiler.appy_triton.worker import environmental
from gpusem.compiler.backends.json_worker import JsonWorkerDriver
from gpusem.fuzz.appy.verdicts import KernelRun, sign_kernel

ROOT = Path(__file__).resolve().parents[2]
# H100 campaign bundle: `H1[I0[i]] += 1.0` under `#pragma atomic`, lost updates on the
# GPU, right in Triton's interpreter; it was reported as `blame: triton`.
DROPPED = ROOT / "results/appy/h100/bundles/appy-wrong-42ff72fa41"
FEATS = {"atomic", "atomic_indirect", "in_place_update", "indirect_read",
         "parallel_for"}


class NoInterpreter:
    """The differential must not be consulted when the module is evidence enough."""

    def run(self, *_a, **_k):
        raise AssertionError("the interpreter differential ran")


def _kernel(module: str) -> KernelRun:
    fn = parse_program((DROPPED / "program.py").read_text())
    out = Outcome("wrong", "H1[3]: expected 4, got 1", module)
    return KernelRun(fn, "", {}, {}, {}, set(FEATS), outcome=out)


def test_dropped_atomic_is_appycs_by_the_module_not_tritons() -> None:
    module = (DROPPED / "kernel_triton.py").read_text()
    assert "#pragma atomic" in (DROPPED / "program.py").read_text()
    assert "tl.atomic" not in module and "tl.store" in module
    k = _kernel(module)
    sign_kernel(k, NoInterpreter(), "cuda")
    assert (k.signature, k.blame) == ("cause:atomic-dropped", "appyc")
    assert "no tl.atomic_*" in k.differential["evidence"]


class Agrees:
    def run(self, *_a, **_k):
        return Outcome("agree", "")


def test_a_module_with_its_atomic_goes_to_the_differential() -> None:
    module = (DROPPED / "kernel_triton.py").read_text().replace(
        "tl.store(", "tl.atomic_add(", 1)
    k = _kernel(module)
    sign_kernel(k, Agrees(), "cuda")
    assert k.signature != "cause:atomic-dropped"
    assert k.blame == "triton"  # right in the interpreter, wrong on the GPU, atomic kept


NONE_ERR = ("InterpreterError: TypeError(\"cannot convert None of type "
            "<class 'NoneType'> to tensor\")")
MODULE = "from triton.language.extra import libdevice\nx = libdevice.tanh(y)\n"


def test_libdevice_in_the_interpreter_is_environment(monkeypatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert environmental(NONE_ERR, MODULE).startswith(
        "environment: Triton's interpreter does not implement libdevice (tanh)")
    assert environmental(NONE_ERR, "x = tl.exp(y)\n") == ""  # no libdevice: a finding
    monkeypatch.delenv("TRITON_INTERPRET")
    assert environmental(NONE_ERR, MODULE) == ""  # on a GPU libdevice exists


def test_live_tanh_on_the_cpu_stand_in_is_environment_not_a_finding() -> None:
    src = ("def k(A, C, N):\n    #pragma parallel for\n    for i in range(N):\n"
           "        C[i] = A[i] * np.tanh(1.0)\n")
    a, c = np.ones(4, np.float32), np.zeros(4, np.float32)
    with AppycDriver("cpu", timeout=60.0) as d:
        out = d.run(Case("t", src, "k", ["A", "C", "N"], {"A": a, "C": c}, {"N": 4}),
                    {"A": a, "C": a * np.float32(np.tanh(1.0))})
    assert "libdevice.tanh" in out.module
    assert out.kind == "environment", (out.kind, out.detail)


FAKE_WORKER = """
import json, sys, time
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"id": req["id"], "fatal": req["id"] == 0}), flush=True)
    if req["id"] == 0:
        time.sleep(1.0)  # a CUDA context being torn down
        break
"""


class FakeDriver(JsonWorkerDriver):
    def __init__(self) -> None:
        self.proc, self.timeout, self.served, self.recycle_after = None, 10.0, 0, 100
        self.workdir = tempfile.mkdtemp()
        self.starts = 0

    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", FAKE_WORKER],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.served, self.starts = 0, self.starts + 1
        assert self._read_line(10.0) == {"ready": True}


def test_the_request_after_a_fatal_answer_gets_a_fresh_worker() -> None:
    with FakeDriver() as d:
        assert d.ask({"id": 0}) == ({"id": 0, "fatal": True}, "")
        answer, why = d.ask({"id": 1})  # was: None, "crash:exit 0"
        assert (answer, why) == ({"id": 1, "fatal": False}, "")
        assert d.starts == 2

