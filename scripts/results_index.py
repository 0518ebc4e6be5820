"""results/INDEX.md, generated from the metadata of every subject folder (issue 25).

    python scripts/results_index.py            # (re)writes results/INDEX.md
    python scripts/results_index.py --check    # writes nothing; exit 1 if INDEX.md is
                                               # stale or the metadata incomplete
    python scripts/results_index.py --root DIR # another results folder (tests)

The scheme: results/ holds INDEX.md and one folder per subject (bundl/, faults/, ...),
nothing else. Each subject folder has an INDEX.toml:

    subject = "one line: what the folder is about"
    [[result]]     a measurement: a file or a folder (path ends in "/") of the folder
    path = "..."   relative to the subject folder
    what = "..."   what it measures
    command = "..."  device = "..."  date = "YYYY-MM-DD"
    status = "current" | "superseded"   (superseded: kept for a reason its notes give)
    notes = "..."  optional: the numbers and the story, the record
    [[note]]       a write-up (README.md, FINDINGS.md): path, what
    [[removed]]    a file taken out of the tree: path (relative to results/, where it
                   was), commit (one that holds it: `git show COMMIT:results/PATH`),
                   what, command, device, date, optional replaced_by and notes

--check fails (one line per problem) when a file or folder of a subject has no entry
(an entry of a folder covers everything in it), an entry names nothing, a key is
missing or wrong, something other than INDEX.md lies at results/ top level, two
bundles are the same files (a bundle kept twice), or INDEX.md differs from what this
script writes. Exit status: 0 clean, 1 problems, 2 a malformed INDEX.toml
(`file:line:col: message`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "results"
RESULT_KEYS = ("path", "what", "command", "device", "date", "status")
REMOVED_KEYS = ("path", "commit", "what", "command", "device", "date")
OPTIONAL = {"result": ("notes",), "note": (), "removed": ("replaced_by", "notes")}
STATUSES = ("current", "superseded")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}$")
# what makes two bundles the same finding; the rest of bundle.json records the run
BUNDLE_IDENTITY = ("target", "property", "backend", "signature", "fault")


class Malformed(Exception):
    """An INDEX.toml that cannot be read: `file:line:col: message`."""


def load(path: Path) -> dict:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(err))
        line, col = (m[1], m[2]) if m else ("1", "1")
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(err))
        raise Malformed(f"{path}:{line}:{col}: {msg}") from None
    except UnicodeDecodeError as err:
        raise Malformed(f"{path}:1:1: not UTF-8: {err.reason}") from None
    return data


def subjects(root: Path) -> dict[str, dict]:
    return {d.name: load(d / "INDEX.toml") for d in sorted(root.iterdir())
            if d.is_dir() and (d / "INDEX.toml").is_file()}


# ------------------------------------------------------------------------ checks
def problems(root: Path) -> list[str]:
    out: list[str] = []
    for p in sorted(root.iterdir()):
        if p.is_dir() and not (p / "INDEX.toml").is_file():
            out.append(f"results/{p.name}/: a subject folder without INDEX.toml")
        elif p.is_file() and p.name != "INDEX.md":
            out.append(f"results/{p.name}: a file at results/ top level (put it in a "
                       "subject folder and describe it in that folder's INDEX.toml)")
    for name, meta in subjects(root).items():
        out += subject_problems(root / name, meta)
    out += duplicate_bundles(root)
    index = root / "INDEX.md"
    if not index.is_file() or index.read_text(encoding="utf-8") != render(root):
        out.append("results/INDEX.md is stale: run python scripts/results_index.py")
    return out


def subject_problems(folder: Path, meta: dict) -> list[str]:
    where = f"results/{folder.name}/INDEX.toml"
    out: list[str] = []
    if not isinstance(meta.get("subject"), str) or not meta["subject"].strip():
        out.append(f"{where}: no subject line")
    unknown = set(meta) - {"subject", "result", "note", "removed"}
    out += [f"{where}: unknown key {k!r}" for k in sorted(unknown)]
    covered: list[str] = []
    for kind, keys in (("result", RESULT_KEYS), ("note", ("path", "what")),
                       ("removed", REMOVED_KEYS)):
        entries = meta.get(kind, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict)
                                                    for e in entries):
            out.append(f"{where}: {kind} is not a list of [[{kind}]] tables")
            continue
        for i, entry in enumerate(entries):
            label = f"{where}: [[{kind}]] #{i + 1} ({entry.get('path', '?')})"
            out += [f"{label}: no {k}" for k in keys
                    if not isinstance(entry.get(k), str) or not entry[k].strip()]
            extra = set(entry) - set(keys) - set(OPTIONAL[kind])
            out += [f"{label}: unknown key {k!r}" for k in sorted(extra)]
            if "date" in keys and isinstance(entry.get("date"), str) \
                    and not DATE.match(entry["date"]):
                out.append(f"{label}: date is not YYYY-MM-DD")
            if kind == "result" and entry.get("status") not in STATUSES:
                out.append(f"{label}: status is not one of {', '.join(STATUSES)}")
            path = str(entry.get("path", ""))
            if kind == "removed":
                if (folder.parent / path).exists():
                    out.append(f"{label}: removed, yet results/{path} exists")
                continue
            target = folder / path
            if not path or ".." in Path(path).parts or not target.exists() \
                    or path.endswith("/") != target.is_dir():
                out.append(f"{label}: names nothing in results/{folder.name}/ "
                           "(a folder ends in /)")
                continue
            covered.append(path.rstrip("/"))
    for f in sorted(folder.rglob("*")):
        rel = f.relative_to(folder).as_posix()
        if f.is_dir() or rel == "INDEX.toml":
            continue
        if not any(rel == c or rel.startswith(c + "/") for c in covered):
            out.append(f"results/{folder.name}/{rel}: no metadata (add an entry for "
                       f"it, or for a folder above it, to {where})")
    return out


def duplicate_bundles(root: Path) -> list[str]:
    seen: dict[str, str] = {}
    out = []
    for meta_file in sorted(root.rglob("bundle.json")):
        d = meta_file.parent
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            out.append(f"{d.relative_to(root.parent)}: bundle.json is not JSON")
            continue
        h = hashlib.sha256(json.dumps({k: meta.get(k) for k in BUNDLE_IDENTITY},
                                      sort_keys=True).encode())
        for f in sorted(d.rglob("*")):
            if f.is_file() and f.name not in ("bundle.json", "README.md"):
                h.update(f.relative_to(d).as_posix().encode() + b"\0" + f.read_bytes())
        rel = d.relative_to(root.parent).as_posix()
        if (first := seen.setdefault(h.hexdigest(), rel)) != rel:
            out.append(f"{rel}: the same bundle as {first} (keep one)")
    return out


# ------------------------------------------------------------------------ render
def code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render(root: Path) -> str:
    """INDEX.md; an entry missing a key renders with it empty (`problems` names it)."""
    subs = {name: _filled(meta) for name, meta in subjects(root).items()}
    lines = [
        "# Results",
        "",
        "Generated by `python scripts/results_index.py` from the `INDEX.toml` of every",
        "subject folder; do not edit it by hand (CI runs `--check`:",
        "tests/results/test_index.py). Each entry says what a file or folder measures,",
        "the command that made it, the device, the date, and whether it is",
        "**current** or **superseded** (kept for the reason its notes give). Files",
        "taken out of the tree are listed under *Removed* with a commit that holds",
        "them:",
        "`git show COMMIT:results/PATH`.",
        "",
        "| subject | what | current | superseded | removed |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, meta in subs.items():
        results = meta.get("result", [])
        count = {s: sum(r.get("status") == s for r in results) for s in STATUSES}
        lines.append(f"| [{name}/](#{name}) | {cell(meta.get('subject', ''))} | "
                     f"{count['current']} | {count['superseded']} | "
                     f"{len(meta.get('removed', []))} |")
    for name, meta in subs.items():
        lines += ["", f"## {name}", "", cell(meta.get("subject", "")), ""]
        for note in meta.get("note", []):
            lines.append(f"- [`{note['path']}`]({name}/{note['path']}): "
                         f"{cell(note['what'])}")
        for r in meta.get("result", []):
            head = f"### [`{name}/{r['path']}`]({name}/{r['path']}) ({r['status']})"
            lines += ["", head, "", cell(r["what"]).rstrip(".") + ".", "",
                      f"- command: {code(cell(r['command']))}",
                      f"- device: {cell(r['device'])}",
                      f"- date: {r['date']}"]
            if r.get("notes"):
                lines += ["", cell(r["notes"])]
        if meta.get("removed"):
            lines += ["", f"### Removed from {name}/", "",
                      "| was | commit | replaced by | what | date |",
                      "| --- | --- | --- | --- | --- |"]
            for r in meta["removed"]:
                what = cell(r["what"] + (f". {r['notes']}" if r.get("notes") else ""))
                what += (f" Command: {code(cell(r['command']))}; "
                         f"device: {cell(r['device'])}")
                replaced = code(r.get("replaced_by", "-"))
                lines.append(f"| `results/{r['path']}` | {r['commit']} | {replaced} | "
                             f"{what} | {r['date']} |")
    return "\n".join(lines) + "\n"


def _filled(meta: dict) -> dict:
    keys = {"result": RESULT_KEYS, "note": ("path", "what"), "removed": REMOVED_KEYS}
    out = {"subject": str(meta.get("subject", ""))}
    for kind, names in keys.items():
        entries = meta.get(kind, [])
        out[kind] = [{k: str(e.get(k, "")) for k in (*names, *OPTIONAL[kind])
                      if k in e or k in names}
                     for e in (entries if isinstance(entries, list) else [])
                     if isinstance(e, dict)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if "
                    "INDEX.md is stale or the metadata incomplete")
    ap.add_argument("--root", type=Path, default=ROOT, help="the results folder")
    args = ap.parse_args(argv)
    root: Path = args.root
    if not root.is_dir():
        print(f"{root}:1:1: not a folder", file=sys.stderr)
        return 2
    try:
        if args.check:
            found = problems(root)
            for line in found:
                print(line)
            return 1 if found else 0
        (root / "INDEX.md").write_text(render(root), encoding="utf-8")
        found = [p for p in problems(root) if "INDEX.md is stale" not in p]
    except Malformed as err:
        print(err, file=sys.stderr)
        return 2
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
