"""Coverage of the Bundl target (issue 14, item 7): which typing rules, semantic rules
and compiler lowering paths the generated programs of each property reach. A rule no
generated program reaches is a blind spot of the oracle (the miscompilations of item 2
lived in two); these tests fail when one drops to 0.

Samples are deterministic (`fuzz/bundl/sample.draw`, fixed seeds): a failure means the
generators changed so that this sample misses a rule, and the fix is in the generators,
not the seed.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.errors import IllTyped
from gpusem.compiler.bundl_cuda.paths import PATHS, SURFACE_PATHS
from gpusem.fuzz.bundl.coverage import lowering_paths, typing_rules
from gpusem.fuzz.bundl.sample import draw
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.typing_rules.bundl.derivation import TYPING_RULES
from gpusem.typing_rules.bundl.stmt import check_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "bundl"


def _well_typed_examples():
    for path in sorted(EXAMPLES.rglob("*.bundl")):
        try:
            prog = parse_program(path.read_text(), path.name)
            check_program(prog)
        except Exception:  # noqa: BLE001 - bad-input and ill-typed examples
            continue
        yield path, prog


def test_every_name_reported_is_in_the_universe():
    target = BundlTarget()
    seen: set[str] = set()
    for _, prog in _well_typed_examples():
        got = target.coverage(prog)
        assert got <= set(target.coverage_universe()), got - set(
            target.coverage_universe())
        seen |= got
    for prop in ("compile", "motion", "soundness", "determinism", "printparse"):
        assert set(target.coverage_universe(prop)) <= set(target.coverage_universe())
    assert {"T-Seq", "S-Partition", "E-Partition-Id", "compile:lower_async:cp.async",
            "compile:lower_barriers:__syncthreads"} <= seen


def test_the_passes_note_only_declared_paths():
    for path, prog in _well_typed_examples():
        for motion in (True, False):
            unknown = lowering_paths(prog, motion) - set(PATHS) - set(SURFACE_PATHS)
            assert not unknown, (path.name, unknown)


def test_coverage_is_deterministic_and_per_property():
    target = BundlTarget()
    prog = parse_program((EXAMPLES / "alloc_global_per_unit.bundl").read_text())
    assert target.coverage(prog, "compile") == target.coverage(prog, "compile")
    assert not any(n.startswith("compile:") for n in target.coverage(prog, "soundness"))
    assert not any(n.startswith(("S-", "E-")) for n in target.coverage(prog, "printparse"))
    assert "compile:galloc:zeroed by the launch" in target.coverage(prog, "compile")
    with pytest.raises(IllTyped):  # the examples above are the well-typed ones
        check_program(parse_program("main { let x : int @ grid[1] = true; }"))


def _zero(prop: str, n: int, seed: int) -> list[str]:
    """The names of `prop`'s universe that n drawn programs never reach."""
    target = BundlTarget()
    counts: collections.Counter[str] = collections.Counter()
    for program in draw(target.strategy(prop), n, seed):
        counts.update(target.coverage(program, prop))
    return [name for name in target.coverage_universe(prop) if counts[name] == 0]


# One sample per distinct strategy of the target (soundness, teeth, bigsmall,
# printparse and soundness-paper draw the same programs), sized so that the rarest
# rule (S-Claim-Skip, a few programs in a thousand) is reached. The compile property's
# semantic rules cost an interpreter run of kernels of up to 128 threads each: CI
# checks its typing rules and lowering paths, the slow test all three judgments.
# `draw` seeds each round of 100 on its own, so n programs are the first n of any
# larger sample: the sizes below are the first 900 / 300 of seed 7's 1500 / 500,
# which already reach every name (the last first met: S-Claim-Skip at program 687 of
# soundness; compile:lower_barriers:bar.sync at 225 of compile), at 0.6x the
# programs drawn and checked.
def test_soundness_generators_reach_every_rule():
    assert not _zero("soundness", 900, 7)


def test_determinism_generators_reach_every_rule():
    assert not _zero("determinism", 500, 7)


def test_compile_generators_reach_every_typing_rule_and_lowering_path():
    target = BundlTarget()
    counts: collections.Counter[str] = collections.Counter()
    for program in draw(target.strategy("compile"), 300, 7):
        counts.update(lowering_paths(program.program))
        counts.update(typing_rules(program.program))
    assert [p for p in PATHS if counts[p] == 0] == []
    assert [r for r in TYPING_RULES if counts[r] == 0] == []


@pytest.mark.slow
def test_compile_generators_reach_every_rule():
    assert not _zero("compile", 1000, 11)


def test_coverage_after_a_check_reuses_the_propertys_own_run(monkeypatch):
    """A campaign asks for coverage of the program it just checked: the semantic rules
    come from the property's own run, not a second interpreter run."""
    from gpusem.fuzz.bundl import coverage as cov

    target = BundlTarget()
    prog = parse_program((EXAMPLES / "alloc_global_per_unit.bundl").read_text())
    assert target.check(prog, "soundness").status == "pass"
    monkeypatch.setattr(cov, "semantic_rules", lambda *a: (_ for _ in ()).throw(
        AssertionError("ran the program again")))
    got = target.coverage(prog, "soundness")
    assert {"S-Alloc-Global", "S-Lower", "E-Partition-Id", "T-Alloc"} <= got
