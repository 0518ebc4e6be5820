"""No user text in generated C++ outside comments that nothing can end early (issue
15, "a miscompilation from a comment"): a source comment ending in a backslash spliced
the next generated statement into its `//` comment. Both compilers, on programs whose
comments and file names hold backslashes, `*/`, trigraphs, non-ASCII characters and
line endings other than `\\n` (identifiers cannot hold any of them: both grammars
refuse), must emit the same code as for the clean program, comments aside, and that
code must build and agree with the reference."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpusem.compiler.cxx_text import comment, comment_text

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ["ends in a backslash \\", "two \\\\", "*/ closes", "/* opens", "??/",
           "??= ??( ??) ??' ??< ??> ??! ??-", "é ü π → ∀", "\u2028 line separator",
           "tab\there", "nul-free but \x0b vertical tab \x0c form feed",
           "\r carriage return", "#define x y", "\" quote ' quote"]
SAFE = re.compile(r"[\x20-\x7e]*")


@pytest.mark.parametrize("text", HOSTILE)
def test_comment_text_is_printable_ascii_without_splices_or_trigraphs(text):
    out = comment_text(text)
    assert SAFE.fullmatch(out), out
    assert "\\" not in out and "?" not in out
    assert comment(text).startswith("// ") and "\n" not in comment(text)


def _code(cxx: str) -> list[str]:
    """The emitted C++ without its comments (every comment is a `//` one)."""
    lines = []
    for line in cxx.split("\n"):
        code = line.split("//", 1)[0].rstrip()
        if code:
            lines.append(code)
    return lines


def _comments_are_safe(cxx: str) -> None:
    for line in cxx.split("\n"):
        assert SAFE.fullmatch(line), repr(line)  # no \r, \v, \f, U+2028 anywhere
        if "//" in line:
            text = line.split("//", 1)[1]
            assert "\\" not in text and "?" not in text, line


def _hostile_bundl(texts: list[str] = HOSTILE) -> str:
    """map_double with a hostile comment after every statement line, in turn."""
    clean = (ROOT / "examples" / "bundl" / "map_double.bundl").read_text()
    out, k = [], 0
    for line in clean.split("\n"):
        if line.split("//")[0].rstrip().endswith((";", "{")):
            line, k = f"{line} // {texts[k % len(texts)]}", k + 1
        out.append(line)
    return "\n".join(out)


def test_bundl_hostile_comments_change_nothing_but_comments(tmp_path):
    from gpusem.api import compile_file

    clean = ROOT / "examples" / "bundl" / "map_double.bundl"
    hostile = tmp_path / "a \\ b ??= é\nnewline.bundl"  # the header holds the name
    hostile.write_text(_hostile_bundl())
    a, b = compile_file(str(clean)).source, compile_file(str(hostile)).source
    _comments_are_safe(b)
    assert _code(a) == _code(b)
    assert b.count("//") >= a.count("//")
    assert "\\\n" in _hostile_bundl() and "\u2028" in _hostile_bundl()  # as it says


def test_bundl_hostile_comments_build_and_agree_on_cpu(tmp_path):
    from gpusem.fuzz.bundl.compile_property import check_file

    hostile = tmp_path / "hostile.bundl"
    hostile.write_text(_hostile_bundl(["splice \\"]))  # on every line: a build error
    verdict = check_file(str(hostile), "cpu", (0,))
    assert verdict.kind == "agree", verdict.describe()


def _hostile_gpuir(texts: list[str] = HOSTILE) -> str:
    """tmp_vector_copy with a hostile comment after every statement line, in turn
    (GPU IR's layout is Python's: only `\n` ends a line there)."""
    clean = (ROOT / "examples" / "gpuir" / "tmp_vector_copy.gpuir").read_text()
    texts = [t for t in texts if not {"\r", "\x0b", "\x0c", "\u2028"} & set(t)]
    out, k = [], 0
    for line in clean.split("\n"):
        if line.startswith("    "):
            line, k = f"{line}  # {texts[k % len(texts)]}", k + 1
        out.append(line)
    return "\n".join(out)


def test_gpuir_hostile_comments_change_nothing_but_comments(tmp_path):
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
    from gpusem.typing_rules.gpuir.frontend import load_proc

    clean = ROOT / "examples" / "gpuir" / "tmp_vector_copy.gpuir"
    hostile = tmp_path / "b \\ ??= π\nnewline.gpuir"
    hostile.write_text(_hostile_gpuir())
    texts = []
    for path in (clean, hostile):
        proc, env, source = load_proc(str(path), {})
        texts.append(compile_proc(proc, env, source=source, file=path.name).source)
    _comments_are_safe(texts[1])
    assert _code(texts[0]) == _code(texts[1])
    assert "\\\n" in _hostile_gpuir() and "*/" in _hostile_gpuir()  # as it says


def test_gpuir_hostile_comments_build_and_agree_on_cpu(tmp_path):
    from gpusem.compiler.gpuir_cuda.run import check_proc
    from gpusem.typing_rules.gpuir.frontend import load_proc

    hostile = tmp_path / "hostile.gpuir"
    hostile.write_text(_hostile_gpuir(["splice \\"]))
    proc, env, source = load_proc(str(hostile), {})
    verdict = check_proc(proc, env, "cpu", (0,), source=source, file=hostile.name)
    assert verdict.kind == "agree", verdict.describe()
