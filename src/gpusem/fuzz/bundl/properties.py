"""The Bundl oracle properties beyond compile/soundness (DESIGN.md's table, issue 5):

  teeth            mutants breaking one typing rule (fuzz/bundl/mutators) are rejected
                   naming THAT rule, and where the rule has a dynamic counterpart the
                   small-step check fires whenever the broken site is reached
  determinism      programs the z3 race analysis (typing_rules/bundl/race) proves
                   race-free end in one memory under several random schedules (and
                   exhaustively when tiny)
  bigsmall         big-step (lockstep) = small-step round-robin: kind and global memory
  soundness-paper  programs well-typed under `--rules paper` (the generated ones, and
                   errata-directed mutants of them) run under `--rules paper` with
                   random schedules; stuck states and deadlocks are findings (errata)

Each function takes a program and returns a `campaign.CheckResult`; `bundl/target`
dispatches to them. Signatures name the property, the verdict and the rule, so one
class of finding yields one bundle.
"""

from __future__ import annotations

import hashlib

from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.printer import print_program
from gpusem.calculus.bundl.walk import statement_count
from gpusem.calculus.errors import IllTyped
from gpusem.fuzz.targets import CheckResult

SCHEDULES = ("rr", "random:1", "random:2", "random:3")
MAX_STEPS = 50_000


def _seed(program: A.Program) -> int:
    return int.from_bytes(hashlib.sha256(print_program(program).encode()).digest()[:4],
                          "little")


def _size(program) -> int:

    return statement_count(program)


def _finding(program, signature: str, kind: str, detail: str, trace: str,
             extra: dict | None = None) -> CheckResult:
    files = {"program.bundl": print_program(program), "trace.txt": trace + "\n"}
    files |= extra or {}
    return CheckResult("finding", signature=signature, kind=kind, detail=detail,
                       files=files, size=_size(program))


def _run(program, schedule: str, rules: str = "fixed"):
    from gpusem.interpreter.bundl.schedulers import run_program

    return run_program(program, schedule, max_steps=MAX_STEPS, rules=rules)


# ------------------------------------------------------------------------ teeth


def static_verdict(mutant) -> tuple[bool, str]:
    """(rejected naming the mutant's rule, what the checker said)."""
    from gpusem.typing_rules.bundl.stmt import check_program

    try:
        check_program(mutant.program)
    except IllTyped as err:
        return err.rule in mutant.rules, f"{err.rule}: {err.message}"
    return False, "accepted"


def dynamic_verdict(mutant, schedules=SCHEDULES) -> tuple[bool | None, str]:
    """(fired, detail): None when no schedule reaches the broken site (dead code), or
    when the rule has no dynamic counterpart."""
    from gpusem.fuzz.bundl.mutators import probe

    if not mutant.dynamic or mutant.site is None:
        return None, "no dynamic counterpart"
    reached = [s for s in schedules
               if _is_probe_trap(_run(probe(_parent(mutant), mutant.site), s))]
    if not reached:
        return None, "site not reached"
    outs = []
    for s in reached:
        out = _run(mutant.program, s)
        outs.append(f"{s}: {out.kind} {out.rule}")
        if out.kind in ("stuck", "deadlock") and out.rule in mutant.dynamic:
            return True, outs[-1]
    return False, "; ".join(outs)


def _parent(mutant) -> A.Program:
    return mutant.parent


def _is_probe_trap(out) -> bool:
    return out.kind == "stuck" and out.rule == "E-Bop" and out.message.startswith(
        "division by zero")


def teeth(program: A.Program) -> CheckResult:
    from gpusem.fuzz.bundl.mutators import mutants

    for m in mutants(program, _seed(program)):
        ok, said = static_verdict(m)
        if not ok:
            return _finding(m.program, f"teeth:static:{m.mutator}", "teeth static",
                            f"{m.mutator} at {m.where}: expected {m.rule}, got {said}",
                            f"mutator {m.mutator} at {m.where}\nchecker: {said}")
        fired, detail = dynamic_verdict(m, SCHEDULES[:2])
        if fired is False:
            return _finding(m.program, f"teeth:dynamic:{m.mutator}", "teeth dynamic",
                            f"{m.mutator} at {m.where}: {'/'.join(m.dynamic)} did not "
                            f"fire ({detail})", f"mutator {m.mutator} at {m.where}\n"
                            f"expected stuck in {m.dynamic}\n{detail}")
    return CheckResult("pass")


# ------------------------------------------------------------------ determinism


def determinism(program: A.Program, schedules=SCHEDULES,
                exhaustive_threads: int = 2) -> CheckResult:
    from gpusem.typing_rules.bundl.race import analyse

    report = analyse(program)
    if not report.race_free:
        return CheckResult("invalid", kind="racy", detail=report.describe())
    finals: dict[str, str] = {}
    for s in schedules:
        out = _run(program, s)
        if out.kind == "budget":
            return CheckResult("invalid", kind="budget", detail=out.message)
        finals[s] = f"{out.kind} {out.rule} {out.globals}"
    if len(set(finals.values())) == 1 and _tiny(program, exhaustive_threads):
        out = _run(program, "exhaustive")
        if len(out.final_memories) > 1:
            finals["exhaustive"] = f"{len(out.final_memories)} final memories: " + \
                "; ".join(str(m) for m in out.final_memories[:3])
    if len(set(finals.values())) <= 1:
        return CheckResult("pass")
    trace = "race analysis: " + report.describe() + "\n" + "\n".join(
        f"{s}: {v}" for s, v in finals.items())
    return _finding(program, "determinism:nondeterministic", "determinism",
                    "called race-free but ends in different memories", trace)


def _tiny(program: A.Program, limit: int) -> bool:
    return program.machine.blocks * program.machine.threads <= limit


# --------------------------------------------------------------------- bigsmall


def bigsmall(program: A.Program) -> CheckResult:
    from gpusem.interpreter.bundl.big_step import run_big_step

    small = _run(program, "rr")
    big = run_big_step(program, max_steps=10 * MAX_STEPS)
    if "budget" in (small.kind, big.kind):
        return CheckResult("invalid", kind="budget")
    if (big.kind, big.globals) == (small.kind, small.globals) and (
            small.kind == "terminated" or big.rule == small.rule):
        return CheckResult("pass")
    first = next((k for k in small.globals if big.globals.get(k) != small.globals[k]),
                 "kind")
    trace = (f"small-step rr: {small.kind} {small.rule} {small.message}\n"
             f"big-step:      {big.kind} {big.rule} {big.message}\n"
             f"first difference: {first}")
    return _finding(program, f"bigsmall:{small.kind}-{big.kind}:{first}", "bigsmall",
                    f"small {small.kind}, big {big.kind}; differs at {first}", trace)


# --------------------------------------------------------------- soundness-paper

ERRATA_MUTATORS = ("T-Alloc-Shared", "T-Claim", "T-Assn-Pointer")


def paper_variants(program: A.Program):
    """The program, then its errata-directed mutants (rules the paper omits)."""
    from gpusem.fuzz.bundl.mutators import mutate

    yield program
    for k, name in enumerate(ERRATA_MUTATORS):
        m = mutate(program, name, _seed(program) + k)
        if m is not None:
            yield m.program


def soundness_paper(program: A.Program) -> CheckResult:
    """Theorem 4.1 under the rules as printed: a paper-well-typed program never gets
    stuck (traps aside: division by zero) and, per the fixed generator's
    construction, does not deadlock."""
    from gpusem.typing_rules.bundl.stmt import type_errors

    tried = 0
    for variant in paper_variants(program):
        if type_errors(variant, "paper"):
            continue
        tried += 1
        for s in SCHEDULES:
            out = _run(variant, s, rules="paper")
            arithmetic = out.trap and out.rule in ("E-Bop", "E-Unop")
            if out.kind in ("stuck", "deadlock") and not arithmetic:
                what = "trap" if out.trap else out.kind
                trace = (f"--rules paper, schedule {s}: {out.kind} in {out.rule}: "
                         f"{out.message}\nthread {out.thread} at {out.persp}, cell "
                         f"{out.cell}")
                return _finding(variant, f"soundness-paper:{what}:{out.rule}",
                                f"soundness-paper {what}", f"{out.rule}: {out.message}",
                                trace)
    if not tried:
        return CheckResult("invalid", kind="ill-typed (paper)")
    return CheckResult("pass")
