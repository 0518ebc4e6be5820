"""The Exo worker's excerpt of a long sync-error log keeps the first hazard remark and
the location above it (stop 29: a 20,000-character cut lost them in 16 of 15,700
pldi26 logs of the H200 census, and their classes fell back to rules without a
statement). worker.py is a script for Exo's interpreter: loaded here by path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from gpusem.compiler import gpuir_exo
from gpusem.compiler.gpuir_exo.verdict import hazard_location

WORKER = Path(gpuir_exo.__file__).with_name("worker.py")


def _worker():
    spec = importlib.util.spec_from_file_location("gpusem_exo_worker_script", WORKER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _log(filler_lines: int) -> str:
    filler = "".join(f"# visibility record {i}: " + "x" * 60 + "\n"
                     for i in range(filler_lines))
    return (filler + "#   <proc>:27:8:(s3) buf[0, 31] = ...\n"
            "# RAW HAZARD @ buf[0, 31]\n" + "# after\n" * 50)


def test_a_hazard_past_the_limit_is_kept_with_its_location() -> None:
    text = _log(400)  # ~34 k characters before the remark
    assert text.index("HAZARD") > 20000
    assert hazard_location(text[:20000]) is None  # what the plain cut lost
    excerpt = _worker().log_excerpt(text)
    assert len(excerpt) <= 20000
    assert hazard_location(excerpt) == (27, 8, "buf[0, 31]")


def test_a_short_log_or_an_early_hazard_is_the_plain_head() -> None:
    worker = _worker()
    short = _log(5)
    assert worker.log_excerpt(short) == short
    early = _log(5) + "# tail\n" * 5000
    assert len(early) > 20000
    assert worker.log_excerpt(early) == early[:20000]
