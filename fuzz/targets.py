"""Compilers under test as plugins: the `Target` interface, the verdict a check returns,
and the registry that finds targets through the `gpusem.targets` entry point group.

A target is one object per campaign process, made as `factory(backend=...)`. It
generates programs (a hypothesis strategy per property), checks one (compile it with the
compiler under test, run it on a backend, compare with the reference semantics), says
how big a program is, shrinks a finding further than hypothesis does (optional), and
describes a finding for its bundle. The built-in targets (`bundl`, `gpuir`, `appy`)
register themselves through pyproject.toml exactly as a compiler team's own package
does:

    [project.entry-points."gpusem.targets"]
    mycc = "mycc_gpusem.target:MyccTarget"

`register_target` adds one at run time (tests, notebooks).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from gpusem.calculus.errors import BadInput, GpusemError

ENTRY_POINT_GROUP = "gpusem.targets"


@dataclass
class CheckResult:
    """The verdict on one program: `pass`, `finding`, `invalid` (not a legal program for
    the property: racy, rejected, not comparable) or `skip` (not runnable here)."""

    status: str
    signature: str = ""
    kind: str = ""
    detail: str = ""
    files: dict[str, str] = field(default_factory=dict)
    size: int = 0
    seconds: float = 0.0


class Target:
    """The interface of a compiler under test. Subclasses set the three class
    attributes and implement `strategy`, `check`, `size` and `replay`; the rest have
    defaults."""

    name: str = ""
    properties: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("cpu",)

    def __init__(self, backend: str = "cpu") -> None:
        self.backend = backend

    def strategy(self, prop: str) -> Any:
        """A hypothesis strategy of programs for property `prop`."""
        raise NotImplementedError

    def check(self, program: Any, prop: str) -> CheckResult:
        """Compile, run, compare: the verdict on one program."""
        raise NotImplementedError

    def size(self, program: Any) -> int:
        """The program's size in statements (reports, shrinking)."""
        raise NotImplementedError

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        """Re-run a bundle (its files and its bundle.json) and give the verdict now."""
        raise NotImplementedError

    def prefetch(self, programs: list, prop: str) -> bool:
        """Check a whole round at once (one build for many kernels). True when `check`
        of those programs is now a cache look-up; False (the default) when nothing was
        done."""
        return False

    def minimise(self, program: Any, result: CheckResult, prop: str) -> CheckResult:
        """Shrink a finding beyond hypothesis's shrinking (default: as it is)."""
        return result

    def finding_meta(self, result: CheckResult) -> dict:
        """Extra bundle metadata: tool versions, the device, the fault switched on."""
        return {}

    def close(self) -> None:
        """Release backends and workers at the end of a campaign."""


TargetFactory = Callable[..., Target] | str

# Targets registered at run time; they take precedence over entry points.
RUNTIME_TARGETS: dict[str, TargetFactory] = {}


def register_target(name: str, factory: TargetFactory) -> None:
    """Plug a target in at run time: a "module:Class" path or a callable taking
    `backend=`."""
    RUNTIME_TARGETS[name] = factory


def known_targets() -> dict[str, TargetFactory]:
    """Every target: entry points of installed packages, then run-time ones."""
    found: dict[str, TargetFactory] = {
        ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return found | RUNTIME_TARGETS


def load_target(name: str, backend: str) -> Target:
    targets = known_targets()
    if name not in targets:
        raise BadInput(f"unknown target: {name} (known: {', '.join(sorted(targets))})")
    factory = targets[name]
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    target = factory(backend=backend)
    if backend not in target.backends:
        raise BadInput(f"unknown backend: {backend} for target {name} "
                       f"(expected {' or '.join(target.backends)})")
    return target


def checked(target: Target, program: Any, prop: str) -> CheckResult:
    """target.check, with an error of our own tools on a generated program (a generator
    that built an invalid program, an evaluator that rejects a valid one) turned into a
    finding of kind `internal`: shrunk and bundled like any other, never a crash of
    the campaign."""
    try:
        return target.check(program, prop)
    except GpusemError as err:
        rule = err.rule or type(err).__name__
        return CheckResult("finding", signature=f"internal:{rule}:{err.prefix}",
                           kind="internal error", detail=err.one_line()[:200],
                           files={"trace.txt": err.one_line() + "\n"},
                           size=target.size(program))
