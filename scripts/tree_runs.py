"""What the scripts that compare source trees in one command share (profile_stages,
progsize, progsize_power, campaign_standin, ...): a tree's child process environment,
the tree's commit, running every seed on every tree, and the result written.

A script imports it as a sibling (running a script puts its folder first on the
path; tests/script_module.load_script does the same)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable


def tree_env(tree: str, drop: Iterable[str] = ()) -> dict[str, str]:
    """This process's environment with `tree`'s src/ first on PYTHONPATH, then what
    PYTHONPATH held (on a GPU machine, the carried wheels: without them a tree's child
    died at import), less the variables in `drop`."""
    path = [os.path.join(os.path.abspath(tree), "src"), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)))
    for name in drop:
        env.pop(name, None)
    return env


def tree_commit(tree: str) -> str:
    """The short commit of `tree`: the first word of its COMMIT file (a tree made by
    `git archive`, as .base/ for a GPU machine: inside a checkout, git would name the
    checkout's HEAD instead), else its git HEAD, else "?"."""
    try:
        with open(os.path.join(tree, "COMMIT")) as f:
            return f.read().split()[0]
    except (OSError, IndexError):
        pass
    done = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def runs_over_trees(trees: list[str], seeds: Iterable[int], jobs: int,
                    in_tree: Callable[[str, int], dict],
                    here: Callable[[int], dict]) -> dict[str, list[dict]]:
    """Each seed's run on each tree ("" is this process: `here`), the trees in turns,
    or with `jobs` > 1 every (tree, seed) at once (a shared machine, where turns would
    meet different loads)."""
    seeds = list(seeds)
    runs: dict[str, list[dict]] = {t: [] for t in trees}
    if jobs > 1 and all(trees):
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(jobs) as pool:
            done = {(t, s): pool.submit(in_tree, t, s) for s in seeds for t in trees}
        for (tree, _), future in done.items():
            runs[tree].append(future.result())
        return runs
    for seed in seeds:
        for tree in trees:
            runs[tree].append(in_tree(tree, seed) if tree else here(seed))
    return runs


def write_result(result: dict, path: str | None) -> None:
    """The result printed as JSON, and written to `path` (its folder made) if given."""
    text = json.dumps(result, indent=1)
    print(text)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")


def child_json(tree: str, code: str, *args: str) -> dict:
    """`python -c code args` in `tree` (its src/ first on the path): the JSON object
    of its last line of output, or {"error": its last line of errors}."""
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=tree,
                          env=tree_env(tree), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])
