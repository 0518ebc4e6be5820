"""gpusem's cache folder (issue 32.12): where it is (GPUSEM_CACHE_DIR, then
XDG_CACHE_HOME, then ~/.cache), and its bound (least recently used files go first)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from gpusem.compiler.backends import cache

ROOT = Path(__file__).resolve().parents[2]


def test_the_cache_honours_gpusem_cache_dir_then_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUSEM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "gpusem"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # invalid per the XDG spec
    assert cache.cache_root() == Path.home() / ".cache" / "gpusem"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_root() == Path.home() / ".cache" / "gpusem"
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "mine"


def test_the_cpu_and_nvcc_caches_live_in_the_cache_root(monkeypatch, tmp_path):
    from gpusem.compiler.backends import cpu, nvcc

    monkeypatch.delenv("GPUSEM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cpu.default_cache_dir() == tmp_path / "gpusem" / "cpu"
    assert nvcc._cache_dir() == tmp_path / "gpusem" / "nvcc"  # noqa: SLF001


def test_trim_deletes_least_recently_used_files_down_to_the_bound(tmp_path):
    for i in range(10):
        p = tmp_path / f"sub{i % 2}" / f"f{i}"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"x" * 1000)
        os.utime(p, (1_000_000 + i, 1_000_000 + i))  # f0 oldest ... f9 newest
    cache.touch(tmp_path / "sub0" / "f0")  # used just now: the newest
    freed = cache.trim(tmp_path, 4500)
    left = sorted(p.name for p in tmp_path.rglob("f*"))
    assert freed == 6000 and left == ["f0", "f7", "f8", "f9"]
    assert cache.trim(tmp_path, 4500) == 0  # under the bound: nothing more goes


def test_the_bound_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPUSEM_CACHE_MAX_MB", "3")
    assert cache.max_bytes() == 3 * 1024 * 1024
    monkeypatch.setenv("GPUSEM_CACHE_MAX_MB", "lots")
    assert cache.max_bytes() == cache.DEFAULT_MAX_MB * 1024 * 1024


def test_opening_the_cache_trims_it(tmp_path):
    """A fresh process that opens the cpu cache trims the whole folder to its bound."""
    old = tmp_path / "nvcc" / "old.ok"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"y" * 3_000_000)
    os.utime(old, (1_000_000, 1_000_000))
    env = dict(os.environ, GPUSEM_CACHE_DIR=str(tmp_path), GPUSEM_CACHE_MAX_MB="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    subprocess.run([sys.executable, "-c", "from gpusem.compiler.backends import cpu; "
                    "cpu.default_cache_dir()"], env=env, check=True, timeout=120)
    assert not old.exists() and (tmp_path / "cpu").is_dir()


def test_a_trim_within_ten_minutes_of_the_last_one_is_skipped(tmp_path):
    """The walk costs ~1 s on a used cache, once per process: the stamp of the last
    trim lets the processes of the next ten minutes skip it; an old stamp does not."""
    old = tmp_path / "cpu" / "old.so"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"y" * 3000)
    os.utime(old, (1_000_000, 1_000_000))
    stamp = tmp_path / cache.TRIM_STAMP
    stamp.touch()  # another process trimmed just now
    cache._trim_once.cache_clear()
    assert cache._trim_once(str(tmp_path), 1000) == 0 and old.exists()
    os.utime(stamp, (time.time() - cache.TRIM_EVERY_S - 5,) * 2)  # long ago
    cache._trim_once.cache_clear()
    assert cache._trim_once(str(tmp_path), 1000) == 3000 and not old.exists()
    assert time.time() - stamp.stat().st_mtime < 60  # this trim's stamp
    cache._trim_once.cache_clear()
