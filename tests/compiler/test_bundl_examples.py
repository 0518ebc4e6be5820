"""Every well-typed example of `examples/bundl/` compiles, builds with nvcc for sm_90a,
and its kernel ends, on the cpu backend under three schedules, in the memory the
interpreter computes (issue 4). With and without wait motion."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.errors import IllTyped
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
from gpusem.fuzz.bundl.compile_property import check_program
from gpusem.interpreter.bundl.reference import reference
from gpusem.typing_rules.bundl.stmt import check_program as typecheck

from tests.compiler.shared_reference import reference_of, vouched

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "bundl"


def well_typed_examples() -> list[Path]:
    out = []
    for path in sorted(EXAMPLES.rglob("*.bundl")):
        header = re.search(r"^// expect: (\S+)", path.read_text(), re.M)
        if header and header.group(1).rstrip(";") in ("ok", "stuck", "deadlock"):
            out.append(path)
    return out


def load(path: Path):
    source = path.read_text()
    prog = parse_program(source, str(path))
    typecheck(prog)  # its header says it runs: a rejection here is a failure
    return prog, source


@pytest.mark.parametrize("path", well_typed_examples(), ids=lambda p: p.stem)
def test_example_agrees_with_interpreter_on_cpu(path):
    """With and without wait motion, in one test: both compare against one reference
    (it never reads the compile options; see shared_reference.py), which two
    parameters on two xdist workers each computed (~10 s for an SGEMM twin)."""
    prog, source = load(path)
    ref = reference_of(source, str(path))
    for sync_motion in (True, False):
        verdict = check_program(prog, "cpu", (0, 1, 2, 3), sync_motion, source,
                                path.name, ref=ref)
        assert verdict.agree, (sync_motion, verdict.describe())
        if vouched(str(path)):  # compared, not declined as racy (shared_reference.py)
            assert verdict.kind == "agree", (sync_motion, verdict.describe())


def running_examples() -> list[Path]:
    """The examples whose header says they type-check and terminate, but the SGEMM
    twins of `bench/`: their ~6,200 access pairs (the unrolled 8 x 8 accumulator
    stores) are proved race-free in 16-29 s, not within the oracle's 1.5 s budget, so
    `exec` declines them as undecided (a budget, not a race: see the report of
    issue 24, item 1)."""
    return [p for p in well_typed_examples()
            if re.search(r"^// expect: ok\b", p.read_text(), re.M)
            and not p.stem.startswith("sgemm_")]


@pytest.mark.parametrize("path", running_examples(), ids=lambda p: p.stem)
def test_no_example_is_declined_as_racy(path):
    """Issue 24, item 1: the compile oracle compares every example that runs (a racy
    verdict counts as `agree` above, so it needs its own test). Block-perspective code
    storing one value every thread of the block holds is one logical write (errata
    "uniform stores are one write")."""
    prog, _ = load(path)
    ref = reference(prog)
    assert ref.kind == "terminated", ref.message
    assert not ref.racy, ref.why


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_every_example_kernel_builds_with_nvcc_for_sm90a():
    from gpusem.compiler.backends.nvcc import compile_check

    sources, names = [], []
    for path in well_typed_examples():
        source = path.read_text()
        prog = parse_program(source, str(path))
        try:
            typecheck(prog)
        except IllTyped:
            continue
        for motion in (True, False):
            kernel = compile_program(prog, CompileOptions(sync_motion=motion), source,
                                     path.name)
            sources.append(kernel.source)
            names.append(f"{path.stem} (motion={motion})")
    assert sources, "no example compiled"
    errors = compile_check(sources)
    failed = {n: e for n, e in zip(names, errors, strict=True) if e}
    assert not failed, failed
