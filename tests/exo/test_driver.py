"""The Exo driver's process discipline without Exo (CI): a stand-in interpreter speaks
the worker protocol and crashes or hangs on request; the driver must report `crash`
(with the signal) and `hang`, and serve the next case from a fresh worker. And no Exo
at all is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from gpusem.compiler.gpuir_exo.driver import ExoDriver, ExoUnavailable, find_exo_python

FAKE = textwrap.dedent('''\
    #!{python}
    import json, os, signal, sys, time
    out = os.fdopen(os.dup(1), "w", buffering=1)
    out.write(json.dumps({{"ready": True, "info": {{"exo_file": "fake", "fingerprint":
        "0", "probes": {{"ring_buffer_by": False}}, "dist": {{"version": "0"}}}}}}) + "\\n")
    for line in sys.stdin:
        req = json.loads(line)
        if "CRASH" in req["source"]:
            os.kill(os.getpid(), signal.SIGSEGV)
        if "HANG" in req["source"]:
            time.sleep(60)
        out.write(json.dumps({{"id": req.get("id"), "stage": "ok",
                               "outcome": "accept"}}) + "\\n")
    ''')


@pytest.fixture
def fake_python(tmp_path):
    path = tmp_path / "python"
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


def test_crash_and_hang_cost_one_case(fake_python):
    with ExoDriver(fake_python, timeout=2.0) as d:
        assert d.install.branch.startswith("unknown") and d.install.dialect == "pldi26"
        assert d.check("fine", "p", {}).verdict.kind == "accept"
        crash = d.check("CRASH", "p", {}).verdict
        assert (crash.kind, crash.name) == ("crash", "SIGSEGV")
        assert d.check("fine", "p", {}).verdict.kind == "accept"  # a fresh worker
        assert d.check("HANG", "p", {}).verdict.kind == "hang"
        assert d.check("fine", "p", {}).verdict.kind == "accept"


def test_no_exo_is_exit_2_with_one_line(monkeypatch):
    monkeypatch.setenv("GPUSEM_EXO_PYTHON", "/nonexistent/python")
    with pytest.raises(ExoUnavailable, match="not an executable Python"):
        find_exo_python()
    proc = subprocess.run([sys.executable, "-m", "gpusem", "fuzz", "--target", "exo",
                           "--budget", "5s"], capture_output=True, text=True)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "target unavailable" in lines[0]


def test_no_exo_anywhere(monkeypatch):
    import importlib.util

    monkeypatch.delenv("GPUSEM_EXO_PYTHON", raising=False)
    has_exo_gpu = (importlib.util.find_spec("exo") is not None
                   and importlib.util.find_spec("exo.spork") is not None)
    if has_exo_gpu:  # an interpreter with Exo-GPU installed uses itself
        assert find_exo_python() == sys.executable
    else:
        with pytest.raises(ExoUnavailable, match="no Exo-GPU found"):
            find_exo_python()


@pytest.mark.parametrize("module", ["census", "compile_census"])
def test_the_census_mains_without_exo_are_exit_2_with_one_line(module, tmp_path):
    out = tmp_path / "c.json"
    proc = subprocess.run([sys.executable, "-m", f"gpusem.fuzz.exo.{module}",
                           "--exo-python", "/nonexistent/python", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpusem: target unavailable")
    assert not out.exists()
