"""Run the shipped CI workflow (docs/ci/gpusem-fuzz.yml) on this machine, step by
step, as far as a machine without GitHub can (issue 32.2): the workflow as a user
copies it, not a copy of its commands.

    python scripts/ci_workflow_local.py [--budget 30s] [--fork] [--work DIR]

- `actions/checkout`: the work folder (empty, or --project DIR copied in: your
  package and its gpusem-known/ baseline) is the checkout.
- `actions/setup-python`: a fresh virtual environment made by this interpreter.
  Offline, it sees this interpreter's installed packages (a .pth file), so the
  install step needs no index.
- `run:` steps: run by bash in the work folder, the venv first on PATH, with the
  workflow's `env:`; `${{ github.run_number }}` is 1; the install from
  `git+${GPUSEM_REPO}@${GPUSEM_REF}` installs this checkout instead (`--online`: with
  its dependencies from the index; otherwise `--no-deps`); `--budget` is replaced by
  this script's --budget.
- `if:` conditions are evaluated (always(), success(), hashFiles(), github.event_name,
  the fork test) for a pull request from this repository, or from a fork (--fork).
- `github/codeql-action/upload-sarif`: what it would upload is checked (the file
  exists, is SARIF 2.1.0 JSON); `actions/upload-artifact`: every path exists.

Prints one line per step and exits as the job would: 0 when every step that ran
succeeded, else the exit code of the first that failed (the campaign's: 1 findings,
3 gpusem failed, 4 nothing checked).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "docs" / "ci" / "gpusem-fuzz.yml"
REPOSITORY = "team/compiler"  # the repository the simulated pull request targets
GIT_INSTALL = re.compile(r"""(["']?)gpusem @ git\+\$\{?GPUSEM_REPO\}?@\$\{?GPUSEM_REF\}?\1""")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workflow", type=Path, default=WORKFLOW)
    ap.add_argument("--budget", default="30s", help="replaces the campaign's --budget")
    ap.add_argument("--fork", action="store_true", help="a pull request from a fork")
    ap.add_argument("--project", type=Path, help="your project, copied into the work "
                    "folder as the checkout (default: an empty one)")
    ap.add_argument("--work", type=Path, help="the work folder (default: a temporary "
                    "one, removed at the end)")
    ap.add_argument("--online", action="store_true",
                    help="install gpusem's dependencies from the package index")
    ap.add_argument("--campaign-args", default="", help="appended to the campaign's "
                    "`gpusem fuzz` command (e.g. \"--max-programs 20 --round-size 10\")")
    args = ap.parse_args(argv)
    args.cleanup = []
    flow = yaml.safe_load(args.workflow.read_text())
    work = args.work or Path(tempfile.mkdtemp(prefix="gpusem-ci-"))
    try:
        return run_job(flow, "fuzz", work, args)
    finally:
        for path in args.cleanup + ([] if args.work else [work]):
            shutil.rmtree(path, ignore_errors=True)


def run_job(flow: dict, name: str, work: Path, args: argparse.Namespace) -> int:
    job = flow["jobs"][name]
    env = {str(k): str(v) for k, v in (flow.get("env") or {}).items()}
    env |= {str(k): str(v) for k, v in (job.get("env") or {}).items()}
    github = {"event_name": "pull_request", "repository": REPOSITORY,
              "run_number": "1",
              "event.pull_request.head.repo.full_name":
                  "someone/compiler" if args.fork else REPOSITORY}
    venv = work / ".venv"
    failed = 0
    for i, step in enumerate(job["steps"]):
        title = step.get("name") or step.get("uses") or f"step {i}"
        cond = step.get("if")
        if not condition(cond, failed == 0, github, work):
            print(f"step {title}: skipped (if: {' '.join(str(cond).split())})")
            continue
        code = run_step(step, work, venv, env, github, args)
        print(f"step {title}: exit {code}", flush=True)
        if code and not failed:
            failed = code
    print(f"job {name}: {'failed, exit ' + str(failed) if failed else 'succeeded'}")
    return failed


def run_step(step: dict, work: Path, venv: Path, env: dict[str, str],
             github: dict[str, str], args: argparse.Namespace) -> int:
    uses = str(step.get("uses", ""))
    if uses.startswith("actions/checkout@"):
        work.mkdir(parents=True, exist_ok=True)
        if args.project is not None:
            shutil.copytree(args.project, work, dirs_exist_ok=True)
        return 0
    if uses.startswith("actions/setup-python@"):
        return make_venv(venv, args.online)
    if uses.startswith("github/codeql-action/upload-sarif@"):
        return check_sarif(work / step["with"]["sarif_file"])
    if uses.startswith("actions/upload-artifact@"):
        paths = [p for p in str(step["with"]["path"]).split() if p]
        missing = [p for p in paths if not (work / p).exists()]
        for p in missing:
            print(f"  upload-artifact: no {p}")
        return 1 if missing else 0
    if uses:
        print(f"  {uses}: not simulated")
        return 0
    script = local_script(str(step["run"]), github, args)
    shell_env = dict(os.environ) | env
    shell_env["PATH"] = f"{venv / 'bin'}{os.pathsep}{shell_env.get('PATH', '')}"
    shell_env["VIRTUAL_ENV"] = str(venv)
    shell_env.pop("PYTHONPATH", None)  # the installed gpusem, not a checkout's
    return subprocess.run(["bash", "-e", "-c", script], cwd=work, env=shell_env,
                          check=False).returncode


def local_script(script: str, github: dict[str, str], args: argparse.Namespace) -> str:
    """The step's script as it runs here: expressions filled in, gpusem installed
    from this checkout, the campaign's budget replaced."""
    script = re.sub(r"\$\{\{\s*github\.([\w.]+)\s*\}\}",
                    lambda m: github.get(m[1], ""), script)
    deps = "" if args.online else "--no-deps --no-build-isolation "
    script, n = GIT_INSTALL.subn(lambda m: f"{deps}{source_copy(args)}", script)
    if "git+" in script and not n:
        raise SystemExit("the install step names a repository this script cannot map "
                         "to the checkout: update GIT_INSTALL")
    script = script.replace("python -m pip install --upgrade pip", "true")
    if n:  # say which gpusem the later steps run
        script += ('\npython -c "import gpusem; print(\'  gpusem from\', '
                   'gpusem.__file__)"')
    script = re.sub(r"--budget\s+\S+", f"--budget {args.budget}", script)
    if args.campaign_args:
        script = re.sub(r"--budget \S+", lambda m: f"{m[0]} {args.campaign_args}",
                        script)
    return script


def source_copy(args: argparse.Namespace) -> Path:
    """What `git+REPO@REF` would fetch: this checkout's package (pyproject, README,
    src/), copied, so that building the wheel leaves nothing in the checkout."""
    dest = Path(tempfile.mkdtemp(prefix="gpusem-src-"))
    args.cleanup.append(dest)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "src", dest / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return dest


def make_venv(venv: Path, online: bool) -> int:
    # offline, its pip and setuptools are this interpreter's (3.11's bundled
    # setuptools 65 would shadow them and cannot build a wheel)
    code = subprocess.run([sys.executable, "-m", "venv", str(venv),
                           *(() if online else ("--without-pip",))],
                          check=False).returncode
    if code or online:
        return code
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "_gpusem_ci_offline.pth").write_text("\n".join(sorted(ours)) + "\n")
    return 0


def check_sarif(path: Path) -> int:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        print(f"  upload-sarif: {path.name}: {err}")
        return 1
    ok = doc.get("version") == "2.1.0" and isinstance(doc.get("runs"), list)
    results = sum(len(r.get("results", [])) for r in doc.get("runs", []))
    print(f"  upload-sarif: {path.name}: SARIF {doc.get('version')}, {results} results")
    return 0 if ok else 1


def condition(expr: object, success: bool, github: dict[str, str], work: Path) -> bool:
    """A step's `if:` (GitHub's default: success()), for the expressions the
    workflow uses."""
    if expr is None:
        return success
    text = " ".join(str(expr).split())
    text = re.sub(r"hashFiles\('([^']*)'\)",
                  lambda m: repr("x" if (work / m[1]).exists() else ""), text)
    text = re.sub(r"github\.([\w.]+)", lambda m: repr(github.get(m[1], "")), text)
    text = (text.replace("&&", " and ").replace("||", " or ")
            .replace("always()", "True").replace("success()", repr(success))
            .replace("failure()", repr(not success)))
    if not re.search(r"always\(\)|failure\(\)", str(expr)) and not success:
        return False  # GitHub adds success() unless a status function is named
    return bool(eval(text, {"__builtins__": {}}, {}))


if __name__ == "__main__":
    sys.exit(main())
