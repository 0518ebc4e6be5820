"""How the cpu backend spends g++ on a batch (cpu.py's MIN_UNIT_BYTES, FAST_LINKERS):
a batch is split into units only when it is big and a core is idle, and its library
is linked by a fast linker where one works, else by g++'s default, with the same
kernels' answers either way."""

from __future__ import annotations

import subprocess

from gpusem.compiler.backends import cpu as cpu_backend
from gpusem.compiler.backends.kernel import KernelSpec

from . import cases


def _spec(size: int) -> KernelSpec:
    return KernelSpec("k", "x" * size, 1, 1, 0, ())


def test_a_batch_is_split_only_when_big_and_a_core_is_idle(monkeypatch) -> None:
    unit = cpu_backend.MIN_UNIT_BYTES
    monkeypatch.setattr(cpu_backend, "idle_cores", lambda: 7)
    count = cpu_backend._unit_count
    assert count([_spec(unit // 8)] * 7, 2) == 1  # a shrink step's batch: one unit
    assert count([_spec(unit // 8)] * 16, 2) == 2  # two units' worth of text
    assert count([_spec(unit // 8)] * 80, 2) == 2  # never more than `parallel`
    assert count([_spec(unit // 8)] * 80, 1) == 1
    assert count([_spec(3 * unit)], 2) == 1  # one kernel is one unit
    monkeypatch.setattr(cpu_backend, "idle_cores", lambda: 0)  # a loaded machine
    assert count([_spec(unit // 8)] * 80, 2) == 1


def test_a_missing_fast_linker_falls_back_to_the_default_one(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_backend, "FAST_LINKERS", ("-fuse-ld=no-such-linker",))
    monkeypatch.setattr(cpu_backend, "_unusable", set())
    calls: list[list[str]] = []
    real = cpu_backend._gxx

    def logged(cmd, **kw):
        calls.append(cmd)
        return real(cmd, **kw)

    monkeypatch.setattr(cpu_backend, "_gxx", logged)
    backend = cpu_backend.CpuBackend(cache_dir=tmp_path / "a")
    other = cpu_backend.CpuBackend(cache_dir=tmp_path / "b")
    try:
        first, second = cases.reduce_case("reduce_sync"), cases.int_arith_case()
        [got] = backend.run([first.job])
        assert got.kind == "ok" and cases.matches(first, got.outputs), got.message
        links = [c for c in calls if "-shared" in c]
        assert [("-fuse-ld=no-such-linker" in c) for c in links] == [True, False]
        assert cpu_backend._unusable == {"-fuse-ld=no-such-linker"}
        calls.clear()
        [got] = other.run([second.job])  # not tried again by this process
        assert got.kind == "ok" and cases.matches(second, got.outputs), got.message
        assert [("-fuse-ld" in " ".join(c)) for c in calls if "-shared" in c] == [False]
    finally:
        backend.close()
        other.close()


def test_a_real_link_error_is_the_default_linkers(tmp_path, monkeypatch) -> None:
    """An object that fails with every linker is reported as GNU ld says, and leaves
    the fast linker in use."""
    monkeypatch.setattr(cpu_backend, "_unusable", set())
    objs = []
    for name, text in (("a", "int dup() { return 1; }\n"), ("b", "int dup() { return 2; }\n")):
        (tmp_path / f"{name}.cpp").write_text(text)
        objs.append(str(tmp_path / f"{name}.o"))
        subprocess.run([cpu_backend.CXX, "-fPIC", "-c", str(tmp_path / f"{name}.cpp"),
                        "-o", objs[-1]], check=True)
    done = cpu_backend._link([str(tmp_path / "lib.so"), *objs])
    assert done.returncode != 0 and "multiple definition" in done.stderr
    assert "/ld: " in done.stderr and "ld.gold" not in done.stderr, done.stderr
    assert not cpu_backend._unusable
