"""One reference outcome per program text and test process, for the tests that compile
one program several ways (wait motion on and off, Prism's barrier placement): the
reference (interpreter/bundl/reference.py: four schedules and the z3 race proof) reads
the program only, never the compile options, so each way is compared against the same
outcome it computed before. For the SGEMM twins of examples/bundl/bench the race proof
alone is ~10 s of CPU (it ends undecided, and the verdict is `racy`), and each twin was
referenced twice in test_bundl_examples.py, twice in test_bench_programs.py and once in
test_bundl_sync_prism.py (the bench examples are the rendered twins: the same text)."""

from __future__ import annotations

from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.reference import Reference, reference

_BY_TEXT: dict[str, Reference] = {}


def reference_of(text: str, file: str) -> Reference:
    """`reference` of the program `text` parses to, computed once per text (a message
    names the `file` of the first caller)."""
    if text not in _BY_TEXT:
        _BY_TEXT[text] = reference(parse_program(text, file))
    return _BY_TEXT[text]
