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
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

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
    program_file: str = ""  # the bundle file holding the program, and the line the
    line: int = 0  # finding points at (reports: SARIF locations)
    # the configurations (of a toolchain matrix) that compared this program: the
    # campaign counts them per configuration (the report's `by_configuration`)
    configs: tuple[str, ...] = ()


class Target:
    """The interface of a compiler under test. Subclasses set the three class
    attributes and implement `strategy`, `check`, `size` and `replay`; the rest have
    defaults."""

    name: str = ""
    properties: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("cpu",)
    # Whose bug an exception out of this target's methods is (`crash_result`): None
    # decides by where the class lives (in gpusem's package: gpusem's own, kind
    # `internal`, exit 3; in a plugin's package: the plugin's, kind `target-crash`).
    crashes_are_gpusem_bugs: bool | None = None
    # What every check of this target imports, tried before a campaign's first
    # program (`preflight`): a campaign without z3 ran its whole budget into 13,235
    # identical internal findings (issue 23). Per property and backend:
    # `requirements`. `requires_on`: more for one backend (CUDA_RUNTIME for the
    # targets that run kernels through NVRTC and CuPy on `cuda`).
    requires: tuple[Requirement, ...] = ()
    requires_on: ClassVar[Mapping[str, tuple[Requirement, ...]]] = {}

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

    def requirements(self, prop: str) -> tuple[Requirement, ...]:
        """The modules a check of `prop` on this target's backend needs (`preflight`
        imports them in a child process): `requires`, and the backend's
        (`requires_on`)."""
        return (*self.requires, *self.requires_on.get(self.backend, ()))

    # Optional: `probe(prop) -> str | None`, what `preflight` asks after the imports,
    # in the campaign's process (so it must not import CuPy there): None when the
    # target can check `prop`, else why not in a few words ("nvcc not found").
    # Optional: `warm(prop) -> None`, start now what the first check of `prop` waits
    # for (a backend's worker process) without waiting for it: a Dask worker asks it
    # once the preflight passed, before its first piece (`engines/dask_start.py`).

    def prefetch(self, programs: list, prop: str) -> bool:
        """Check a whole round at once (one build for many kernels). True when `check`
        of those programs is now a cache look-up; False (the default) when nothing was
        done."""
        return False

    def begin_round(self, index: int | None) -> None:
        """The campaign starts the shard's round number `index` (0, 1, 2, ... of this
        shard, whoever runs it: the same under `--resume` and the engines' pieces);
        None: what follows is no round's (shrinking, replay), so check in full. A
        target may check some rounds less than others (the Bundl `toolchain`
        property: nvcc-G on every K-th round only). Default: nothing."""

    def minimise(self, program: Any, result: CheckResult, prop: str,
                 budget_s: float | None = None) -> CheckResult:
        """Shrink a finding beyond hypothesis's shrinking (default: as it is), in at
        most `budget_s` seconds (what --shrink-time leaves after hypothesis; None: the
        target's own default). `gpusem reduce` calls it too."""
        return result

    def confirm(self, program: Any, result: CheckResult, prop: str) -> CheckResult:
        """Check a `timeout` finding again, with a longer limit and a fresh worker
        where the target has them (default: check it again). The campaign reports a
        timeout only when this gives the same signature (issue 15: a watchdog under
        load is not a bug)."""
        return self.check(program, prop)

    def program_files(self, program: Any) -> dict[str, str]:
        """The program as bundle files, for findings the target did not describe
        itself (internal errors): its text, so the bundle replays."""
        return {"program.txt": repr(program) + "\n"}

    # Optional: `coverage(program) -> set[str]`, the rules and constructs a program
    # exercises (typing rules, step rules, compiler paths), for the campaign's
    # coverage table (`gpusem fuzz --coverage`: programs per 10,000 per label, in the
    # JSON report too); a target without it reports none. `coverage_labels() ->
    # tuple[str, ...]`, if present, lists every label, so the table shows those at 0.

    # Optional: `attribute(result, prop) -> dict | None`, whose bug a finding is
    # (`fuzz/attribution.py`: verdict, rule, evidence, the toolchain matrix's runs);
    # the campaign calls it once per new bundle, in the shard that found it, and once
    # more when a completed shrink ends in another program, and writes it as
    # `attribution.json`, naming the program (a result that has that file already is
    # not asked again): a shrink cut at the deadline keeps the first.

    def finding_meta(self, result: CheckResult) -> dict:
        """Extra bundle metadata: tool versions, the device, the fault switched on."""
        return {}

    def close(self) -> None:
        """Release backends and workers at the end of a campaign."""


@dataclass(frozen=True)
class Requirement:
    """A module a target needs (`module`, its import name), the distribution that
    provides it (`package`, for the message) and, optionally, `smoke`: a dotted
    callable of it that must run without raising (CuPy imports on a machine with no
    driver; `getDeviceCount` does not)."""

    module: str
    package: str = ""
    smoke: str = ""


# The race checker of Bundl (typing_rules/bundl/race.py) and lambda-cu's fusion ILP
Z3 = Requirement("z3", "z3-solver")
# The cuda backend (compiler/backends/cuda): CuPy, a device, NVRTC, by the module the
# worker imports it from (cuda_worker.py): CuPy 14 has no `cupy.cuda.nvrtc`, and
# naming that one stopped every cuda campaign at its preflight on the H200s' CuPy 14.2
CUDA_RUNTIME = (
    Requirement("cupy", "cupy-cuda13x", "cupy.cuda.runtime.getDeviceCount"),
    Requirement("cupy_backends.cuda.libs.nvrtc", "cupy-cuda13x",
                "cupy_backends.cuda.libs.nvrtc.getVersion"))
# The child that tries them prints the first that fails, as `module\tWHY`; nothing
# (CuPy, a CUDA context) loads into the campaign's own process, whose shards are
# spawned after it (`fuzz/engines/local.py`)
_TRY = """
import importlib, sys
for module, smoke in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        importlib.import_module(module)
        if smoke:
            owner, _, name = smoke.rpartition(".")
            getattr(importlib.import_module(owner), name)()
    except BaseException as err:
        why = (type(err).__name__ + ": " + str(err)).replace(chr(10), " ")[:200]
        print(module + chr(9) + why)
        break
"""
PREFLIGHT_TIMEOUT_S = 120.0


def preflight(target: Target, prop: str) -> str | None:
    """None when `target` can check `prop`: every module of its `requirements`
    imports (and its smoke call runs) in a child process, and its optional `probe`
    says yes; else ONE line naming the missing module (or the probe's reason) and
    the target that needs it, for the campaign to stop on before its first program
    (exit 2)."""
    import subprocess
    import sys

    name = getattr(target, "name", "") or type(target).__name__
    where = f"target {name} (property {prop}, backend {target.backend})"
    reqs = getattr(target, "requirements", None)
    needed = tuple(reqs(prop)) if reqs is not None else ()
    if needed:
        argv = [x for r in needed for x in (r.module, r.smoke)]
        try:
            done = subprocess.run([sys.executable, "-c", _TRY, *argv],
                                  capture_output=True, text=True, check=False,
                                  timeout=PREFLIGHT_TIMEOUT_S)
            bad = done.stdout.strip() or (
                "" if done.returncode == 0 else f"?\tchild exit {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as err:
            bad = f"?\t{type(err).__name__}: {err}"
        if bad:
            module, _, why = bad.partition("\t")
            pkg = next((r.package for r in needed if r.module == module), "")
            also = f" (pip package {pkg})" if pkg and pkg != module else ""
            return (f"preflight: {where} needs module {module}{also}, which does not "
                    f"work here: {why}")
    probe = getattr(target, "probe", None)
    if probe is not None:
        try:
            why = probe(prop)
        except Exception as err:  # noqa: BLE001 - the probe's failure is the answer
            why = f"{type(err).__name__}: {err}"
        if why:
            return f"preflight: {where} cannot run: {str(why).splitlines()[0][:200]}"
    return None


def preflight_target(name: str, backend: str, props: Sequence[str]) -> str | None:
    """`preflight` of each of `props` on target `name` loaded for `backend` here (the
    campaign's machine, or a Dask worker): the first failure's line, None when all
    pass."""
    target = load_target(name, backend)
    try:
        for prop in props:
            why = preflight(target, prop)
            if why is not None:
                return why
        return None
    finally:
        target.close()


TargetFactory = Callable[..., Target] | str

# Targets registered at run time; they take precedence over entry points.
RUNTIME_TARGETS: dict[str, TargetFactory] = {}


@contextmanager
def bundle_fault(meta: dict) -> Iterator[None]:
    """A bundle found under a seeded fault replays with that fault on (its meta's
    `fault`), unless GPUSEM_FAULT is set already; the environment as it was after."""
    saved = os.environ.get("GPUSEM_FAULT")
    if meta.get("fault") and not saved:
        os.environ["GPUSEM_FAULT"] = str(meta["fault"])
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("GPUSEM_FAULT", None)
        else:
            os.environ["GPUSEM_FAULT"] = saved


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
    """target.check, with any exception out of it (a generator that built an invalid
    program, an evaluator that rejects a valid one, a crash of gpusem's own code or of
    a plugin's) turned into a finding (`crash_result`: kind `internal` or
    `target-crash`): counted, shrunk and bundled like any other, never a crash of the
    campaign and never silently dropped (issue 15)."""
    try:
        return target.check(program, prop)
    except Exception as err:  # noqa: BLE001 - every error is reported as a finding
        return crash_result(target, err, _program_files(target, program),
                            _size(target, program))


TARGET_CRASH = "target-crash"
_PACKAGE = Path(__file__).resolve().parents[1]  # src/gpusem/


def crash_result(target: Any, err: BaseException, files: dict[str, str] | None = None,
                 size: int = 0, stage: str = "") -> CheckResult:
    """An exception out of a target's method, attributed (issue 32.12): gpusem's own
    bug (kind `internal`, exit 3) when it was raised in gpusem's code or the target is
    one of gpusem's; else the plugin's or its compiler's crash, a finding of kind
    `target-crash` (exit 1) naming the target, so a team's CI blames their compiler
    and not gpusem."""
    res = internal_result(err, files, size, stage)
    if raised_in_gpusem(err) or crashes_are_ours(target):
        return res
    name = getattr(target, "name", "") or type(target).__name__
    sig = TARGET_CRASH + res.signature[len(INTERNAL):]
    return CheckResult("finding", signature=sig, kind=TARGET_CRASH,
                       detail=f"{name} crashed: {res.detail}"[:200], files=res.files,
                       size=size)


def crashes_are_ours(target: Any) -> bool:
    declared = getattr(target, "crashes_are_gpusem_bugs", None)
    if declared is not None:
        return bool(declared)
    module = type(target).__module__
    return module == "gpusem" or module.startswith("gpusem.")


def raised_in_gpusem(err: BaseException) -> bool:
    """The innermost frame that raised `err`, the standard library's frames skipped
    (a `json.loads` that gpusem called wrongly is gpusem's), is in gpusem's package:
    a plugin that calls gpusem's library and meets gpusem's bug."""
    import sysconfig
    import traceback

    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    for frame in reversed(traceback.extract_tb(err.__traceback__)):
        where = Path(frame.filename).resolve()
        if not where.is_relative_to(stdlib):
            return where.is_relative_to(_PACKAGE)
    return False


def _program_files(target: Any, program: Any) -> dict[str, str]:
    try:
        files = target.program_files(program) if hasattr(target, "program_files") else {}
        return dict(files) or {"program.txt": repr(program) + "\n"}
    except Exception:  # noqa: BLE001 - the error being reported comes first
        return {"program.txt": repr(program) + "\n"}


def _size(target: Any, program: Any) -> int:
    try:
        return int(target.size(program))
    except Exception:  # noqa: BLE001
        return 0


INTERNAL = "internal"


def internal_result(err: BaseException, files: dict[str, str] | None = None,
                    size: int = 0, stage: str = "") -> CheckResult:
    """A finding of kind `internal` for an exception of gpusem (or of a target's
    code): signature `internal:[STAGE:]CLASS:WHERE`, WHERE the rule and message prefix
    of a GpusemError or the innermost frame that raised, so distinct crash sites stay
    apart; the traceback goes in `trace.txt`."""
    import traceback

    if isinstance(err, GpusemError):
        where = f"{err.rule or type(err).__name__}:{err.prefix}"
        detail = err.one_line()
    else:
        frames = traceback.extract_tb(err.__traceback__)
        last = frames[-1] if frames else None
        where = (f"{type(err).__name__}:{Path(last.filename).stem}.{last.name}"
                 if last else type(err).__name__)
        detail = f"{type(err).__name__}: {err}".replace("\n", " ")
    trace = "".join(traceback.format_exception(err))
    sig = f"{INTERNAL}:{stage + ':' if stage else ''}{where}"
    return CheckResult("finding", signature=sig, kind=INTERNAL, detail=detail[:200],
                       files=dict(files or {}) | {"trace.txt": trace}, size=size)


def is_timeout(res: CheckResult) -> bool:
    """A finding that says only "it took too long" (a watchdog, a hang)."""
    parts = res.signature.split(":")
    return res.status == "finding" and any(p in ("timeout", "hang") for p in parts)


def same_finding(expected: str, now: str) -> bool:
    """`now` is the bundle's signature, or refines it (a bundle written before the
    signature gained parts: `compile:disagree:disagree` is refined by
    `compile:disagree:disagree:out:...`)."""
    return now == expected or now.startswith(expected + ":")


def replayed(target: Target, files: dict[str, str], meta: dict) -> CheckResult:
    """target.replay, with an exception out of it an `internal` finding (as `checked`);
    a bundle that lacks a file the target needs, or names a property the target does
    not have, is BadInput (a malformed bundle: exit 2, one line)."""
    prop = meta.get("property")
    if prop not in target.properties:
        raise BadInput(f"malformed bundle: unknown property {prop!r} for target "
                       f"{target.name} ({', '.join(target.properties)})")
    try:
        return target.replay(files, meta)
    except BadInput:
        raise
    except KeyError as err:
        raise BadInput(f"malformed bundle: missing file or key {err}") from None
    except Exception as err:  # noqa: BLE001
        return internal_result(err)


def ptx_probe(target) -> str | None:
    """The `ptx` property's preflight (Bundl and GPU IR targets): the reason when no
    NVRTC is installed. In the preflight, not only at the first draw: a campaign
    whose start outlived its budget (`--budget 5s` on a loaded machine) ended in
    "nothing checked" (exit 4) before any draw asked, instead of this bad input."""
    try:
        target.nvrtcs()
    except BadInput as err:
        return str(err)
    return None
