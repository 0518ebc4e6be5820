"""Counterexample bundles: one folder per finding, for any target (DESIGN.md).

Layout: the target's files (for Bundl `program.bundl`, `kernel.cu`; for APPy
`program.py`, `kernel_triton.py`), `inputs.json`, `expected.json`, `actual.json`,
`trace.txt`, a `README.md` paragraph (property, backend, versions, the replay command),
and `bundle.json`: the metadata `gpusem replay DIR` needs (target, backend, property,
signature, kind, size, seed). Writing is atomic per folder (a temporary name, then
rename), so a campaign killed mid-write leaves no half bundle behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from gpusem.calculus.errors import BadInput

META = "bundle.json"


@dataclass
class Bundle:
    path: Path
    meta: dict
    files: dict[str, str] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return self.meta["target"]

    @property
    def signature(self) -> str:
        return self.meta["signature"]


def bundle_name(target: str, kind: str, signature: str) -> str:
    digest = hashlib.sha256(signature.encode()).hexdigest()[:10]
    return f"{target}-{re.sub(r'[^a-z0-9]+', '-', kind.lower())}-{digest}"


def write_bundle(out_dir: str | Path, meta: dict, files: dict[str, str]) -> Path:
    """Write a bundle; `meta` needs target, backend, property, signature, kind."""
    for key in ("target", "backend", "property", "signature", "kind"):
        if key not in meta:
            raise ValueError(f"bundle metadata lacks '{key}'")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    final = out / bundle_name(meta["target"], meta["kind"], meta["signature"])
    tmp = out / f".{final.name}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name, text in files.items():
        (tmp / name).write_text(text)
    (tmp / "README.md").write_text(readme(meta, sorted(files)))
    (tmp / META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final


def readme(meta: dict, names: list[str]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in sorted(meta.get("versions", {}).items()))
    extra = meta.get("note", "")
    return (
        f"# {meta['target']} finding: {meta['kind']}\n\n"
        f"Property `{meta['property']}` fails on backend `{meta['backend']}`"
        f"{' (' + meta['device'] + ')' if meta.get('device') else ''}: "
        f"{meta.get('detail', '')}. Signature `{meta['signature']}`; the program has "
        f"{meta.get('size', '?')} statements{' (shrunk)' if meta.get('shrunk') else ''}. "
        f"Versions: {versions or 'unknown'}. {extra}\n\n"
        f"Files: {', '.join(names)}.\n\n"
        "Replay (from this folder): `gpusem replay .`\n")


def read_bundle(path: str | Path) -> Bundle:
    p = Path(path)
    meta_file = p / META
    if not meta_file.is_file():
        raise BadInput(f"not a bundle: {p} has no {META}")
    try:
        meta = json.loads(meta_file.read_text())
    except json.JSONDecodeError as err:
        raise BadInput(f"malformed bundle: {meta_file}: {err}") from None
    files = {f.name: f.read_text() for f in p.iterdir()
             if f.is_file() and f.name not in (META,)}
    return Bundle(p, meta, files)


def list_bundles(out_dir: str | Path) -> list[Bundle]:
    out = Path(out_dir)
    if not out.is_dir():
        return []
    return [read_bundle(d) for d in sorted(out.iterdir())
            if d.is_dir() and (d / META).is_file()]
