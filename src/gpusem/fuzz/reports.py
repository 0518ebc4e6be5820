"""A campaign's reports (issue 18): JSON (our own versioned schema,
`docs/schema/campaign-report.schema.json`), SARIF 2.1.0 (one result per finding, rule
ids = finding kinds, located in the bundle's program file, for GitHub code scanning),
JUnit XML (one test case per property, one failure per finding), and the plain-text
summary that `gpusem fuzz` prints and writes beside the bundles.

All four are made from one `Report` (the merged `Summary` plus the campaign's
parameters and exit code), so they always agree with each other.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusem.fuzz.bundle import META
from gpusem.fuzz.junit import junit_xml
from gpusem.fuzz.summary import Finding, Summary, rate_text

SCHEMA = "gpusem-campaign-report"
SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/gpusem/gpusem"

# Exit codes of `gpusem fuzz` (README, `gpusem fuzz --help`).
EXIT_CLEAN, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


INTERRUPTED = {"SIGINT": 130, "SIGTERM": 143}


def exit_code(summary: Summary) -> int:
    """3 when gpusem itself failed (an internal finding, a shard that died), else 1
    when anything was found, else 130/143 when interrupted, else 0."""
    if summary.internal or summary.failed:
        return EXIT_INTERNAL
    if summary.findings:
        return EXIT_FINDINGS
    return INTERRUPTED.get(summary.interrupted, EXIT_CLEAN)


@dataclass
class Report:
    summary: Summary
    campaign: dict[str, Any]  # target, backend, properties, seed, shard, jobs, ...
    started_at: float = field(default_factory=time.time)

    @property
    def code(self) -> int:
        return exit_code(self.summary)

    # ------------------------------------------------------------------ JSON

    def as_json(self) -> dict[str, Any]:
        s = self.summary
        return {
            "schema": SCHEMA, "version": SCHEMA_VERSION,
            "gpusem_version": _version(),
            "campaign": self.campaign,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                        time.gmtime(self.started_at)),
            "seconds": round(s.seconds, 3),
            # fuzzing and shrinking apart (issue 31.1): shrinks run beside the fuzzing,
            # so `seconds` is not their sum; `shrink_s` adds up every shrink
            "fuzz_s": round(s.fuzz_s, 3), "shrink_s": round(s.shrink_s, 3),
            "interrupted": s.interrupted or None,
            "exit_code": self.code,
            "counts": {"programs": s.programs, "invalid": s.invalid,
                       "skipped": s.skipped, "findings": len(s.findings),
                       "new_findings": sum(f.new for f in s.findings),
                       "internal": len(s.internal),
                       "unconfirmed_timeouts": s.unconfirmed,
                       "seen_elsewhere": s.seen_elsewhere},
            "by_property": {p: dict(per) for p, per in sorted(s.outcomes.items())},
            "throughput": {"programs_per_min": (None if s.rate_per_min is None
                                                 else round(s.rate_per_min, 1))},
            "findings": [self._finding(f) for f in s.findings],
            "failed_shards": list(s.failed),
            "coverage": {p: {"programs": s.coverage_programs.get(p, 0),
                             "per_10k": s.coverage_per_10k(p)}
                         for p in sorted(s.coverage)},
        }

    def _finding(self, f: Finding) -> dict[str, Any]:
        program, line = program_location(f.bundle)
        return {"signature": f.signature, "kind": f.kind, "property": f.prop,
                "target": f.target, "detail": f.detail, "bundle": f.bundle,
                "program_file": program, "line": line,
                "size_before": f.size_before or f.size, "size": f.size,
                "shrunk": f.shrunk, "found_after_s": round(f.found_after_s, 2),
                "shrink_s": round(f.shrink_s, 2), "duplicates": f.duplicates,
                "new": f.new, "attribution": f.attribution or None}

    # ------------------------------------------------------------------ SARIF

    def as_sarif(self) -> dict[str, Any]:
        kinds = sorted({f.kind for f in self.summary.findings})
        rules = [{"id": _rule_id(k), "name": _rule_id(k),
                  "shortDescription": {"text": f"gpusem finding: {k}"},
                  "helpUri": f"{INFO_URI}/blob/main/docs/bundles.md"} for k in kinds]
        results = []
        for f in self.summary.findings:
            program, line = program_location(f.bundle)
            uri = (Path(f.bundle) / program).as_posix() if program else f.bundle
            results.append({
                "ruleId": _rule_id(f.kind),
                "ruleIndex": kinds.index(f.kind),
                "level": "error",
                "message": {"text": f"{f.kind}: {f.detail} (signature {f.signature}; "
                                    f"{_blame(f)}replay: gpusem replay {f.bundle})"},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": uri},
                    "region": {"startLine": max(1, line)}}}],
                "partialFingerprints": {"gpusemSignature/v1": f.signature},
                "properties": {"bundle": f.bundle, "property": f.prop,
                               "size": f.size, "duplicates": f.duplicates,
                               "attribution": f.attribution or None},
            })
        return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
            "tool": {"driver": {"name": "gpusem", "version": _version(),
                                "informationUri": INFO_URI, "rules": rules}},
            "invocations": [{"executionSuccessful": self.code != EXIT_INTERNAL,
                             "exitCode": self.code}],
            "results": results}]}

    # ------------------------------------------------------------------ JUnit

    def as_junit(self) -> str:
        """One test case per property (its counts) and one failing test case per
        finding (its signature, detail and bundle); shards that died are errors
        (`fuzz/junit.py`: through ElementTree, illegal XML characters made visible)."""
        return junit_xml(self.summary, str(self.campaign.get("target", "?")))

    # ------------------------------------------------------------------ text

    def as_text(self) -> str:
        """The summary, whole (never cut to a terminal's width)."""
        s = self.summary
        lines = [f"{s.programs} programs, {len(s.findings)} finding classes "
                 f"({sum(f.new for f in s.findings)} new), {rate_text(s.rate_per_min)}, "
                 f"{s.invalid} not compared (illegal, racy or unsupported), "
                 f"{s.skipped} not runnable on this backend"
                 + (f", {s.unconfirmed} timeouts not confirmed" if s.unconfirmed else "")
                 + (f"; interrupted ({s.interrupted})" if s.interrupted else ""),
                 f"time: {s.seconds:.1f} s in all, {s.fuzz_s:.1f} s fuzzing, "
                 f"{s.shrink_s:.1f} s shrinking findings (beside the fuzzing where "
                 f"a shrinker ran them)"]
        for f in s.findings:
            lines.append(f"{f.kind}\t{f.signature}\t{f.size_before or f.size}->{f.size} "
                         f"stmts\t{'shrunk' if f.shrunk else 'not shrunk'}\t"
                         f"{f.found_after_s:.0f}s\tx{1 + f.duplicates}\t"
                         f"{'new' if f.new else 'known'}\t{f.bundle}"
                         + (f"\tattribution {f.attribution}" if f.attribution else ""))
        blamed: dict[str, int] = {}
        for f in s.findings:
            if f.attribution:
                blamed[f.attribution] = blamed.get(f.attribution, 0) + 1
        if blamed:
            lines.append("attribution: " + ", ".join(
                f"{v} {n}" for v, n in sorted(blamed.items())))
        lines += [f"failed: {line}" for line in s.failed]
        lines.append(f"exit {self.code}")
        return "\n".join(lines) + "\n"

    def coverage_text(self) -> str:
        s = self.summary
        out = []
        for p in sorted(s.coverage):
            out.append(f"coverage of {p}: programs per 10,000 that exercised each rule "
                       f"({s.coverage_programs.get(p, 0)} programs)")
            out += [f"  {rule}\t{x:g}" for rule, x in s.coverage_per_10k(p).items()]
        return "\n".join(out) + ("\n" if out else "")

    # ------------------------------------------------------------------ files

    def write(self, json_path: str | None = None, sarif_path: str | None = None,
              junit_path: str | None = None, out_dir: str | None = None) -> None:
        """Each report asked for, and (in `out_dir`) summary.json and summary.txt:
        written atomically, so an interrupted campaign leaves whole files."""
        if json_path:
            _write(json_path, json.dumps(self.as_json(), indent=1) + "\n")
        if sarif_path:
            _write(sarif_path, json.dumps(self.as_sarif(), indent=1) + "\n")
        if junit_path:
            _write(junit_path, self.as_junit())
        if out_dir:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            _write(str(Path(out_dir) / "summary.json"),
                   json.dumps(self.as_json(), indent=1) + "\n")
            _write(str(Path(out_dir) / "summary.txt"), self.as_text()
                   + self.coverage_text())


def program_location(bundle: str) -> tuple[str, int]:
    """The bundle's program file and the line to point at (its metadata's
    `program_file` / `line` where the target set them, else the first program.*)."""
    path = Path(bundle)
    line = 1
    program = ""
    try:
        meta = json.loads((path / META).read_text())
        if isinstance(meta, dict):
            program = str(meta.get("program_file", ""))
            line = int(meta.get("line", 1) or 1)
    except (OSError, ValueError):
        pass
    if not program:
        found = sorted(p.name for p in path.glob("program.*")) if path.is_dir() else []
        program = found[0] if found else ""
    return program, line


def _blame(f: Finding, end: str = "; ") -> str:
    """`attribution: VERDICT` and `end`, or "" when the finding has none."""
    return f"attribution: {f.attribution}{end}" if f.attribution else ""


def _rule_id(kind: str) -> str:
    return "gpusem/" + "-".join(kind.lower().split())


def _version() -> str:
    from gpusem import __version__

    return __version__


def _write(path: str, text: str) -> None:
    p = Path(path)
    if p.parent != Path(""):
        p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, p)
