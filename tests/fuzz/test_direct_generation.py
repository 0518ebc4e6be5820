"""The direct generation mode (fuzz/direct.py, issue 31.3): each program of a round
from a ConjectureData of its own, deterministic from the round's seed, its choice
sequence kept so that `shrink_from` replays and shrinks exactly that example; the
mode is a campaign setting, recorded with its seed."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from gpusem.calculus.errors import BadInput
from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.campaign import Campaign, round_seed
from gpusem.fuzz.direct import DIRECT, ENGINE, GENERATIONS, max_candidates
from gpusem.fuzz.hunt import generate_round, shrink_from
from hypothesis import strategies as st

import tests.fuzz.toys  # noqa: F401 - registers the toy targets

LISTS = st.lists(st.integers(0, 1000), max_size=8)


def _values(drawn) -> list:
    return [(d.program, d.choices) for d in drawn]


def test_a_direct_round_depends_on_its_seed_alone() -> None:
    a = generate_round(LISTS, 11, 40, generation=DIRECT)
    assert len(a) == 40 and all(d.choices is not None for d in a)
    assert _values(a) == _values(generate_round(LISTS, 11, 40, generation=DIRECT))
    assert _values(a) != _values(generate_round(LISTS, 12, 40, generation=DIRECT))
    # and it is not the engine's round of the same seed
    assert _values(a) != _values(generate_round(LISTS, 11, 40, generation=ENGINE))


def test_a_cut_direct_round_holds_the_first_programs_of_the_whole_one() -> None:
    whole = generate_round(LISTS, 3, 30, generation=DIRECT)
    asked = [0]

    def stop() -> bool:
        asked[0] += 1
        return asked[0] > 12

    cut = generate_round(LISTS, 3, 30, stop, generation=DIRECT)
    assert len(cut) == 12 and _values(cut) == _values(whole[:12])


@pytest.mark.parametrize("generation", [DIRECT, ENGINE])
def test_stop_is_asked_once_a_program_where_candidates_are_invalid(generation) -> None:
    """A caller may count stop()'s calls as programs (--max-programs: the campaign's
    _generation_stop): invalid candidates and repeats are not asked about."""
    odd = st.integers(0, 10**6).filter(lambda x: x % 2 == 1)
    whole = generate_round(odd, 1, 30, generation=generation)
    asked = [0]

    def stop() -> bool:
        asked[0] += 1
        return asked[0] > 12

    cut = generate_round(odd, 1, 30, stop, generation=generation)
    assert len(cut) == 12 and _values(cut) == _values(whole[:12])
    if generation == DIRECT:  # hypothesis's engine replays the example that stopped it
        assert asked[0] == 13


def test_a_round_has_no_choice_sequence_twice_and_a_small_strategy_runs_dry() -> None:
    drawn = generate_round(st.integers(0, 9), 5, 30, generation=DIRECT)
    assert sorted(d.program for d in drawn) == list(range(10))  # ten, each once
    big = generate_round(LISTS, 5, 100, generation=DIRECT)
    assert len({d.choices for d in big}) == 100


def test_invalid_candidates_are_skipped_as_hypothesis_skips_them() -> None:
    odd = st.integers(0, 10**6).filter(lambda x: x % 2 == 1)
    drawn = generate_round(odd, 1, 50, generation=DIRECT)
    assert len(drawn) == 50 and all(d.program % 2 == 1 for d in drawn)
    never = st.integers(0, 9).filter(lambda x: False)
    assert generate_round(never, 1, 5, generation=DIRECT) == []  # gives up, short
    assert max_candidates(5) == 100


def test_shrink_from_replays_a_direct_example_and_shrinks_it() -> None:
    """The finding's first replay is the very program drawn, then hypothesis shrinks
    it as it does an engine-drawn one."""
    drawn = generate_round(LISTS, 21, 60, generation=DIRECT)
    i, example = next((i, d) for i, d in enumerate(drawn) if sum(d.program) > 1500)
    tried: list[list[int]] = []

    def fails(program: list[int]) -> bool:
        tried.append(list(program))
        return sum(program) > 1500

    smallest = shrink_from(LISTS, round_seed(0, 0), example, i, 60, fails,
                           lambda: False)
    assert tried[0] == example.program
    assert sum(smallest) > 1500 and len(smallest) == 2 and smallest != example.program


def test_a_bundl_direct_example_replays_as_drawn() -> None:
    from gpusem.calculus.bundl.printer import print_program
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget

    strategy = BundlTarget().strategy("compile")
    drawn = generate_round(strategy, round_seed(4, 0), 8, generation=DIRECT)
    for i in (0, 7):
        seen: list[str] = []

        def fails(program, seen=seen) -> bool:
            seen.append(print_program(as_generated(program).program))
            return False

        shrink_from(strategy, round_seed(4, 0), drawn[i], i, 8, fails,
                    lambda seen=seen: len(seen) >= 1)
        assert seen[0] == print_program(as_generated(drawn[i].program).program)


ROUND = """
import hashlib
from gpusem.calculus.bundl.printer import print_program
from gpusem.fuzz.bundl.generated import as_generated
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.fuzz.campaign import round_seed
from gpusem.fuzz.hunt import generate_round

def digest(r):
    drawn = generate_round(BundlTarget().strategy("compile"), round_seed(2, r), 20,
                           generation="direct")
    text = "".join(print_program(as_generated(d.program).program) + repr(d.choices)
                   for d in drawn)
    return hashlib.sha256(text.encode()).hexdigest()
"""


def test_a_direct_round_is_the_same_fresh_and_after_checking_another() -> None:
    """As tests/fuzz/test_reproducible.py for the engine mode: a fresh process and
    this one, after a round was batch-checked (more local modules imported), draw
    the same direct round."""
    fresh = subprocess.run([sys.executable, "-c", ROUND + "print(digest(1))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    from gpusem.fuzz.bundl.target import BundlTarget

    target = BundlTarget()
    round0 = generate_round(target.strategy("compile"), round_seed(2, 0), 20,
                            generation=DIRECT)
    assert target.prefetch([d.program for d in round0], "compile")
    scope: dict = {}
    exec(ROUND, scope)  # noqa: S102 - the same code, in this process
    assert scope["digest"](1) == fresh and len(fresh) == 64


def test_an_unknown_generation_is_refused() -> None:
    from gpusem.fuzz.driver import CampaignSpec, resolved

    assert set(GENERATIONS) == {DIRECT, ENGINE}
    with pytest.raises(ValueError, match="unknown generation: fast"):
        generate_round(LISTS, 1, 3, generation="fast")
    with pytest.raises(BadInput, match="unknown generation"):
        resolved(CampaignSpec(target="toys", generation="fast"))


def _campaign(out, generation: str, **kw):
    args = {"target_name": "toys", "budget_s": 60, "seed": 5, "out_dir": str(out),
            "max_programs": 200, "round_size": 50, "generation": generation} | kw
    return Campaign(**args).run()


def test_a_direct_campaign_finds_shrinks_and_records_its_mode(tmp_path) -> None:
    s = _campaign(tmp_path, DIRECT)
    assert s.programs == 200
    (f,) = s.findings
    assert f.signature == "wrong:big7" and f.shrunk and f.size == 2
    (b,) = list_bundles(tmp_path)
    assert b.meta["generation"] == DIRECT and b.meta["seed"] == 5
    engine = _campaign(tmp_path / "engine", ENGINE)
    (b,) = list_bundles(tmp_path / "engine")
    assert b.meta["generation"] == ENGINE and engine.findings[0].size == 2


def test_the_manifest_records_the_mode_and_resume_keeps_it(tmp_path) -> None:
    from gpusem.fuzz import manifest
    from gpusem.fuzz.driver import CampaignSpec, resolved, run

    spec = CampaignSpec(target="toys", budget_s=60, seed=3, out_dir=str(tmp_path),
                        max_programs=60, round_size=20, generation=DIRECT)
    first = run(spec)
    assert manifest.read_campaign(tmp_path)["generation"] == DIRECT
    assert first.report.campaign["generation"] == DIRECT
    # a resume asked in the other mode continues in the campaign's own
    again = resolved(replace(spec, resume=True, generation=ENGINE))
    assert again.generation == DIRECT
    # a campaign recorded before the modes drew its rounds the engine's way
    path = tmp_path / manifest.FOLDER / "campaign.json"
    rec = json.loads(path.read_text())
    del rec["generation"]
    path.write_text(json.dumps(rec))
    assert resolved(replace(spec, resume=True)).generation == ENGINE


def test_the_cli_takes_the_mode(tmp_path) -> None:
    """`gpusem gen --generation` and `gpusem fuzz --generation`: each mode its own
    programs, a mode that is none exits 2, the report records the mode."""
    from click.testing import CliRunner
    from gpusem.cli.main import cli

    def gen(mode: str, out) -> list[str]:
        res = CliRunner().invoke(cli, ["gen", "-n", "6", "--seed", "2", "--generation",
                                       mode, str(out)])
        assert res.exit_code == 0, res.output
        return [p.read_text() for p in sorted(out.glob("*.bundl"))]

    direct = gen(DIRECT, tmp_path / "d")
    assert direct == gen(DIRECT, tmp_path / "d2") and len(direct) == 6
    assert direct != gen(ENGINE, tmp_path / "e")
    res = CliRunner().invoke(cli, ["gen", "--generation", "fast", str(tmp_path / "x")])
    assert isinstance(res.exception, BadInput)
    report = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["fuzz", "--target", "toys", "--generation", DIRECT,
                                   "--max-programs", "40", "--round-size", "20",
                                   "--budget", "60s", "--out", str(tmp_path / "out"),
                                   "--json", str(report)])
    assert res.exit_code == 1, res.output  # the toy's finding
    assert json.loads(report.read_text())["campaign"]["generation"] == DIRECT
    res = CliRunner().invoke(cli, ["fuzz", "--target", "toys", "--generation", "fast"])
    assert res.exit_code == 2
