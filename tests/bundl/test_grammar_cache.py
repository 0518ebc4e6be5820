"""calculus/grammar_cache.py: Lark's tables are written once, whole, under a name of
their own digest, and read back by the next parser; without a writable cache folder
the parser is built as before."""

from __future__ import annotations

from pathlib import Path

import lark
from gpusem.calculus.bundl import parser as bundl_parser
from gpusem.calculus.gpuir import parser as gpuir_parser
from gpusem.calculus.grammar_cache import built_lark, cached_lark

GRAMMAR = (Path(bundl_parser.__file__).parent / "grammar.lark").read_text()
OPTIONS = {"parser": "lalr", "lexer": "contextual", "start": "start_expr",
           "propagate_positions": True, "maybe_placeholders": True}
TEXT = "(x + 1) * -2 < y"


def test_the_tables_are_kept_whole_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(tmp_path))
    built = cached_lark(GRAMMAR, "t", **OPTIONS)
    (kept,) = (tmp_path / "lark").iterdir()  # renamed into place: no temporary left
    assert kept.name.startswith("t-") and kept.suffix == ".tables"
    loads = []
    real = lark.Lark.load.__func__
    monkeypatch.setattr(lark.Lark, "load", classmethod(
        lambda cls, f: loads.append(f.name) or real(cls, f)))
    again = cached_lark(GRAMMAR, "t", **OPTIONS)
    assert loads == [str(kept)]
    tree = again.parse(TEXT)
    assert tree == built.parse(TEXT) and tree.meta.end_column == len(TEXT) + 1
    cached_lark(GRAMMAR + "\n// changed\n", "t", **OPTIONS)  # other tables, other file
    assert len(list((tmp_path / "lark").iterdir())) == 2


def test_a_parser_with_a_postlex_reads_its_tables_back(tmp_path, monkeypatch):
    """GPU IR's indenter is pickled with the tables: the same trees either way."""
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(tmp_path))
    example = Path(__file__).resolve().parents[2] / "examples/gpuir/gemm_tiled.gpuir"
    gpuir_parser._lark.cache_clear()  # a parser made by an earlier test wrote elsewhere
    first = gpuir_parser.parse_module(example.read_text())
    gpuir_parser._lark.cache_clear()  # the next parser is read back
    try:
        assert len(list((tmp_path / "lark").glob("gpuir-*.tables"))) == 1
        assert gpuir_parser.parse_module(example.read_text()) == first
    finally:
        gpuir_parser._lark.cache_clear()


def test_without_a_writable_folder_the_parser_is_built(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(blocker))  # lark/ cannot be made in it
    parser = cached_lark(GRAMMAR, "t", **OPTIONS)
    assert parser.parse("1 + 2").data == "start_expr"


def test_a_parser_read_back_is_rebuilt_whole_for_from_lark(tmp_path, monkeypatch):
    """A parser read back from tables has no grammar, which hypothesis's from_lark
    reads (tests/robust: the campaign sample failed on it); `built_lark` builds it
    from its grammar text."""
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(tmp_path))
    cached_lark(GRAMMAR, "t", **OPTIONS)
    again = cached_lark(GRAMMAR, "t", **OPTIONS)  # read back
    assert not hasattr(again, "grammar")
    whole = built_lark("t")
    assert hasattr(whole, "grammar") and whole.parse(TEXT) == again.parse(TEXT)

