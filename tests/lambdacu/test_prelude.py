"""The cached cpu build's prelude (compiler/lambdacu_cuda/prelude.py): a precompiled
runtime header and a prebuilt runtime object, made once, re-made when the cache's
trim took one of their files (the cpu backend's runtime object was once linked
missing after a trim), and the standalone text left as it was."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.compiler.lambdacu_cuda import driver, prelude
from gpusem.compiler.lambdacu_cuda.emit import compile_program

PROGRAM = """
kernel k(xs: [int]) -> (int, [int]) {
  let s = REDUCE { i => xs[i] using xs } (iadd) #xs
  let p = SCAN { i => xs[i] using xs } (iadd) #xs
  ret s, p
}
function main() -> (int, [int]) { let (xs) = [XS] in run k(xs) }
"""


def _source(xs: list[int]) -> str:
    text = PROGRAM.replace("[XS]", f"[{', '.join(map(str, xs))}]")
    return compile_program(parse_program(text, "p.lcu"), block=4).source


def _prelude_home(cache: Path) -> Path:
    (home,) = (cache / "lambdacu").glob("prelude_*")
    return home


def test_a_trimmed_prelude_is_made_again_and_the_output_is_the_standalone_ones(
        tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(tmp_path))
    first = driver.run(_source([1, 2, 3, 4, 5]))
    assert first.outcome == "ok" and "i15" in driver.encode(first.value)
    home = _prelude_home(tmp_path)
    assert prelude.complete(home, 4)
    # the cache's LRU trim deletes single files: the PCH, the runtime object, a header
    for name in ("lc_b4.h.gch", "gs_rt.o", "simt_sched.h"):
        (home / name).unlink()
    exe = driver.build(_source([2, 3, 4, 5, 6, 7]))
    assert not isinstance(exe, str), exe
    assert prelude.complete(home, 4)  # made again, not built around
    ran = driver.parse_output(subprocess.run([str(exe), "0"], capture_output=True,
                                             text=True, check=False).stdout)
    # the same program built the standalone way (every header inlined, gs::launch
    # itself: what a reproducer is) prints the same
    alone = tmp_path / "alone"
    alone.mkdir()
    text = driver.standalone(_source([2, 3, 4, 5, 6, 7]))
    assert "#define LC_PREBUILT_RUNTIME" not in text
    built = driver._build_one(text, driver.CXX, driver.cpu_build_flags(),
                              alone / "prog", 300.0, "prog.cpp")
    assert not isinstance(built, str), built
    ref = driver.parse_output(subprocess.run([str(built), "0"], capture_output=True,
                                             text=True, check=False).stdout)
    assert ran == ref and ran.outcome == "ok"
    assert driver.encode(ran.value) == " ( i27 [6 i2 i5 i9 i14 i20 i27 ] )"


def test_a_program_not_written_as_emit_writes_it_is_built_standalone():
    source = _source([1])
    assert prelude.unit(source) is not None
    assert prelude.unit("int x;\n" + source) is None  # a token before the include
