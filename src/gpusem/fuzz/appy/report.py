"""The APPy findings tables:
`python -m gpusem.fuzz.appy.report --campaign RESULT.json BUNDLES OUT.md` (issue 17: one
row per cause of a campaign's statistics, with its smallest program, the appyc version
and what plain NumPy computes);
`python -m gpusem.fuzz.appy.report BUNDLES OUT [--sm90] [--minimise] [--backend B]`;
`... --resign BUNDLES NEW_BUNDLES --backend B` re-signs old bundles by a fresh replay.

Reads every bundle under BUNDLES, keeps the smallest program per signature, replays each
on `--backend` (default: the backend that found it; `cuda` on the H100 answers "does a
CPU finding reproduce on the GPU?"), optionally compiles the program's kernels
for sm_90 with ptxas (does a `triton` error also happen in the real compiler, not only in
Triton's interpreter?), copies the bundles under OUT/bundles and writes OUT/findings.md
and OUT/findings.json.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from gpusem.fuzz.appy.files import read_inputs
from gpusem.fuzz.appy.target import AppyTarget
from gpusem.fuzz.bundle import Bundle, list_bundles, read_bundle


def minimise_bundle(target: AppyTarget, b) -> bool:
    """Re-shrink a bundle's program with the target's `drop_statement` pass; rewrite
    the bundle in place when that finds a smaller program with the same signature."""
    from gpusem.calculus.appy.parser import parse_program
    from gpusem.fuzz.appy.strategies import AppyProgram
    from gpusem.fuzz.bundle import write_bundle

    arrays, scalars = read_inputs(b.files["inputs.json"])
    fn = parse_program(b.files["program.py"])
    prog = AppyProgram(fn, tuple((k, str(v.dtype), v.shape) for k, v in arrays.items()),
                       tuple(scalars.items()), fixed=arrays)
    res = target.check(prog, b.meta["property"])
    if res.status != "finding" or res.signature != b.signature:
        return False
    small = target.minimise(prog, res, b.meta["property"])
    if small.size >= b.meta.get("size", 10**9):
        return False
    meta = dict(b.meta, size=small.size, detail=small.detail)
    write_bundle(b.path.parent, meta, small.files, replace=True)
    return True


def resign(bundles_dir: str, out_dir: str, backend: str) -> dict[str, int]:
    """Replay every bundle under `bundles_dir` on `backend` and write the ones that
    still fail to `out_dir` under the signature the current target gives them (the
    campaign's signature is kept as `signature_at_campaign`). For bundles made before a
    change of the signature function: their classes are then counted the current way."""
    from gpusem.fuzz.bundle import write_bundle

    counts = {"bundles": 0, "still_failing": 0}
    target = AppyTarget(backend)
    try:
        for b in list_bundles(bundles_dir):
            if b.target != "appy":
                continue
            counts["bundles"] += 1
            res = target.replay(b.files, b.meta)
            if res.status != "finding":
                continue
            counts["still_failing"] += 1
            meta = dict(b.meta, signature=res.signature, kind=res.kind or b.meta["kind"],
                        detail=res.detail or b.meta.get("detail", ""),
                        signature_at_campaign=b.signature)
            write_bundle(out_dir, meta, dict(b.files, **res.files))
    finally:
        target.close()
    return counts


def build(bundles_dir: str, out_dir: str, sm90: bool = False,
          backend: str | None = None, h100: dict[str, str] | None = None,
          minimise: bool = False) -> list[dict]:
    out = Path(out_dir)
    (out / "bundles").mkdir(parents=True, exist_ok=True)
    best: dict[str, Bundle] = {}
    for b in list_bundles(bundles_dir):
        if b.target != "appy":
            continue
        cur = best.get(b.signature)
        if cur is None or b.meta.get("size", 99) < cur.meta.get("size", 99):
            best[b.signature] = b
    targets: dict[str, AppyTarget] = {}
    rows = []
    try:
        for sig, b in sorted(best.items()):
            on = backend or b.meta["backend"]
            target = targets.setdefault(on, AppyTarget(on))
            if minimise and minimise_bundle(target, b):
                b = read_bundle(b.path)
            res = target.replay(b.files, b.meta)
            row = {"signature": sig, "kind": b.meta["kind"], "detail": b.meta["detail"],
                   "statements": b.meta.get("size"), "shrunk": b.meta.get("shrunk"),
                   "found_on": b.meta["backend"], "replayed_on": on,
                   "reproduces": res.status == "finding" and res.signature == sig,
                   "now": res.signature if res.status == "finding" else res.status,
                   "appyc": b.meta.get("versions", {}).get("appyc", "?"),
                   "bundle": f"bundles/{b.path.name}",
                   "h100": (h100 or {}).get(sig, "not run"),
                   "program": b.files.get("program.py", "")}
            if sm90:
                arrays, scalars = read_inputs(b.files["inputs.json"])
                r = target.confirm_sm90(b.files["program.py"], arrays, scalars)
                row["sm90_compile"] = ("ok" if not r["errors"] else
                                       "fails: " + r["errors"][0][:120])
            dest = out / "bundles" / b.path.name
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(b.path, dest)
            rows.append(row)
    finally:
        for t in targets.values():
            t.close()
    (out / "findings.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "findings.md").write_text(markdown(rows))
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["# appyc findings (gpusem APPy target)", "",
             ("One row per finding class (signature); the smallest program found; "
             "`reproduces` is a fresh replay (`gpusem replay <folder>/bundles/<bundle>`)."),
             "", ("| # | kind | signature | stmts | reproduces | sm_90 compile | H100 | appyc | "
             "bundle |"), "|---|---|---|---|---|---|---|---|---|"]
    for k, r in enumerate(rows, 1):
        sig = r["signature"].replace("|", "\\|")
        lines.append(f"| {k} | {r['kind']} | `{sig}` | {r['statements']} | "
                     f"{('yes' if r['reproduces'] else 'no') + ' (' + r['replayed_on'] + ')'} | "
                     f"{r.get('sm90_compile', 'not run')} | {r['h100']} | {r['appyc']} | "
                     f"[{r['bundle'].split('/')[-1]}]({r['bundle']}) |")
    lines += ["", "## Smallest programs", ""]
    for k, r in enumerate(rows, 1):
        lines += [f"### {k}. {r['kind']}: {r['detail'][:200]}", "", "```python",
                  r["program"].rstrip(), "```", ""]
    return "\n".join(lines) + "\n"


def _main_campaign(argv: list[str]) -> None:
    """`--campaign RESULT.json BUNDLES OUT.md`: the findings table of a campaign."""
    result_path, bundles, out = argv[argv.index("--campaign") + 1:][:3]
    campaign_findings(json.loads(Path(result_path).read_text()), bundles, out)


def listings(examples_dir: str, out_file: str, backend: str = "cpu") -> list[dict]:
    """The paper's listings (examples/appy) through appyc: outcome per listing on
    `backend`, and whether every kernel compiles for sm_90 (`--listings` mode)."""
    import re

    from gpusem.calculus.appy.parser import parse_program
    from gpusem.fuzz.appy.inputs import make_inputs

    target = AppyTarget(backend)
    rows = []
    try:
        for path in sorted(Path(examples_dir).glob("*.py")):
            text = path.read_text()
            spec = re.search(r"^# inputs: (.*)$", text, re.MULTILINE)
            arrays, scalars = make_inputs(spec[1] if spec else "")
            fn = parse_program(text, path.name)
            body = text[text.index("def "):] if "def " in text else text
            res = target.check_source(body, arrays, scalars)
            sm = target.confirm_sm90(body, arrays, scalars)
            rows.append({"listing": path.name, "function": fn.name,
                         "outcome": "agree" if res.status == "pass" else (
                             res.kind or res.status),
                         "detail": res.detail[:160],
                         "sm90": "ok" if not sm["errors"] else sm["errors"][0][:160]})
    finally:
        target.close()
    lines = ["# The paper's listings through appyc", "",
             f"Backend `{backend}`; inputs from each file's `# inputs:` header.", "",
             "| listing | outcome | detail | sm_90 compile |", "|---|---|---|---|"]
    lines += [f"| {r['listing']} | {r['outcome']} | {r['detail'].replace('|', '/')} | "
              f"{r['sm90'].replace('|', '/')} |" for r in rows]
    Path(out_file).write_text("\n".join(lines) + "\n")
    return rows


def campaign_findings(result: dict, bundles_dir: str | None, out_md: str) -> list[dict]:
    """The findings table of one campaign (issue 17): every distinct cause of the
    campaign's statistics (`stats.merge`), its smallest program (the shrunk bundle
    where the campaign wrote one, else the smallest failing kernel it saw), the appyc
    version, and what plain NumPy (the sequential reading) computes."""
    bundles: dict[str, list[Bundle]] = {}
    if bundles_dir and Path(bundles_dir).is_dir():
        for b in list_bundles(bundles_dir):
            if b.target == "appy":
                bundles.setdefault(b.signature, []).append(b)
    appyc = versions_now().get("appyc", "?")
    rows = []
    for sig, c in result["cause_table"].items():
        rows.append(_finding_row(sig, c, own_bundle(bundles.get(sig, []), c), appyc))
    lines = ["# APPy campaign findings (gpusem APPy target)", "",
             f"{result['programs']} programs, compared_fraction "
             f"{result['compared_fraction']}, {result['causes']} distinct causes "
             f"(`causes.py`: a catalogued cause, an error text, or a wrong result's "
             "constructs). `numpy`: what plain NumPy (the sequential reading) computes "
             "where appyc's code differs.", "",
             "| # | signature | kind | blame | programs | first minute | appyc | "
             "plain NumPy | bundle |", "|---|---|---|---|---|---|---|---|---|"]
    for k, r in enumerate(rows, 1):
        cell = r["numpy"].replace("|", "/").replace("\n", " ")[:140]
        lines.append(f"| {k} | `{r['signature'][:90].replace('|', '/')}` | {r['kind']} | "
                     f"{r['blame']} | {r['count']} | {r['first_minute']} | {r['appyc']} | "
                     f"{cell} | {r['bundle']} |")
    lines += ["", "## Smallest programs", ""]
    for k, r in enumerate(rows, 1):
        lines += [f"### {k}. `{r['signature'][:120]}`", "",
                  (r["cause"] + "\n\n") if r["cause"] else "",
                  f"{r['kind']}: {r['detail'][:300]}", "", "```python",
                  r["program"].rstrip(), "```", ""]
    Path(out_md).write_text("\n".join(lines) + "\n")
    return rows


def own_bundle(bundles: list[Bundle], c: dict) -> Bundle | None:
    """The bundle of a cause whose outcome is the cause table's (same kind): one
    signature can have a bundle per kind (appy-wrong-H and appy-triton-H), and the
    section must not print one outcome above another's program (issue 24)."""
    same = [b for b in bundles if b.meta.get("kind") == c["kind"]]
    same.sort(key=lambda b: (b.meta.get("detail") != c["detail"],
                             b.meta.get("size", 10**9)))
    return same[0] if same else None


def _finding_row(sig: str, c: dict, b: Bundle | None, appyc: str) -> dict:
    """One cause's row and section: its program and the outcome printed above it
    come from one place, the bundle (when it is the smaller program) or the cause
    table's smallest failing kernel, never one from each."""
    row = {"signature": sig, "kind": c["kind"], "blame": c.get("blame", ""),
           "cause": c.get("cause", ""), "count": c["count"],
           "first_minute": c.get("first_seen_minute"), "appyc": appyc,
           "bundle": "", "numpy": f"see detail: {c['detail'][:160]}",
           "detail": c["detail"], "program": c["program"]}
    if b is None:
        return row
    row["bundle"] = b.path.name
    row["appyc"] = b.meta.get("versions", {}).get("appyc", appyc)
    program = b.files.get("program.py", "")
    if program and len(program) <= len(c["program"]):
        row.update(program=program, kind=b.meta["kind"],
                   detail=b.meta.get("detail", c["detail"]), numpy=_numpy_says(b))
    return row


def _numpy_says(b) -> str:
    """What the sequential reading computes, from a bundle's files."""
    try:
        actual = json.loads(b.files.get("actual.json", "{}"))
        if actual.get("outcome") == "wrong":
            return f"{actual['mismatch']} (expected = NumPy)"
        expected = json.loads(b.files.get("expected.json", "{}"))
        parts = [f"{k} = {v['data'] if len(str(v['data'])) < 60 else str(v['data'])[:60]}"
                 for k, v in list(expected.items())[:2]]
        return "NumPy runs it: " + "; ".join(parts)
    except (ValueError, KeyError, TypeError):
        return "?"


def versions_now() -> dict[str, str]:
    from gpusem.compiler.appy_triton.driver import versions

    return versions()


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--campaign" in argv:
        _main_campaign(argv)
        sys.exit(0)
    be = None
    if "--backend" in argv:
        k = argv.index("--backend")
        be = argv[k + 1]
        del argv[k:k + 2]
    args = [a for a in argv if not a.startswith("--")]
    if "--resign" in argv and len(args) == 2:
        print(json.dumps(resign(args[0], args[1], be or "cpu")))
        sys.exit(0)
    if len(args) != 2:
        sys.exit("usage: python -m gpusem.fuzz.appy.report BUNDLES OUT [--sm90] "
                 "[--backend cpu|cuda] [--minimise] | --resign BUNDLES NEW_BUNDLES")
    build(args[0], args[1], sm90="--sm90" in argv, backend=be,
          minimise="--minimise" in argv)
