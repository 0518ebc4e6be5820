"""The one runner over `examples/bundl/**/*.bundl` (STYLE 19): each file's header says
what must happen (format: examples/bundl/README.md); this checks it.

Parsing is always checked. Type checking and running use
`gpusem.typing_rules.bundl.stmt.check_program` and the small-step interpreter's
`run_program`; a part is skipped only while its module does not exist yet
(ImportError), never because it fails.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program

ROOT = Path(__file__).resolve().parents[2] / "examples" / "bundl"
FILES = sorted(ROOT.rglob("*.bundl"))
MAX_STEPS = 2_000_000
EXHAUSTIVE_THREADS = 4  # explore every interleaving of machines this small

_EXPECT = re.compile(r"^//\s*expect:\s*(.+)$", re.MULTILINE)
_OUTPUT = re.compile(r"^//\s*output:\s*(\w+)\s*=\s*\[(.*)\]\s*$", re.MULTILINE)
_CLAUSE = re.compile(r"^(ok|ill-typed|stuck|deadlock|bad-input)(?:\s+([^()\s]+(?:\s[^()]+)?))?"
                     r"(?:\s*\((fixed|paper)\))?$")


@dataclass(frozen=True)
class Expectation:
    kind: str  # ok | ill-typed | stuck | deadlock | bad-input
    detail: str  # the rule name, or the bad-input message prefix ("" if none)


@dataclass
class Header:
    expect: dict[str, Expectation] = field(default_factory=dict)  # rules mode -> exp.
    outputs: dict[str, list] = field(default_factory=dict)


def read_header(text: str, where: str) -> Header:
    lines = _EXPECT.findall(text)
    assert len(lines) == 1, f"{where}: needs exactly one `// expect:` line"
    header = Header()
    for clause in lines[0].split(";"):
        m = _CLAUSE.match(clause.strip())
        assert m, f"{where}: bad expectation {clause.strip()!r}"
        kind, detail, mode = m.group(1), (m.group(2) or "").strip(), m.group(3) or "fixed"
        assert mode not in header.expect, f"{where}: two expectations for {mode}"
        header.expect[mode] = Expectation(kind, detail)
    for name, values in _OUTPUT.findall(text):
        header.outputs[name] = [_value(v) for v in values.split(",") if v.strip()]
    return header


def _value(text: str):
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    return float(text) if any(c in text for c in ".eE") else int(text)


def _cases():
    for path in FILES:
        header = read_header(path.read_text(), path.name)
        for mode in header.expect:
            yield pytest.param(path, mode, id=f"{path.relative_to(ROOT)}-{mode}")


def test_corpus_is_large_and_covers_the_paper_figures():
    names = {p.stem for p in FILES}
    assert len(FILES) >= 18
    for fig in ("fig07a", "fig07b", "fig09", "fig10", "fig11", "fig12"):
        assert any(n.startswith(fig) for n in names), fig


def test_every_example_has_a_valid_header():
    for path in FILES:
        header = read_header(path.read_text(), path.name)
        assert "fixed" in header.expect
        if header.outputs:
            assert header.expect["fixed"].kind == "ok", path.name
            assert "// why:" in path.read_text(), f"{path.name}: derive the output"


@pytest.mark.parametrize(("path", "mode"), list(_cases()))
def test_example(path: Path, mode: str):
    text = path.read_text()
    header = read_header(text, path.name)
    exp = header.expect[mode]
    if exp.kind == "bad-input":
        with pytest.raises(BadInput) as info:
            parse_program(text, file=path.name)
        if exp.detail:
            assert info.value.prefix == exp.detail
        return
    prog = parse_program(text, file=path.name)
    if exp.kind == "ill-typed":
        with pytest.raises(IllTyped) as info:
            check_program(prog, rules=mode)
        assert info.value.rule == exp.detail, info.value.one_line()
        return
    try:
        check_program(prog, rules=mode)
    except IllTyped as err:
        pytest.fail(f"expected well-typed under {mode}: {err.one_line()}")
    run = run_program
    outcome = run(prog, schedule="rr", max_steps=MAX_STEPS, rules=mode)
    if exp.kind == "ok":
        assert outcome.kind == "terminated", f"{outcome.kind}: {outcome.message}"
        if mode != "fixed":
            return  # outputs are derived under the fixed rules (README)
        # the examples are race-free: a seeded random interleaving must agree, and on
        # small machines so must every interleaving (exhaustive, with state hashing)
        results = [outcome, run(prog, schedule="random:7", max_steps=MAX_STEPS,
                                rules=mode)]
        if prog.machine.blocks * prog.machine.threads <= EXHAUSTIVE_THREADS:
            every = run(prog, schedule="exhaustive", max_steps=MAX_STEPS, rules=mode)
            assert len(every.final_memories) == 1, every.final_memories
            results.append(every)
        for result in results:
            assert result.kind == "terminated", f"{result.kind}: {result.message}"
            for name, want in header.outputs.items():
                got = result.globals[name]
                assert _same(got, want), (name, got)
    elif exp.kind == "stuck":
        assert outcome.kind == "stuck", f"{outcome.kind}: {outcome.message}"
        assert outcome.rule == exp.detail, outcome.message
    else:
        assert outcome.kind == "deadlock", f"{outcome.kind}: {outcome.message}"


def _same(got: list, want: list) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if isinstance(w, float):
            if not (isinstance(g, float) and (g == w or (math.isnan(g) and math.isnan(w)))):
                return False
        elif type(g) is not type(w) or g != w:
            return False
    return True


def test_header_reader():
    h = read_header("// expect: ill-typed T-Alloc-Shared (fixed); stuck S-Alloc-Shared "
                    "(paper)\n// output: out = [1, -2.5, true]\n", "x")
    assert h.expect == {"fixed": Expectation("ill-typed", "T-Alloc-Shared"),
                        "paper": Expectation("stuck", "S-Alloc-Shared")}
    assert h.outputs == {"out": [1, -2.5, True]}
    assert read_header("// expect: bad-input syntax error\n", "y").expect["fixed"] == \
        Expectation("bad-input", "syntax error")
    with pytest.raises(AssertionError):
        read_header("// expect: fine\n", "z")
