"""Counterexample bundles and the store that holds them: one folder per finding, for
any target (DESIGN.md; docs/bundles.md is the user's description).

Layout of a bundle: the target's files (for Bundl `program.bundl`, `kernel.cu`,
`repro.cu`; for APPy `program.py`, `kernel_triton.py`), `inputs.json`,
`expected.json`, `actual.json`, `trace.txt`, `attribution.json` (for findings of a
property that runs CUDA: the verdict of `fuzz/attribution.py`, its rule, evidence and
the toolchain matrix), a `README.md` paragraph (property, backend, versions, the
verdict, the replay command), `bundle.json` (the metadata `gpusem replay
DIR` needs: target, backend, property, signature, kind, size, seed; `state` is
"shrinking" until the program is minimal, then "done") and `seen.jsonl` (one line per
later sighting of the same signature: duplicates are counted, never rewritten).

The store never overwrites. A bundle is written into a temporary folder and renamed
to its final name, which is derived from the signature (`bundle_name`); the rename
fails when that folder exists, so whoever renames first owns the signature and every
other writer (another `--jobs` shard, an earlier campaign in the same out dir) sees it
taken: one folder per finding, atomically, across processes. Shrinking then rewrites
the owner's files in place, each file replaced atomically and `bundle.json` last, so a
kill while shrinking leaves the finding as first seen (or smaller), never nothing.

Reading is strict: a bundle whose `bundle.json` is not an object with the required
string keys, or whose files are not UTF-8 text, is `BadInput` (one line, exit 2).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusem.calculus.errors import BadInput

META = "bundle.json"
SEEN = "seen.jsonl"
ATTRIBUTION = "attribution.json"  # whose bug it is (fuzz/attribution.py), when known
REQUIRED = ("target", "backend", "property", "signature", "kind")
MAX_FILE_BYTES = 16 * 2**20  # a bundle's text files; anything larger is not ours


@dataclass
class Bundle:
    path: Path
    meta: dict
    files: dict[str, str] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return str(self.meta["target"])

    @property
    def signature(self) -> str:
        return str(self.meta["signature"])

    @property
    def sightings(self) -> int:
        """Times this signature was met: the first, and each counted duplicate."""
        return 1 + count_sightings(self.path)


def bundle_name(target: str, kind: str, signature: str) -> str:
    digest = hashlib.sha256(signature.encode()).hexdigest()[:10]
    return f"{_slug(target)}-{_slug(kind)}-{digest}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _check_meta(meta: dict) -> None:
    for key in REQUIRED:
        if key not in meta:
            raise ValueError(f"bundle metadata lacks '{key}'")


def write_bundle(out_dir: str | Path, meta: dict, files: dict[str, str],
                 replace: bool = False) -> Path:
    """Write a bundle; `meta` needs target, backend, property, signature, kind. A
    signature already in `out_dir` is left as it is (its path is returned) unless
    `replace` (a tool that re-shrinks a bundle on purpose)."""
    path, created = BundleStore(out_dir).claim(meta, files)
    if not created and replace:
        BundleStore(out_dir).update(path, meta, files)
    return path


class BundleStore:
    """The bundles of one out dir; safe to share between processes."""

    def __init__(self, out_dir: str | Path) -> None:
        self.root = Path(out_dir)

    def path_of(self, meta: dict) -> Path:
        return self.root / bundle_name(meta["target"], meta["kind"], meta["signature"])

    def lookup(self, meta: dict) -> Path | None:
        """The bundle holding this signature, if the store has one."""
        path = self.path_of(meta)
        return path if (path / META).is_file() else None

    def claim(self, meta: dict, files: dict[str, str]) -> tuple[Path, bool]:
        """Write a new bundle unless its signature has one: (its path, True when this
        call wrote it)."""
        _check_meta(meta)
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.path_of(meta)
        if (final / META).is_file():
            return final, False
        tmp = self.root / f".{final.name}.tmp{os.getpid()}-{time.monotonic_ns()}"
        tmp.mkdir()
        try:
            _write_files(tmp, meta, files)
            try:
                os.rename(tmp, final)  # atomic; fails when `final` holds anything
            except OSError as err:
                if err.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                if (final / META).is_file():
                    return final, False
                # a folder without metadata: a writer killed mid-way; take it over
                self.update(final, meta, files)
                return final, True
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final, True

    def update(self, path: Path, meta: dict, files: dict[str, str]) -> None:
        """Rewrite a bundle this process owns (after shrinking): each file replaced
        atomically, stale files removed, `bundle.json` last."""
        _check_meta(meta)
        path.mkdir(parents=True, exist_ok=True)
        texts = dict(files) | {"README.md": readme(meta, sorted(files))}
        for name, text in texts.items():
            atomic_write(path / name, text)
        for old in path.iterdir():
            if old.is_file() and old.name not in texts and old.name not in (META, SEEN):
                old.unlink()
        atomic_write(path / META, json.dumps(meta, indent=2, sort_keys=True) + "\n")

    def sighting(self, path: Path, info: dict[str, Any]) -> None:
        """Count one more meeting of the bundle's signature (an appended line)."""
        line = json.dumps(info, sort_keys=True) + "\n"
        fd = os.open(path / SEEN, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())  # one write of < PIPE_BUF bytes: not interleaved
        finally:
            os.close(fd)

    def bundles(self) -> list[Bundle]:
        return list_bundles(self.root)


def _write_files(folder: Path, meta: dict, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "README.md").write_text(readme(meta, sorted(files)))
    (folder / META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def recorded_attribution(path: str | Path) -> tuple[str, str]:
    """The verdict and cause the bundle at `path` records (`bundle.json`), "" where
    it records none."""
    try:
        meta = json.loads((Path(path) / META).read_text())
        blame = meta.get("attribution") or {}
        return str(blame.get("verdict", "") or ""), str(blame.get("cause", "") or "")
    except (OSError, ValueError, AttributeError):
        return "", ""


def atomic_write(path: Path, text: str) -> None:
    """`path` replaced by `text` at once: a reader sees the old file or the new one."""
    tmp = path.with_name(f".{path.name}.new{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def count_sightings(path: Path) -> int:
    try:
        return sum(1 for line in (path / SEEN).read_text().splitlines() if line.strip())
    except (OSError, UnicodeDecodeError):
        return 0


def readme(meta: dict, names: list[str]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in sorted(meta.get("versions", {}).items()))
    extra = meta.get("note", "")
    repro = ""
    if "repro.cu" in names:
        repro = ("Standalone reproducer: `repro.cu` (kernel, runtime, inputs and the "
                 f"expected output inlined): `{meta.get('nvcc_command', REPRO_NVCC)}` "
                 "then `./repro` (exit 1: the bug reproduces).\n\n")
    if "repro_cpu.cpp" in names:
        repro += ("Without a GPU: `repro_cpu.cpp` (the same, on the cpu SIMT harness, "
                  "inlined): `" + meta.get("cpu_command", REPRO_CPU) + "` then "
                  "`./repro_cpu` (exit 1: the bug reproduces; `./repro_cpu SEED` "
                  "tries another schedule).\n\n")
    if "repro.cu" in names and meta.get("backend") == "cuda":
        repro += sanitizer_commands()
    blame = meta.get("attribution") or {}
    if blame.get("verdict"):
        of = ""
        if blame.get("of_this_program") is False:  # a shrink cut: fuzz/attribution.py
            of = (f" It was computed for the program {blame.get('program')} "
                  f"(sha256 {str(blame.get('program_sha256'))[:16]}...), not for the "
                  "partly shrunk program in this folder.")
        repro = (f"Attribution: **{blame['verdict']}** (rule `{blame.get('rule')}`; "
                 f"evidence and the toolchain matrix in `attribution.json`).{of}\n\n"
                 + repro)
    return (
        f"# {meta['target']} finding: {meta['kind']}\n\n"
        f"Property `{meta['property']}` fails on backend `{meta['backend']}`"
        f"{' (' + meta['device'] + ')' if meta.get('device') else ''}: "
        f"{meta.get('detail', '')}. Signature `{meta['signature']}`; the program has "
        f"{meta.get('size', '?')} statements{' (shrunk)' if meta.get('shrunk') else ''}. "
        f"Versions: {versions or 'unknown'}. {extra}\n\n"
        f"Files: {', '.join(names)}.\n\n"
        f"{repro}"
        "Replay (from this folder): `gpusem replay .` (exit 1 while it reproduces)\n")


REPRO_NVCC = "nvcc -arch=sm_90a -std=c++17 --fmad=false -w -o repro repro.cu"
REPRO_CPU = ("g++ -std=c++17 -O1 -ffp-contract=off -fno-fast-math -o repro_cpu "
             "repro_cpu.cpp")
SANITIZER_TOOLS = (
    ("racecheck", "shared-memory data races (a missing or misplaced barrier)"),
    ("synccheck", "illegal barrier use (a __syncthreads or named barrier not "
     "reached by every thread it waits for)"),
    ("initcheck", "reads of uninitialised global memory"),
    ("memcheck", "out-of-bounds and misaligned accesses"))


def sanitizer_commands() -> str:
    """compute-sanitizer on the GPU reproducer (issue 32.10): a race or a barrier
    misuse on hardware, told apart from a miscompile (a clean run that still
    mismatches is one)."""
    lines = ["On the GPU, tell a race or a barrier misuse from a miscompile with "
             "compute-sanitizer (CUDA's; build `repro` first):", ""]
    lines += [f"- `compute-sanitizer --tool {tool} --error-exitcode 99 ./repro`: {what}"
              for tool, what in SANITIZER_TOOLS]
    return "\n".join(lines) + "\n\n"


def read_bundle(path: str | Path) -> Bundle:
    p = Path(path)
    meta_file = p / META
    if not meta_file.is_file():
        raise BadInput(f"not a bundle: {p} has no {META}")
    meta = _json_object(meta_file)
    for key in REQUIRED:
        if not isinstance(meta.get(key), str) or not meta[key]:
            raise BadInput(f"malformed bundle: {meta_file}: '{key}' missing or not a "
                           "string")
    files = {}
    for f in sorted(p.iterdir()):
        if f.is_file() and f.name not in (META, SEEN) and not f.name.startswith("."):
            files[f.name] = _text(f)
    return Bundle(p, meta, files)


def _json_object(path: Path) -> dict:
    try:
        meta = json.loads(_text(path))
    except json.JSONDecodeError as err:
        raise BadInput(f"malformed bundle: {path}: {err}") from None
    if not isinstance(meta, dict):
        raise BadInput(f"malformed bundle: {path}: not a JSON object")
    return meta


def _text(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise BadInput(f"malformed bundle: {path}: {err.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(f"malformed bundle: {path}: larger than {MAX_FILE_BYTES} bytes")
    if b"\0" in data:
        raise BadInput(f"malformed bundle: {path}: binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(f"malformed bundle: {path}: not UTF-8 (byte {err.start})") from None


def list_bundles(out_dir: str | Path) -> list[Bundle]:
    out = Path(out_dir)
    if not out.is_dir():
        return []
    return [read_bundle(d) for d in sorted(out.iterdir())
            if d.is_dir() and not d.name.startswith(".") and (d / META).is_file()]
