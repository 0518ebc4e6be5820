"""What an Exo verdict finding says: its description, the rule of the paper it turns on,
the AMIR trace that decides it, and the files of its bundle (issue 16, item 3).

The rule is decided from where the two checkers part: the GPU IR statement at gpusem's
violation or at Exo's hazard (`=`, `+=`, a read, a free, a barrier), and which rule
sets disagree (a disagreement under `--rules paper` only is one of our corrections of
the paper, each an errata entry). The table `RULES` holds the readings; FINDINGS.md
(results/exo/) judges each finding class.
"""

from __future__ import annotations

import json

from gpusem.fuzz.exo.checking import Checked
from gpusem.fuzz.targets import CheckResult

# (key, the rule of the paper it turns on)
RULES = {
    "reduce-full": (
        "Figure 5, row x += e: the destination's prior mutates must be fully_ordered "
        "(tau_v^pre = fully_ordered for +=), and temporally_ordered for x = e. Exo-GPU's "
        "code swaps them (sync_check.py marks a Reduce write_only; syncv_table.cpp: "
        "is_write_only ? temporal : full)."),
    "assign-temporal": (
        "Figure 5, row x = e: a plain write needs its destination's prior accesses "
        "only temporally_ordered (tau_v^pre); Exo-GPU's code requires fully_ordered "
        "for a plain write (the swap of the += row)."),
    "paper-reads": (
        "Figure 5 checks the reads of e with tau_v^pre (temporally_ordered for =); "
        "Section 3.4 and Figure 19 need fully_ordered for a read. gpusem --rules paper "
        "follows Figure 5 literally, --rules fixed and Exo-GPU's code read with "
        "fully_ordered (errata 'Figure 5 reads')."),
    "stream-sync": (
        "Figure 16, row cuda_stream_sync = {strm} only: the kernel bracket of Figure 5 "
        "(Fence(true, Qcs + {cpu}, Qcs, Tcs)) then orders nothing a kernel touches; "
        "Exo-GPU's code bracket uses every device timeline (gpusem --rules fixed: "
        "errata 'cuda_stream_sync and the kernel bracket')."),
    "barrier-convergent": (
        "Figure 5, Arrive/Await rows record the barrier read with t = false (one "
        "record per thread); Exo-GPU records it convergent (gpusem --rules fixed: "
        "errata 'barrier accesses are convergent')."),
    "free": (
        "Section 4.2 / Figure 5 free x: every access must be temporally_ordered for "
        "the whole cluster before the free (CheckReads and CheckMutates with "
        "tau_v^free)."),
    "await-phase": (
        "Figure 22, Await(e_z, tau_s, N): N < 0 (~lag) waits for all but the last "
        "`lag` arrivals; records with an arrive count above Max are not lifted."),
    "check-barrier": (
        "Figure 7, CheckBarrier: when a barrier is freed its arrive and await counts "
        "must agree (Figure 5's free z row). pldi26 checks it ('Arrive count (a) != "
        "Await count (w)'); endgame dropped the check (one-shot ring-buffer slots)."),
    "async-war": (
        "Figures 19-20 (T_arg of an out-of-order write): an asynchronous copy's write "
        "(Sm80_cp_async_qual) checks the earlier reads of its cells at "
        "temporally_ordered on its own timeline; a thread's earlier in-order read is "
        "not ordered there without a Fence(.., Sm80_cp_async) or Sm80_generic. pldi26 "
        "agrees; endgame records cp.async on [Sm80_cp_async_qual, "
        "cuda_in_order_ram_qual] and lets the thread's program order cover it."),
    "one-shot": (
        "Figure 22: Arrive and Await count phases on any barrier, which may be reused; "
        "endgame made mbarriers and cluster syncs one-shot per (ring-buffer) slot "
        "('Arrived twice on one-shot arrive barrier')."),
    "witness-temporal": (
        "Definition B.3 (i), the witness W: a transitive Fence (or Arrive) passes on a "
        "record that some executing thread sees at >= unordered, temporally_ordered "
        "included, so a warp's full fence after a CTA-wide temporal one orders "
        "another warp's write for the warp's reads. pldi26 and --rules paper follow W "
        "as printed; endgame (synchronizes_with: vis_flag_issue | vis_flag_full) and "
        "--rules fixed need the thread to have made the access or to see it fully, "
        "as a memory fence is cumulative only over writes its thread has observed "
        "(errata 'The witness W and temporal visibility')."),
    "unlocated": (
        "None known: Exo-GPU's hazard names no statement that maps back to GPU IR. "
        "Seen: its debug log cut before the hazard's remark (the worker keeps the "
        "log's first 20,000 characters; programs with many syncs log more). Replay "
        "it with the whole log: the first of the H200 census's 4 such WAWs was "
        "pldi26's free (E3)."),
    "generic": "Figure 7, CheckReads / CheckMutates of the statement named.",
    "static": "Exo-GPU's static checks (Sections 3-4 of the paper, or beyond them).",
    "exo-bug": ("No rule: Exo-GPU broke (an internal error, a crash or a hang) instead "
                "of giving a verdict; whatever the program's status, that is a bug."),
}


def rule_key(c: Checked) -> str:
    cmp = c.comparison
    g = {r: c.gpusem[r] for r in cmp.disagree_under}
    only_paper = cmp.disagree_under == ("paper",)
    if cmp.kind in ("exo-error", "exo-crash", "exo-hang", "exo-internal"):
        return "exo-bug"
    if cmp.kind.startswith("exo-") and cmp.kind != "exo-rejects":
        return "static"
    if cmp.kind == "gpusem-rejects":
        v = next(iter(g.values()))
        if v.kind == "static":
            return "static"
        if v.hazard == "barrier":
            return "check-barrier"
        if only_paper and _is_barrier(c, v.line):
            return "barrier-convergent"
        if only_paper:
            return "stream-sync"
        if v.at == "+=":
            return "reduce-full"
        if v.hazard == "WAR" and v.at == "instr":
            return "async-war"
        if cmp.disagree_under == ("fixed",) and v.hazard == "RAW" and v.at == "read":
            # only `fixed` rejects a read: the one rule by which it reads more
            # strictly than the paper and Exo pldi26 (Figure 5 reads is Exo's too)
            return "witness-temporal"
        if v.at == "free":
            return "free"
        return "generic"
    if "one-shot" in cmp.signature:
        return "one-shot"
    if "Arrive count" in cmp.signature or "Await count" in cmp.signature:
        return "check-barrier"
    if c.exo_at == "=" and "WAW" in cmp.signature:
        return "assign-temporal"
    if only_paper and c.exo_at == "read":
        return "paper-reads"
    if c.exo_at == "free" or "free" in cmp.signature:
        return "free"
    if not c.exo_at and c.exo is not None and c.exo.verdict.kind == "hazard":
        return _unlocated(c, only_paper)
    return "generic"


def _unlocated(c: Checked, only_paper: bool) -> str:
    """Exo's hazard without its statement (its debug log was cut before the remark).
    A RAW that `--rules fixed` rejects as a read and `--rules paper` accepts still
    turns on the reads of Figure 5: the two rule sets differ at a read in that rule
    alone, and Exo names the same conflict."""
    assert c.exo is not None
    fixed = c.gpusem.get("fixed")
    if (only_paper and fixed is not None and fixed.hazard == "RAW"
            and fixed.at == "read" and c.exo.verdict.name.startswith("RAW")):
        return "paper-reads"
    return "unlocated"


def _is_barrier(c: Checked, line: int) -> bool:
    lines = c.source.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return "Arrive" in text or "Await" in text or "barrier" in text


def describe(c: Checked) -> str:
    assert c.exo is not None
    g = ", ".join(f"{r}: {c.gpusem[r].cls}" for r in c.gpusem)
    at = f" at line {c.exo_line}" if c.exo_line else ""
    return (f"Exo-GPU says {c.exo.verdict.short()[:100]}{at}; gpusem says {g} "
            f"[{rule_key(c)}]")[:300]


def amir_at(c: Checked, lines: set[int]) -> list[str]:
    """The AMIR statements converted from GPU IR `lines`, under both rule sets: what
    gpusem checks there (the visibility level each check requires)."""
    from gpusem.calculus.amir.printer import print_simple
    from gpusem.interpreter.amir.from_gpuir import convert

    out: list[str] = []
    assert c.proc is not None
    for r in c.gpusem:
        try:
            amir = convert(c.proc, c.defines, rules=r)  # type: ignore[arg-type]
        except Exception as err:  # noqa: BLE001 - a front-end rejection: no AMIR
            out.append(f"  ({r}: no AMIR: {err})")
            continue
        out.append(f"  --rules {r}:")
        for s in _flat(amir.body):
            if s.origin.line in lines and not hasattr(s, "body"):
                out.append(f"    line {s.origin.line}: {print_simple(s)}")
    return out


def _flat(body):
    for s in body:
        yield s
        if hasattr(s, "body"):
            yield from _flat(s.body)


def trace(c: Checked) -> str:
    assert c.exo is not None
    out = [f"finding: {c.comparison.signature}",
           f"the rule it turns on [{rule_key(c)}]: {RULES[rule_key(c)]}",
           f"near-miss mutation of the generator: {c.mutation or 'none'}", "",
           f"Exo-GPU: {c.exo.verdict.short()}"]
    if c.exo_line:
        out.append(f"  at GPU IR line {c.exo_line} ({c.exo_at})")
    if c.exo.verdict.message and c.exo.verdict.kind != "hazard":
        out.append("  " + c.exo.verdict.message.replace("\n", "\n  "))
    lines: set[int] = {c.exo_line} if c.exo_line else set()
    for r, v in c.gpusem.items():
        out += ["", f"gpusem --rules {r}: {v.cls}"]
        if v.diagnostic:
            out += ["  " + ln for ln in v.diagnostic.splitlines()]
        elif v.message:
            out.append("  " + v.message)
        lines |= {x for x in (v.line, v.other_line) if x}
    if lines:
        out += ["", "AMIR statements at those lines (Figure 5 conversion):"]
        out += amir_at(c, lines)
    if c.explanation:
        out += ["", "Exo-GPU's debug log (remarks at the hazard):"]
        out += _remarks(c.explanation)
    return "\n".join(out) + "\n"


def _remarks(text: str, context: int = 14) -> list[str]:
    lines = text.splitlines()
    for k, ln in enumerate(lines):
        if "HAZARD" in ln or "count" in ln:
            return ["  " + x for x in lines[max(0, k - 3):k + context]]
    return ["  " + x for x in lines[:context]]


def files_of(c: Checked) -> dict[str, str]:
    assert c.exo is not None and c.exo_source is not None
    header = "".join(f"# defines: {k}={v}\n" for k, v in c.defines.items())
    verdicts = {"exo": c.exo.verdict.as_json(),
                "gpusem": {r: v.as_json() for r, v in c.gpusem.items()},
                "disagree_under": list(c.comparison.disagree_under),
                "rule": rule_key(c), "mutation": c.mutation}
    return {"program.gpuir": header + c.source,
            "program_exo.py": c.exo_source.standalone(),
            "defines.json": json.dumps(c.defines) + "\n",
            "verdicts.json": json.dumps(verdicts, indent=1) + "\n",
            "trace.txt": trace(c)}


def result_of(c: Checked) -> CheckResult:
    """The campaign's verdict on a checked program: pass, or the finding with its
    bundle files."""
    if c.comparison.agree:
        return CheckResult("pass")
    return CheckResult("finding", c.comparison.signature, c.comparison.kind,
                       describe(c), files_of(c), c.source.count("\n"))
