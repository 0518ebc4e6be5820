"""The rule names of the small-step interpreter (Appendix A.3), for the debugger's
`break RULE` completion: every name a step or a stuck state of `small_step` /
`small_step_data` can report. `tests/bundl/test_debug_rules.py` derives the same set
from the interpreter's source, so this list cannot fall behind it."""

RULES = (
    "S-Program", "S-Split-Left", "S-Split-Left-Done", "S-Split-Right",
    "S-Split-Right-Done", "S-Split-None", "S-Destruct-Block", "S-Destruct-Grid",
    "S-Destruct-Done", "S-Group", "S-Group-Done", "S-Sync-Wait-Done", "S-Sync-Wait-Spin",
    "S-Sync-Dec", "S-Sync-Init-Zero", "S-Sync-Init-Nonzero", "S-Async-Partition-Congr",
    "S-Async-Partition-Unwind", "S-Async-Partition-Done", "S-Async-Memcpy", "S-Memcpy",
    "S-Decl", "S-Free", "S-Alloc-Local", "S-Alloc-Shared", "S-Alloc-Global", "S-Assn",
    "S-Arr-Assn", "S-Partition", "S-Claim", "S-Lower", "S-If-True", "S-If-False",
    "S-While", "S-Seq-First", "S-Seq-Done", "S-Function-Call",
    # the fixed S-Claim's runtime form (errata "S-Claim runs its body at the unsplit
    # perspective"): the claimed body, its end, and the threads that skip it
    "S-Claim-Body", "S-Claim-Done", "S-Claim-Skip",
    # our extensions for Prism's surface (errata "Extension: partition at an offset",
    # "Extension: Local arrays at a declared perspective")
    *("S-Partition-Offset", "S-Alloc-Local-At"),
    # names of stuck states where no single rule of a family applies
    "S-If", "S-Split", "S-Arr-Assn-Shared",
)

# The rules of our extensions for Prism's surface language: Bundl's own generators do
# not write them (the prism target's programs do), so Bundl's coverage universe
# (`interpreter/bundl/coverage.py`) leaves them out rather than report a blind spot.
SURFACE_RULES = ("S-Partition-Offset", "S-Alloc-Local-At")

# The expression rules (A.3.7) a step reports beside its statement rule (`break E-Bop`)
EXPR_RULES = (
    "E-Arr-Access", "E-Arr-Access-Shared", "E-Bool", "E-Bop", "E-Cmp", "E-Float",
    "E-Fma", "E-Int", "E-Partition-Id", "E-Unop", "E-Var",
)
