"""The language registry, beside the target registry (`fuzz/targets.py`) and the
engine registry (`fuzz/engines/registry.py`): what gpusem does with a file of each
language, found by the file's suffix.

A language is one `Language` value: its suffixes, its parser, and one handler per verb
it takes part in (check, run, compile, standalone, exec, synccheck, step); a verb a
language has no handler for refuses its files with a one-line BadInput. Adding a
language is one registration (`register`), in its own module beside `bundl.py`,
`gpuir.py`, `appy.py`, `cypress.py`, `prism.py` and `lambdacu.py`; the verbs (`api/files.py`)
never name a language.

Why at the api stage: a registration gathers every stage of its language (the parser
of calculus/, the checker of typing_rules/, the machine and debugger of interpreter/,
the compiler of compiler/, and for `exec` the oracle of fuzz/), and only api may import
them all. The languages stay independent below it (import-linter).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpusem.api.options import (
    CheckOptions,
    CompileOptions,
    ExecOptions,
    RunOptions,
    StepOptions,
    SyncOptions,
)
from gpusem.api.results import (
    CheckReport,
    CompileReport,
    ExecReport,
    RunReport,
    SyncReport,
)
from gpusem.calculus.errors import BadInput

if TYPE_CHECKING:
    from gpusem.interpreter.debugger import Debugger


@dataclass(frozen=True)
class Language:
    """One language gpusem reads: `parse(text, file)` gives its program; each verb
    handler takes the file's path and the verb's options."""

    name: str
    suffixes: tuple[str, ...]
    parse: Callable[[str, str], object]
    check: Callable[[str, CheckOptions], CheckReport] | None = None
    run: Callable[[str, RunOptions], RunReport] | None = None
    compile: Callable[[str, CompileOptions], CompileReport] | None = None
    standalone: Callable[[str, CompileOptions], CompileReport] | None = None
    exec: Callable[[str, ExecOptions], ExecReport] | None = None
    synccheck: Callable[[str, SyncOptions], SyncReport] | None = None
    step: Callable[[str, StepOptions], Debugger] | None = None


# The built-in languages, each registered by its own module (imported on first use:
# `gpusem --help` stays fast). Order matters only for the "expected ..." message.
BUILT_IN = ("gpusem.api.bundl", "gpusem.api.gpuir", "gpusem.api.appy",
            "gpusem.api.cypress", "gpusem.api.prism", "gpusem.api.lambdacu")
# Which built-in module holds each built-in suffix, so that a file verb imports its
# own language's stages only: loading all six (their parsers, NumPy) was ~0.4 CPU-s of
# every `gpusem check` (scripts/measure_cli_start.py). Pinned to the modules'
# LANGUAGES by tests/api/test_front_door.py.
BUILT_IN_SUFFIXES = {".bundl": "gpusem.api.bundl", ".gpuir": "gpusem.api.gpuir",
                     ".amir": "gpusem.api.gpuir", ".py": "gpusem.api.appy",
                     ".cyp": "gpusem.api.cypress", ".prism": "gpusem.api.prism",
                     ".lcu": "gpusem.api.lambdacu"}
_REGISTRY: dict[str, Language] = {}
_loaded = False


def register(language: Language) -> None:
    """Add (or replace) a language; its suffixes must not belong to another one."""
    for other in languages().values():
        taken = set(other.suffixes) & set(language.suffixes)
        if other.name != language.name and taken:
            raise ValueError(f"language {language.name}: suffix {min(taken)} "
                             f"belongs to {other.name}")
    _REGISTRY[language.name] = language


def unregister(name: str) -> None:
    """Remove a language registered by `register` (a test's, a plugin's)."""
    languages()
    _REGISTRY.pop(name, None)


def languages() -> dict[str, Language]:
    """Every registered language by name, the built-in ones first."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILT_IN:
            for language in importlib.import_module(module).LANGUAGES:
                _REGISTRY.setdefault(language.name, language)
    return dict(_REGISTRY)


def language_of(path: str) -> Language:
    """The language of a file, by its suffix (BadInput for an unknown suffix)."""
    suffix = Path(path).suffix
    if not _loaded and suffix in BUILT_IN_SUFFIXES:
        # nothing registered yet (`register` loads every built-in first): the one
        # module, not added to the registry, whose order `languages()` keeps
        module = importlib.import_module(BUILT_IN_SUFFIXES[suffix])
        return next(lang for lang in module.LANGUAGES if suffix in lang.suffixes)
    known = languages()
    for language in known.values():
        if suffix in language.suffixes:
            return language
    every = [s for lang in known.values() for s in lang.suffixes]
    expected = ", ".join(every[:-1]) + f" or {every[-1]}" if len(every) > 1 else every[0]
    raise BadInput(f"unknown file kind: {path} (expected {expected})")


__all__ = ["Language", "language_of", "languages", "register", "unregister"]
