"""One program through both checkers: parse the GPU IR, gpusem's verdicts under both
rule sets, emit the Exo proc in the installed branch's dialect, Exo's verdict, the
comparison, and (for a disagreement) the files of its bundle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as A
from gpusem.compiler.gpuir_exo.driver import ExoAnswer, ExoDriver
from gpusem.compiler.gpuir_exo.emit import ExoSource, Unexpressible, emit_proc
from gpusem.compiler.gpuir_exo.verdict import hazard_location
from gpusem.fuzz.exo.verdicts import (
    RULES,
    Comparison,
    GpusemVerdict,
    compare,
    gpusem_verdict,
    statement_kind,
)

FILE = "program.gpuir"


@dataclass
class Checked:
    source: str
    defines: dict[str, int]
    proc: A.Proc | None = None
    gpusem: dict[str, GpusemVerdict] = field(default_factory=dict)
    exo_source: ExoSource | None = None
    exo: ExoAnswer | None = None
    comparison: Comparison = field(default_factory=lambda: Comparison(True))
    explanation: str = ""   # Exo's debug log on a rejection that disagrees
    exo_at: str = ""
    exo_line: int = 0       # GPU IR line of Exo's hazard
    unexpressible: str = ""
    unexpressible_construct: str = ""  # Unexpressible.construct: what Exo lacks
    mutation: str = ""

    @property
    def both_accept(self) -> bool:
        """Exo accepts and gpusem's default rules (`fixed`) accept: the programs the
        compile property runs. (`--rules paper` rejects every program with two kernels
        or a reused mbarrier: findings of their own, not reasons to skip a run.)"""
        return (self.exo is not None and self.exo.verdict.kind == "accept"
                and self.gpusem.get("fixed") is not None
                and self.gpusem["fixed"].kind == "accept")


def check_program(driver: ExoDriver, program) -> Checked:
    c = check_text(driver, program.source(), program.defines())
    c.mutation = program.mutation
    return c


def check_text(driver: ExoDriver, source: str, defines: dict[str, int]) -> Checked:
    from gpusem.calculus.gpuir.parser import parse_module

    c = Checked(source, dict(defines))
    c.proc = parse_module(source, FILE).procs[-1]
    for r in RULES:
        c.gpusem[r] = gpusem_verdict(c.proc, defines, source, r)
    try:
        c.exo_source = emit_proc(c.proc, defines, driver.install.dialect)
    except Unexpressible as err:
        c.unexpressible = err.one_line()
        c.unexpressible_construct = err.construct
        return c
    es = c.exo_source
    c.exo = driver.check(es.text, es.proc, es.sizes)
    c.comparison = compare(c.exo.verdict, c.gpusem)
    if not c.comparison.agree and c.exo.verdict.kind == "hazard":
        _explain(driver, c)
    return c


def _explain(driver: ExoDriver, c: Checked) -> None:
    """Ask Exo where its hazard is (its debug log), map the emitted line back to the
    GPU IR statement, and refine the signature with the statement's kind."""
    assert c.exo_source is not None and c.exo is not None and c.proc is not None
    es = c.exo_source
    c.explanation = driver.explain(es.text, es.proc, es.sizes)
    loc = hazard_location(c.explanation)
    if loc is None:
        return
    line, _col, cell = loc
    span = es.origin(line)
    if span is None:
        return
    c.exo_line = span.line
    c.exo_at = statement_kind(c.proc, span.line, *_cell(cell))
    c.comparison = compare(c.exo.verdict, c.gpusem, c.exo_at)


def _cell(text: str) -> tuple[str, tuple[int, ...] | None]:
    """`buf[0, 31]` or `free(buf[0, 31])` -> ("buf", (0, 31))."""
    import re

    m = re.search(r"(\w+)\s*(?:\[([-\d,\s]*)\])?\)?$", text.strip())
    if m is None:
        return text, None
    idx = tuple(int(x) for x in m[2].split(",")) if m[2] and m[2].strip() else None
    return m[1], idx


def inputs_json(c: Checked) -> str:
    return json.dumps(c.defines) + "\n"


def require_parsed(c: Checked) -> A.Proc:
    if c.proc is None:
        raise BadInput("no program")
    return c.proc
