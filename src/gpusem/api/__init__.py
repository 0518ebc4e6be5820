"""gpusem as a library (issue 18), and the one front door of the command line: the
functions behind every `gpusem` verb, for a compiler team's scripts, notebooks and
tests. The CLI verbs call these and nothing else (an import-linter contract).

    from gpusem import api

    report = api.check_file("kernel.bundl")    # any language, by its suffix
    report.ok, report.exit_code, report.stdout # typed, frozen reports

    prog = api.load("kernel.bundl")            # parse (calculus/bundl)
    assert api.check(prog) == []               # Γ ⊢ prog (typing_rules/bundl)
    out = api.run(prog)                        # the small-step machine
    kernel = api.compile(prog)                 # Bundl -> CUDA C++ (.source)
    verdict = api.exec(prog, backend="cpu")    # compile, run, compare
    result = api.fuzz("bundl", budget_s=60,    # a campaign; a callback per finding
                      on_finding=lambda f: print(f.signature, f.bundle))

The file verbs (`check_file`, `run_file`, `compile_file`, `exec_file`,
`synccheck_file`, `step_file`) take a path of any registered language
(`api/languages.py`: Bundl, GPU IR, AMIR, APPy) and a frozen options value; the
program functions (`parse` ... `exec`) take a parsed Bundl program; the campaign
functions (`fuzz`/`campaign`, `replay`, `generate`, `reduce`, `triage`) take any
target's. Errors are the `gpusem.calculus.errors` taxonomy (`BadInput`, `IllTyped`,
`Stuck`, ...), re-exported here; nothing here prints or exits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpusem.api.campaigns import (
    campaign,
    corpus_exit_code,
    fuzz,
    generate,
    install_signal_handlers,
    process_started_at,
    progress_every_s,
    rate_shown,
    redecide,
    reduce,
    reduce_bundle,
    reduce_program_file,
    replay,
    replay_corpus,
    step_bundle,
    target_properties,
    triage,
)
from gpusem.api.cuda_reduce import reduce_cuda
from gpusem.api.files import (
    check_file,
    compile_file,
    exec_file,
    parse_file,
    run_file,
    step_file,
    synccheck_file,
)
from gpusem.api.languages import (
    Language,
    language_of,
    languages,
    register,
    unregister,
)
from gpusem.api.options import (
    CheckOptions,
    CompileOptions,
    ExecOptions,
    RunOptions,
    StepOptions,
    SyncOptions,
    parse_defines,
    parse_schedules,
)
from gpusem.api.programs import check, compile, exec, load, parse, run, standalone
from gpusem.api.results import (
    CheckReport,
    Chunk,
    CompileReport,
    ExecReport,
    KernelInfo,
    Report,
    RunReport,
    SyncReport,
)
from gpusem.api.writing import open_output, write_output
from gpusem.calculus import budgets
from gpusem.calculus.errors import BadInput, GpusemError, IllTyped
from gpusem.calculus.source import read_source
from gpusem.interpreter.debugger import Command, Debugger, Ending, Grid, Line, Shown

if TYPE_CHECKING:
    from gpusem.api.ptx import (
        PtxCheckReport,
        PtxFileReport,
        cuda_source,
        ptx_check,
        ptx_check_file,
    )
    from gpusem.fuzz.bundl.reduce import Reduced
    from gpusem.fuzz.driver import CampaignResult, CampaignSpec
    from gpusem.fuzz.progress import ProgressLines
    from gpusem.fuzz.redecide import Redecision
    from gpusem.fuzz.replay import CorpusRow, Replay
    from gpusem.fuzz.triage import TriageRow

# The campaign types load the fuzzer: only when asked for (`gpusem --help` and the
# file verbs stay quick).
_LAZY = {"CampaignSpec": "gpusem.fuzz.driver", "CampaignResult": "gpusem.fuzz.driver",
         "Reduced": "gpusem.fuzz.bundl.reduce", "Replay": "gpusem.fuzz.replay",
         "CorpusRow": "gpusem.fuzz.replay",
         "TriageRow": "gpusem.fuzz.triage", "Redecision": "gpusem.fuzz.redecide",
         "ProgressLines": "gpusem.fuzz.progress",
         # the PTX check loads the backends (NumPy, ctypes NVRTC): ~0.25 CPU-s of every
         # verb's start that only `gpusem compile --ptx-check` uses
         "PtxCheckReport": "gpusem.api.ptx", "PtxFileReport": "gpusem.api.ptx",
         "cuda_source": "gpusem.api.ptx", "ptx_check": "gpusem.api.ptx",
         "ptx_check_file": "gpusem.api.ptx",
         "EXIT_NOTHING_CHECKED": "gpusem.fuzz.reports",
         # the campaigns' generation modes (`gpusem fuzz --generation`): a light module
         "GENERATIONS": "gpusem.fuzz.direct", "DEFAULT_GENERATION": "gpusem.fuzz.direct"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gpusem.api' has no attribute {name!r}")


__all__ = ["DEFAULT_GENERATION", "EXIT_NOTHING_CHECKED", "GENERATIONS", "BadInput", "CampaignResult", "CampaignSpec",
           "CheckOptions", "CheckReport", "Chunk", "Command", "CompileOptions",
           "CompileReport", "CorpusRow", "Debugger", "Ending", "ExecOptions",
           "ExecReport", "GpusemError", "Grid", "IllTyped", "KernelInfo", "Language",
           "Line", "ProgressLines", "PtxCheckReport", "PtxFileReport", "Redecision",
           "Reduced", "Replay", "Report", "RunOptions", "RunReport", "Shown", "StepOptions",
           "SyncOptions", "SyncReport", "TriageRow", "budgets", "campaign", "check",
           "check_file", "compile", "compile_file", "corpus_exit_code", "cuda_source",
           "exec", "exec_file", "fuzz", "generate", "install_signal_handlers",
           "language_of", "languages", "load", "open_output", "parse", "parse_defines",
           "parse_file", "parse_schedules", "process_started_at", "progress_every_s", "ptx_check",
           "ptx_check_file", "rate_shown", "read_source", "redecide", "reduce", "reduce_bundle",
           "reduce_cuda", "reduce_program_file", "register", "replay", "replay_corpus",
           "run", "run_file", "standalone", "step_bundle", "step_file",
           "synccheck_file", "target_properties", "triage", "unregister",
           "write_output"]
