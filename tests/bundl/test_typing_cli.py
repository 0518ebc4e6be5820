"""`gpusem check FILE [--rules fixed|paper] [--json]`: exit 0 / 1 / 2 and the output
formats (DESIGN.md, "Command line")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from gpusem.cli.main import main

OK = """machine blocks = 2, threads = 4;
global out : int[8];
fn put(o : Global int[] @ thread[1], v : int @ thread[1]) at thread[1] uses 0 {
  o[0] = v;
}
main {
  lower out into ob { destruct { partition ob into o1 by 2 { group 2 {
    alloc s : int[4] in Shared;
    lower o1 into ot { destruct { partition ot into o by 4 { group 4 {
      put(o, partition_id);
    } } } }
  } } } }
}
"""

# Shared allocation at thread[1]: ill-typed under fixed, accepted as printed (paper).
BAD = """machine blocks = 1, threads = 4;
main {
  destruct { destruct {
    group 4 { alloc s : int[4] in Shared; let v : int @ thread[1] = s[0]; }
  } }
}
"""

TWO_ERRORS = """main {
  let a : int @ grid[1] = 1.0;
  if a { skip; }
}
"""


def run(argv: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["gpusem", *argv])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code or 0
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in {"ok": OK, "bad": BAD, "two": TWO_ERRORS}.items():
        paths[name] = tmp_path / f"{name}.bundl"
        paths[name].write_text(text)
    paths["syntax"] = tmp_path / "syntax.bundl"
    paths["syntax"].write_text("main { let x = ; }")
    return paths


def test_well_typed_exit_0_with_summary(files, monkeypatch, capsys):
    code, out, _ = run(["check", str(files["ok"])], monkeypatch, capsys)
    assert code == 0
    assert out.startswith("ok: well-typed at grid[1]")
    assert "main needs 16 bytes" in out and "put at thread[1]" in out


def test_ill_typed_exit_1_one_line_per_error(files, monkeypatch, capsys):
    code, out, err = run(["check", str(files["bad"])], monkeypatch, capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{files['bad']}:4:")
    assert "[T-Alloc-Shared] perspective mismatch:" in lines[0]


def test_rules_paper_accepts_the_shared_alloc_hole(files, monkeypatch, capsys):
    code, out, _ = run(["check", str(files["bad"]), "--rules", "paper"],
                       monkeypatch, capsys)
    assert code == 0 and "rules paper" in out


def test_several_errors_are_all_reported(files, monkeypatch, capsys):
    code, _, err = run(["check", str(files["two"])], monkeypatch, capsys)
    assert code == 1
    assert [line.split("] ")[0].split("[")[1] for line in err.strip().splitlines()] \
        == ["T-Decl", "T-If"]


def test_json_output(files, monkeypatch, capsys):
    code, out, _ = run(["check", str(files["two"]), "--json"], monkeypatch, capsys)
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    assert [(e["rule"], e["prefix"], e["line"]) for e in report["errors"]] == [
        ("T-Decl", "type mismatch", 2), ("T-If", "type mismatch", 3)]
    code, out, _ = run(["check", str(files["ok"]), "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["uses"] == {"put": 0, "main": 16}


@pytest.mark.parametrize("case", ["syntax", "missing", "suffix"])
def test_bad_input_exit_2_one_line(case, files, tmp_path, monkeypatch, capsys):
    path = {"syntax": files["syntax"], "missing": tmp_path / "nope.bundl",
            "suffix": tmp_path / "x.txt"}[case]
    code, _, err = run(["check", str(path)], monkeypatch, capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_gpuir_files_go_to_the_gpuir_analysis(tmp_path, monkeypatch, capsys):
    # Whether or not the GPU IR analysis has landed, a missing file is bad input.
    code, _, err = run(["check", str(tmp_path / "k.gpuir")], monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err


def test_check_help_runs_as_a_process():
    proc = subprocess.run([sys.executable, "-m", "gpusem.cli.main", "check", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--rules" in proc.stdout


def test_gpuir_errors_are_all_printed(tmp_path, monkeypatch, capsys):
    # The GPU IR analysis is another engineer's; stand in for it to test the branch.
    import types

    from gpusem.calculus.errors import IllTyped
    from gpusem.calculus.span import Span

    def check_file(path, defines):
        assert defines == {"N": 8}
        errs = [IllTyped(f"collective mismatch: e{i}", rule="R",
                         span=Span(path, i, 1, i, 2)) for i in (3, 5)]
        errs[0].all = errs
        raise errs[0]

    fake = types.ModuleType("gpusem.typing_rules.gpuir.frontend")
    fake.check_file = check_file
    monkeypatch.setitem(sys.modules, "gpusem.typing_rules.gpuir.frontend", fake)
    path = tmp_path / "k.gpuir"
    path.write_text("")
    code, _, err = run(["check", str(path), "-D", "N=8"], monkeypatch, capsys)
    assert code == 1
    assert [line.split(": ")[0] for line in err.strip().splitlines()] == [
        f"{path}:3:1", f"{path}:5:1"]


def test_derivation_flag(files, monkeypatch, capsys):
    code, out, _ = run(["check", str(files["ok"]), "--derivation"], monkeypatch, capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "put:" and "main:" in lines
    main = lines[lines.index("main:") + 1:]
    assert main[0].split()[:3] == ["T-Lower", "grid[1]", "m=16"]
    assert any(line.split()[:2] == ["T-Alloc-Shared", "block[1]"] for line in main)
    assert lines[-1].startswith("ok: well-typed")
