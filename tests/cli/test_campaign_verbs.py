"""The verbs for one program and for a campaign's output (issue 18): `gen`, `reduce`
(by property and by interestingness command), `triage`, `compile --standalone`, and
`replay` as `git bisect run` uses it; the API's callback per finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpusem import api
from gpusem.cli.main import cli

import tests.fuzz.toys  # noqa: F401 - registers the toy targets

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_gen_writes_well_typed_programs_deterministically(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert invoke("gen", "--target", "bundl", "-n", "12", "--seed", "3",
                  str(a)).exit_code == 0
    invoke("gen", "--target", "bundl", "-n", "12", "--seed", "3", str(b))
    files = sorted(a.glob("*.bundl"))
    assert len(files) == 12
    assert [f.read_text() for f in files] == [f.read_text() for f in
                                              sorted(b.glob("*.bundl"))]
    nontrivial = 0
    for f in files:
        res = invoke("check", str(f))
        assert res.exit_code == 0, (f.read_text(), res.output)
        nontrivial += api.load(f).main.__class__.__name__ != "Skip"
    assert nontrivial >= 6


def test_gen_refuses_a_folder_that_holds_files(tmp_path) -> None:
    """Issue 32.12: gen overwrote a folder's programs; now exit 2 (one line) unless
    --force, and an empty or new folder is fine."""
    out = tmp_path / "progs"
    out.mkdir()
    assert invoke("gen", "-n", "2", str(out)).exit_code == 0  # empty: fine
    mine = out / "mine.bundl"
    mine.write_text("keep me")
    first = sorted(p.read_text() for p in out.glob("*-*.bundl"))
    res = CliRunner().invoke(cli, ["gen", "-n", "2", "--seed", "9", str(out)])
    # main() prints a BadInput as one line with its exit code, 2
    assert isinstance(res.exception, api.BadInput) and res.exception.exit_code == 2
    assert str(res.exception).startswith(f"{out}: folder not empty")
    assert sorted(p.read_text() for p in out.glob("*-*.bundl")) == first  # untouched
    assert invoke("gen", "-n", "2", "--seed", "9", "--force", str(out)).exit_code == 0
    assert mine.read_text() == "keep me"
    assert sorted(p.read_text() for p in out.glob("*-*.bundl")) != first


BIG = """machine blocks = 1, threads = 4;

global x0 : int[4] = [-3, 6, 7, 8];
global out : int[4];

main {
  let a : int @ grid[1] = x0[1] + 1;
  out[1] = a * 2;
  out[0] = x0[0] / 2;
  out[2] = a + x0[2];
}
"""


def test_reduce_by_property_keeps_the_seeded_bug(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GPUSEM_FAULT", "floor-division")
    f = tmp_path / "big.bundl"
    f.write_text(BIG)
    res = invoke("reduce", str(f), "--property", "compile", "--budget", "60s")
    assert res.exit_code == 0, res.output
    small = (tmp_path / "big.reduced.bundl").read_text()
    assert "/" in small and "a * 2" not in small
    prog = api.load(tmp_path / "big.reduced.bundl")
    assert api.check(prog) == []
    assert "4 -> 1 statements" in res.output or "-> 1 statements" in res.output


def test_reduce_with_an_interestingness_command(tmp_path) -> None:
    f = tmp_path / "big.bundl"
    f.write_text(BIG)
    res = invoke("reduce", str(f), "--command", "grep -q 'x0\\[2\\]' big.bundl",
                 "-o", str(tmp_path / "out.bundl"))
    assert res.exit_code == 0, res.output
    small = (tmp_path / "out.bundl").read_text()
    assert "x0[2]" in small and "/" not in small


def test_reduce_refuses_an_uninteresting_program(tmp_path) -> None:
    f = tmp_path / "big.bundl"
    f.write_text(BIG)
    res = invoke("reduce", str(f), "--command", "false")
    assert res.exit_code != 0 and "not interesting" in str(res.exception)


def test_triage_groups_by_signature(tmp_path) -> None:
    for seed in (1, 2):
        api.fuzz("toys", out_dir=str(tmp_path / f"c{seed}"), seed=seed,
                 max_programs=150, round_size=50)
    res = invoke("triage", str(tmp_path))
    assert res.exit_code == 0, res.output
    rows = [ln for ln in res.output.splitlines() if "wrong:big7" in ln]
    assert len(rows) == 1 and "(+1 more)" in rows[0]  # two campaigns, one bug
    data = json.loads(invoke("triage", "--json", str(tmp_path)).output)
    assert data[0]["signature"] == "wrong:big7" and len(data[0]["bundles"]) == 2
    assert data[0]["sightings"] >= 2


def test_replay_for_git_bisect(tmp_path) -> None:
    """`git bisect run gpusem replay B`: 1 (bad) while it reproduces, 0 once fixed."""
    api.fuzz("toys", out_dir=str(tmp_path), max_programs=100, round_size=50)
    (bundle,) = [p for p in tmp_path.iterdir() if (p / "bundle.json").is_file()]
    assert invoke("replay", str(bundle)).exit_code == 1
    (bundle / "program.json").write_text("[1, 2]")
    assert invoke("replay", str(bundle)).exit_code == 0


@pytest.mark.parametrize("corrupt", [
    lambda b: (b / "bundle.json").write_text("[]"),
    lambda b: (b / "bundle.json").write_text("{}"),
    lambda b: (b / "program.json").unlink(),
    lambda b: (b / "program.json").write_bytes(b"\xff\xfe"),
    lambda b: (b / "bundle.json").write_text(json.dumps(
        json.loads((b / "bundle.json").read_text()) | {"property": "nope"})),
])
def test_a_corrupt_bundle_is_one_line_and_exit_2(tmp_path, corrupt, monkeypatch,
                                                   capsys) -> None:
    from gpusem.cli.main import main

    api.fuzz("toys", out_dir=str(tmp_path), max_programs=100, round_size=50)
    (bundle,) = [p for p in tmp_path.iterdir() if (p / "bundle.json").is_file()]
    corrupt(bundle)
    monkeypatch.setattr("sys.argv", ["gpusem", "replay", str(bundle)])
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_compile_standalone(tmp_path) -> None:
    out = tmp_path / "k.cu"
    res = invoke("compile", str(ROOT / "examples/bundl/map_double.bundl"),
                 "--standalone", "-o", str(out))
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "int main()" in text and '#include "gpusem_rt.cuh"' not in text
    assert "nvcc -arch=sm_90a" in res.output


def test_compile_standalone_gpuir(tmp_path) -> None:
    out = tmp_path / "k.cu"
    res = invoke("compile", str(ROOT / "examples/gpuir/fence_broadcast.gpuir"),
                 "--standalone", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert "int main(" in out.read_text()
    assert f"wrote {out}: build with nvcc" in res.output
    res = invoke("compile", str(ROOT / "examples/gpuir/fence_broadcast.gpuir"), "--standalone")
    assert res.exit_code == 0 and res.output == out.read_text()


def test_the_api_calls_back_once_per_finding(tmp_path) -> None:
    seen = []
    result = api.fuzz("toy-sometimes", out_dir=str(tmp_path), max_programs=200,
                      round_size=50, on_finding=seen.append)
    assert sorted(f.signature for f in seen) == sorted(
        f.signature for f in result.summary.findings)
    assert all(f.shrunk or f.kind == "internal" for f in seen)
    assert result.exit_code == 3
