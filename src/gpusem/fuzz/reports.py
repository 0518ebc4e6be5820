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
from gpusem.fuzz.summary import Cause, Finding, Summary, causes, rate_text

SCHEMA = "gpusem-campaign-report"
SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/gpusem/gpusem"

# Exit codes of `gpusem fuzz` (README, docs/reports.md, `gpusem fuzz --help`).
# EXIT_NOTHING_CHECKED: the campaign ended with no program compared, so its "nothing
# found" means nothing (issue 32.1; pytest exits 5 when it ran no test).
EXIT_CLEAN, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_NOTHING_CHECKED = 4


INTERRUPTED = {"SIGINT": 130, "SIGTERM": 143}


def exit_code(summary: Summary) -> int:
    """3 when gpusem itself failed (an internal finding, a shard that died, the
    circuit breaker's stop on a systematic internal error), else 1
    when anything was found, else 130/143 when interrupted, else 4 when no program was
    compared (none generated, or every one invalid or not runnable here), else 0."""
    if summary.internal or summary.failed or summary.stopped:
        return EXIT_INTERNAL
    if summary.failing:  # findings the baseline (--baseline) holds pass
        return EXIT_FINDINGS
    if summary.interrupted:
        return INTERRUPTED.get(summary.interrupted, EXIT_CLEAN)
    if summary.compared or any(r["verdict"] != "cannot-test" for r in summary.corpus):
        return EXIT_CLEAN
    return EXIT_NOTHING_CHECKED


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
            # the circuit breaker's reason (fuzz/breaker.py), null when it did not trip
            "stopped": s.stopped or None,
            "exit_code": self.code,
            "counts": {"programs": s.programs, "invalid": s.invalid,
                       "skipped": s.skipped, "compared": s.compared,
                       "findings": len(s.findings),
                       "new_findings": sum(f.new for f in s.findings),
                       "known_findings": sum(f.known for f in s.findings),
                       "internal": len(s.internal),
                       "unconfirmed_timeouts": s.unconfirmed,
                       "seen_elsewhere": s.seen_elsewhere},
            "by_property": {p: dict(per) for p, per in sorted(s.outcomes.items())},
            # per property: programs each configuration compared (a toolchain matrix)
            "by_configuration": {p: dict(sorted(per.items())) for p, per in
                                 sorted(s.by_configuration.items())},
            # per property: programs set aside (invalid, not runnable here) by reason,
            # and their share of the property's programs (issue 31.6)
            "not_compared": not_compared_json(s),
            "throughput": {"programs_per_min": (None if s.rate_per_min is None
                                                 else round(s.rate_per_min, 1))},
            "findings": [self._finding(f) for f in s.findings],
            "causes": [{"cause": c.key, "attribution": c.attribution or None,
                        "signatures": c.signatures,
                        "bundles": [f.bundle for f in c.findings]}
                       for c in causes(s.findings)],
            "failed_shards": list(s.failed),
            **({"cut_pieces": list(s.cut)} if s.cut else {}),
            "coverage": {p: {"programs": s.coverage_programs.get(p, 0),
                             "per_10k": s.coverage_per_10k(p)}
                         for p in sorted(s.coverage)},
            "corpus": list(s.corpus),
        }

    def _finding(self, f: Finding) -> dict[str, Any]:
        program, line = program_location(f.bundle)
        return {"signature": f.signature, "kind": f.kind, "property": f.prop,
                "target": f.target, "detail": f.detail, "bundle": f.bundle,
                "program_file": program, "line": line,
                "size_before": f.size_before or f.size, "size": f.size,
                "shrunk": f.shrunk, "found_after_s": round(f.found_after_s, 2),
                "shrink_s": round(f.shrink_s, 2), "duplicates": f.duplicates,
                "new": f.new, "known": f.known, "attribution": f.attribution or None,
                "cause": f.cause_key}

    # ------------------------------------------------------------------ SARIF

    def as_sarif(self) -> dict[str, Any]:
        """One result per cause (`summary.causes`: findings whose attribution names
        the same verdict and check are one cause), listing its signatures; a finding
        with no such evidence is a cause of its own."""
        kinds = sorted({f.kind for f in self.summary.findings})
        rules = [{"id": _rule_id(k), "name": _rule_id(k),
                  "shortDescription": {"text": f"gpusem finding: {k}"},
                  "helpUri": f"{INFO_URI}/blob/main/docs/bundles.md"} for k in kinds]
        results = [self._sarif_result(c, kinds) for c in causes(self.summary.findings)]
        return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
            "tool": {"driver": {"name": "gpusem", "version": _version(),
                                "informationUri": INFO_URI, "rules": rules}},
            "invocations": [{"executionSuccessful": self.code != EXIT_INTERNAL,
                             "exitCode": self.code}],
            "results": results}]}

    def _sarif_result(self, cause: Cause, kinds: list[str]) -> dict[str, Any]:
        f = cause.findings[0]
        program, line = program_location(f.bundle)
        uri = (Path(f.bundle) / program).as_posix() if program else f.bundle
        also = ("" if len(cause.findings) == 1 else
                f"; one cause ({cause.key}) under {len(cause.findings)} signatures: "
                + ", ".join(cause.signatures))
        return {
            "ruleId": _rule_id(f.kind),
            "ruleIndex": kinds.index(f.kind),
            "level": "error",
            "message": {"text": f"{f.kind}: {f.detail} (signature {f.signature}; "
                                f"{_blame(f)}replay: gpusem replay {f.bundle}{also})"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": uri},
                "region": {"startLine": max(1, line)}}}],
            "partialFingerprints": {"gpusemSignature/v1": f.signature,
                                    "gpusemCause/v1": cause.key},
            # --baseline: a cause is unchanged when the baseline holds all its findings
            **({"baselineState": "unchanged" if all(g.known for g in cause.findings)
                else "new"} if self.campaign.get("baseline") else {}),
            "properties": {"bundle": f.bundle, "property": f.prop,
                           "size": f.size, "duplicates": f.duplicates,
                           "attribution": f.attribution or None,
                           "cause": cause.key, "signatures": cause.signatures,
                           "bundles": [g.bundle for g in cause.findings]},
        }

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
                 (f"time: {s.seconds:.1f} s in all, {s.fuzz_s:.1f} s fuzzing, "
                  f"{s.shrink_s:.1f} s shrinking findings (beside the fuzzing where "
                  f"a shrinker ran them)")]
        for f in s.findings:
            lines.append(f"{f.kind}\t{f.signature}\t{f.size_before or f.size}->{f.size} "
                         f"stmts\t{'shrunk' if f.shrunk else 'not shrunk'}\t"
                         f"{f.found_after_s:.0f}s\tx{1 + f.duplicates}\t"
                         f"{'new' if f.new else 'known'}\t{f.bundle}"
                         + ("\tin the baseline" if f.known else "")
                         + (f"\tattribution {f.attribution}" if f.attribution else ""))
        lines += configuration_lines(s)
        lines += not_compared_lines(s)
        blamed: dict[str, int] = {}
        for f in s.findings:
            if f.attribution:
                blamed[f.attribution] = blamed.get(f.attribution, 0) + 1
        if blamed:
            lines.append("attribution: " + ", ".join(
                f"{v} {n}" for v, n in sorted(blamed.items())))
        for c in causes(s.findings):
            if len(c.findings) > 1:
                lines.append(f"cause {c.key}: {len(c.findings)} signatures, one bug: "
                             + ", ".join(c.signatures))
        if self.campaign.get("baseline"):
            lines.append(f"baseline {self.campaign['baseline']}: "
                         f"{sum(f.known for f in s.findings)} known (pass), "
                         f"{len(s.failing)} not in it")
        lines += corpus_lines(s.corpus)
        if s.stopped:
            lines.append(f"stopped: {s.stopped}")
        lines += [f"failed: {line}" for line in s.failed]
        lines += [f"cut at the campaign's end: {line}" for line in s.cut]
        if self.code == EXIT_NOTHING_CHECKED:
            lines.append(nothing_checked_text(s))
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


def configuration_lines(s: Summary) -> list[str]:
    """Per property with configurations: how many programs each compared (not every
    configuration compares every program: nvcc-G runs on every K-th round)."""
    return [f"{p}: programs compared per configuration: "
            + ", ".join(f"{c} {n:,}" for c, n in sorted(per.items()))
            for p, per in sorted(s.by_configuration.items()) if per]


def not_compared_json(s: Summary) -> dict[str, Any]:
    """Per property: its programs, the share compared, and the programs not compared
    by reason (the result's `kind`), most first, each with its share."""
    out: dict[str, Any] = {}
    for p, per in sorted(s.not_compared.items()):
        total = sum(s.outcomes.get(p, {}).values())
        if not total:
            continue
        rows = sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))
        out[p] = {"programs": total,
                  "compared_share": round(1 - sum(per.values()) / total, 4),
                  "by_reason": {r: {"programs": n, "share": round(n / total, 4)}
                                for r, n in rows}}
    return out


def not_compared_lines(s: Summary) -> list[str]:
    """Per property: what share its programs were compared, and why the rest were
    not (one line per reason, most first)."""
    out = []
    for p, row in not_compared_json(s).items():
        kept = row["compared_share"]
        out.append(f"{p}: {100 * kept:.1f}% of {row['programs']:,} programs compared; "
                   "not compared, by reason:")
        out += [f"  {100 * r['share']:5.1f}%  {r['programs']:>9,}  {why}"
                for why, r in row["by_reason"].items()]
    return out


def corpus_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The corpus replayed first: one line of counts, one per bundle."""
    if not rows:
        return []
    n = {v: sum(r["verdict"] == v for r in rows)
         for v in ("reproduces", "fixed", "cannot-test")}
    out = [(f"corpus: {len(rows)} bundles replayed: {n['reproduces']} still failing, "
            f"{n['fixed']} fixed, {n['cannot-test']} cannot test")]
    for r in rows:
        state = {"reproduces": "still-failing"}.get(r["verdict"], r["verdict"])
        why = f" ({r['why']})" if r["why"] else ""
        known = " (in the baseline)" if r["known"] else ""
        out.append(f"corpus\t{state}{known}\t{r['signature']}\tnow {r['now']}{why}"
                   f"\t{r['bundle']}")
    return out


def nothing_checked_text(s: Summary) -> str:
    """Why exit 4: what the campaign did instead of comparing programs."""
    if not s.programs and s.cut:
        # a cluster's pieces checked programs, but none came back by the end: they are
        # not counted (a loaded machine; stop 39 met it at load 5-12 on 2 cores)
        why = (f"no piece came back within the budget ({len(s.cut)} cut at the "
               "campaign's end, their programs not counted: the lines above name them)")
    elif not s.programs:
        why = "no program was generated within the budget"
    else:
        why = (f"all {s.programs} programs were invalid ({s.invalid}) or not runnable "
               f"on this backend ({s.skipped})")
    return (f"nothing checked: {why}; a campaign that compared no program is not a "
            "pass (exit 4)")


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
