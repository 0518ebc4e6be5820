"""Install that fits the job (issue 18): the core install has no torch, triton or
appyc; the extras exist; the README's first two commands are what .ci/run runs; and
the main job (a bundl campaign) never imports torch or triton."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
META = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
HEAVY = ("torch", "triton", "appyc", "cupy")


def test_the_core_install_is_light_and_the_extras_exist() -> None:
    core = " ".join(META["dependencies"])
    assert not [h for h in HEAVY if h in core]
    extras = META["optional-dependencies"]
    assert {"appy", "gpu", "exo", "dev", "nvrtc"} <= set(extras)
    assert len(extras["nvrtc"]) == 3 and all("==" in d for d in extras["nvrtc"])
    assert any(d.startswith("torch") for d in extras["appy"])
    assert any(d.startswith("cupy") for d in extras["gpu"])
    pinned = {d.split("==")[0] for d in extras["dev"] if "==" in d}
    assert {"mkdocs", "jsonschema", "mypy", "import-linter"} <= pinned
    assert META["entry-points"]["pytest11"]["gpusem"] == "gpusem.pytest_plugin"


def test_the_readme_commands_are_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    first, second = re.findall(r"```\n(.*?)\n```", readme, re.S)[:2]
    ci = (ROOT / ".ci/run").read_text()
    main_install = re.search(r"\.venv/bin/pip install -e (\S+)", first)
    test_install = re.search(r"\.venv/bin/pip install -e (\S+)", second)
    assert main_install and main_install[1] == "."  # the main job: the core install
    assert test_install and "dev" in test_install[1] and "nvrtc" in test_install[1]
    for cmd in ("python3 -m venv .venv", f".venv/bin/pip install -e {main_install[1]}",
                f".venv/bin/pip install -e {test_install[1]}",
                ".venv/bin/python -m pytest -q"):
        assert cmd in first + second and cmd in ci, cmd
    assert "gpusem fuzz --target bundl" in first
    # the test command itself, word for word: two workers, then the benchmarks alone
    test_command = second.split(" && ", 1)[1]
    assert test_command in ci.splitlines(), test_command
    assert "-n 2" in test_command and '-m "benchmark' in test_command


def test_the_main_job_does_not_import_torch_or_triton(tmp_path) -> None:
    code = ("import sys; from gpusem import api; "
            f"r = api.fuzz('bundl', max_programs=5, round_size=5, out_dir={str(tmp_path)!r}); "
            "heavy = [m for m in ('torch', 'triton', 'appy', 'cupy') if m in sys.modules]; "
            "print(r.summary.programs, heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "5 []"
