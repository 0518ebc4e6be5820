"""The pytest plugin (issue 18), from a separate test project in a temporary folder,
as a compiler team would use it: its own target (registered in its conftest), the
`gpusem_campaign` fixture and the `gpusem` marker; a finding fails the test with the
bundle's path, a clean target passes. Run with `pytest` in a subprocess, the plugin
loaded through its `pytest11` entry point (not by this test)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

CONFTEST = '''
import json
from hypothesis import strategies as st
from gpusem.fuzz.targets import CheckResult, Target, register_target


class MyCC(Target):
    """A "compiler" that gets sums of lists holding a 7 wrong once they reach 50."""

    name = "mycc"
    properties = ("compile",)

    def __init__(self, backend="cpu", buggy=True):
        super().__init__(backend)
        self.buggy = buggy

    def strategy(self, prop):
        return st.lists(st.integers(0, 60), max_size=10)

    def size(self, program):
        return len(program)

    def check(self, program, prop="compile"):
        xs = list(program)
        if self.buggy and 7 in xs and sum(xs) >= 50:
            return CheckResult("finding", "wrong:sum", "wrong", "sum off by one",
                               {"program.json": json.dumps(xs)}, len(xs))
        return CheckResult("pass")

    def replay(self, files, meta):
        return self.check(json.loads(files["program.json"]), meta["property"])


register_target("mycc", MyCC)
register_target("mycc-fixed", lambda backend="cpu": MyCC(backend, buggy=False))


class Unrunnable(MyCC):
    """Nothing it compiles runs here: every program is skipped."""

    def check(self, program, prop="compile"):
        return CheckResult("skip", detail="needs a GPU")


register_target("mycc-unrunnable", Unrunnable)
'''

TESTS = '''
import pytest


def test_fixed_compiler_is_clean(gpusem_campaign):
    result = gpusem_campaign("mycc-fixed", max_programs=100, round_size=50)
    assert result.summary.programs == 100


def test_buggy_compiler(gpusem_campaign):
    gpusem_campaign("mycc", max_programs=200, round_size=50)


@pytest.mark.gpusem(target="mycc", max_programs=200, round_size=50)
def test_buggy_compiler_by_marker(gpusem_campaign):
    gpusem_campaign()


def test_nothing_runs_here(gpusem_campaign):
    gpusem_campaign("mycc-unrunnable", max_programs=20, round_size=10)
'''


def test_the_plugin_from_a_separate_project(tmp_path) -> None:
    project = tmp_path / "team"
    project.mkdir()
    (project / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (project / "test_mycc.py").write_text(textwrap.dedent(TESTS))
    out = tmp_path / "bundles"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN",
         f"--gpusem-out={out}", "--rootdir", str(project), str(project)],
        cwd=project, env=env, capture_output=True, text=True, timeout=600)
    text = proc.stdout + proc.stderr
    # three tests fail: the buggy compiler's two, and the campaign that compared no
    # program (issue 32.1: not a silent pass)
    assert proc.returncode == 1, text
    assert "1 passed" in text and "3 failed" in text, text
    assert text.count("gpusem: nothing checked against mycc-unrunnable "
                      "(exit code 4): 20 programs, none compared") == 1, text
    # -rN: no short summary, whose width (COLUMNS) decided whether the message
    # showed a second time per test (CI printed it 4 times, a narrow terminal 2)
    assert text.count("gpusem: 1 finding(s) against mycc") == 2, text
    assert "replay: gpusem replay" in text
    bundles = sorted(out.glob("*/mycc-wrong-*/bundle.json"))
    assert len(bundles) == 2  # one per failing test, under --gpusem-out
    for b in bundles:
        assert str(b.parent) in text
    assert (out / "test_buggy_compiler" / "summary.json").is_file()
    assert Path(bundles[0].parent / "program.json").read_text() in ("[7, 43]",
                                                                    "[43, 7]")
