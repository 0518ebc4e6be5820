"""Which rules and lowering paths a Bundl program exercises, per property (issue 14,
item 7): the rows of a campaign's coverage table.

Three judgments, each naming its rules as the code that implements them does:

  typing     T-* and V-Function: the rules of the program's typing derivation, the
             expression rules inside it included (typing_rules/bundl/derivation.py)
  semantics  S-* and E-*: the rules one round-robin run applies
             (interpreter/bundl/coverage.py)
  compiler   compile:<pass>:<case>: the lowering paths its compilation takes
             (compiler/bundl_cuda/paths.py)

A property exercises the judgments it runs: the compiler properties all three,
printparse the syntax (reported as its typing derivation's rules), the others typing
and semantics. `universe(prop)` lists every name that can appear for a property: a
name no generated program reaches is a blind spot of the oracle, not a pass.
"""

from __future__ import annotations

from gpusem.calculus.bundl import ast as A

JUDGMENTS: dict[str, tuple[str, ...]] = {
    "compile": ("typing", "semantics", "compiler"),
    "motion": ("typing", "semantics", "compiler"),
    "prism-sync": ("typing", "semantics", "compiler"),
    "toolchain": ("typing", "semantics", "compiler"),
    "soundness": ("typing", "semantics"),
    "determinism": ("typing", "semantics"),
    "bigsmall": ("typing", "semantics"),
    "teeth": ("typing", "semantics"),
    "soundness-paper": ("typing", "semantics"),
    "printparse": ("typing",),
    "ptx": ("typing", "compiler"),  # + the ptx labels (BundlTarget.coverage_labels)
}
ALL = ("typing", "semantics", "compiler")
MAX_STEPS = 200_000  # a coverage run's step budget (a budget run still counts its rules)


def judgments(prop: str | None) -> tuple[str, ...]:
    return JUDGMENTS.get(prop, ALL) if prop is not None else ALL


def universe(prop: str | None = None) -> tuple[str, ...]:
    """Every name `coverage(_, prop)` can return, in table order."""
    from gpusem.compiler.bundl_cuda.paths import PATHS, SYNC_PRISM_PATHS
    from gpusem.interpreter.bundl.coverage import EXPR_RULES, STEP_RULES
    from gpusem.typing_rules.bundl.derivation import TYPING_RULES

    parts = {"typing": TYPING_RULES, "semantics": (*STEP_RULES, *EXPR_RULES),
             "compiler": (*PATHS, *(SYNC_PRISM_PATHS if prop == "prism-sync" else ()))}
    return tuple(name for j in judgments(prop) for name in parts[j])


def coverage(prog: A.Program, prop: str | None = None) -> set[str]:
    """The names of `universe(prop)` that `prog` exercises."""
    out: set[str] = set()
    wanted = judgments(prop)
    if "typing" in wanted:
        out |= typing_rules(prog)
    if "semantics" in wanted:
        out |= semantic_rules(prog)
    if "compiler" in wanted:
        out |= lowering_paths(prog, sync=sync_of(prop))
    return out


def typing_rules(prog: A.Program) -> set[str]:
    from gpusem.typing_rules.bundl.derivation import rules_used

    return rules_used(prog)


def semantic_rules(prog: A.Program, schedule: str = "rr") -> set[str]:
    from gpusem.interpreter.bundl.schedulers import run_program

    seen: set[str] = set()
    run_program(prog, schedule, max_steps=MAX_STEPS, seen=seen)
    return seen


def sync_of(prop: str | None) -> str:
    """The barrier placement a property compiles with (motion for the others)."""
    from gpusem.fuzz.bundl.compile_property import SYNC_OF_PROPERTY

    return SYNC_OF_PROPERTY.get(prop or "", "motion")


def lowering_paths(prog: A.Program, sync_motion: bool = True,
                   sync: str = "") -> set[str]:
    """The paths of one compilation (to the last KIR pass; emission adds none). A
    compilation that stops with a CompileError counts the paths it took."""
    from gpusem.compiler.bundl_cuda.errors import CompileError
    from gpusem.compiler.bundl_cuda.paths import recording
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_to_kir

    with recording() as paths:
        try:
            compile_to_kir(prog, CompileOptions(sync_motion=sync_motion, sync=sync))
        except CompileError:
            pass
    return set(paths)
