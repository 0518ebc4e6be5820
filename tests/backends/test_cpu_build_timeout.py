"""A hung g++ is killed after GXX_TIMEOUT_S and raised as BuildHung (gpusem's internal
error), so that a campaign never waits on a compiler past its budget; before the
limit a g++ that never returned hung its worker for good."""

from __future__ import annotations

import stat
import time

import pytest
from gpusem.compiler.backends import cpu as cpu_backend

from . import cases


def test_a_hung_gxx_is_killed_and_reported(tmp_path, monkeypatch):
    cpu_backend.cxxflags()  # the real g++'s flags, probed once before the swap
    fake = tmp_path / "hung-g++"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    backend = cpu_backend.CpuBackend(cache_dir=tmp_path / "cache", parallel=2)
    backend._pch = ""  # no precompiled header: the batch's own g++ calls hang
    monkeypatch.setattr(cpu_backend, "CXX", str(fake))
    monkeypatch.setattr(cpu_backend, "GXX_TIMEOUT_S", 0.5)
    spec = cases.spec("div_by_zero", 1, 32,
                      (cases.ptr("a", "int32", 32), cases.ptr("out", "int32", 32)))
    t0 = time.monotonic()
    with pytest.raises(cpu_backend.BuildHung, match=r"g\+\+ did not finish in 0.5 s"):
        backend.build([spec])
    assert time.monotonic() - t0 < 10


def test_the_single_call_helper_raises_too(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_backend, "GXX_TIMEOUT_S", 0.3)
    with pytest.raises(cpu_backend.BuildHung):
        cpu_backend._gxx(["sleep", "30"], capture_output=True)


def _never_reads(conn) -> None:  # a child stuck at its fork: it never reads a request
    time.sleep(60)


def test_a_request_the_child_never_reads_is_hung_not_a_hang():
    """A request larger than the pipe's buffer to a child that never reads it: `send`
    blocked with no watchdog before (stop 29's suspect for a Dask piece hang); now
    the call's deadline covers the send."""
    import multiprocessing

    handle = cpu_backend._WorkerHandle()
    handle.stop()
    ctx = multiprocessing.get_context("fork")
    handle.conn, child = ctx.Pipe()
    handle.proc = ctx.Process(target=_never_reads, args=(child,), daemon=True)
    handle.proc.start()
    child.close()
    t0 = time.monotonic()
    assert handle.call(b"x" * (8 << 20), timeout=0.5) == ("hung", "")
    assert time.monotonic() - t0 < 5
    assert not handle.proc.is_alive()
