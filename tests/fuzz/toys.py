"""Toy targets whose behaviour is known exactly, for the campaign's robustness tests
(crashes of gpusem, timeouts, kills). `python -m tests.fuzz.toys ARGS` is `gpusem
ARGS` with these targets registered (for subprocess tests)."""

from __future__ import annotations

import json
import os
import time

from gpusem.fuzz.targets import CheckResult, Target, register_target
from hypothesis import strategies as st


class Toy(Target):
    """Lists of ints; a finding `wrong:big7` when the list holds a 7 and sums to
    >= 50 (minimal: two elements summing to 50)."""

    name = "toys"
    properties = ("compile",)
    # the toys stand in for gpusem's own targets: their crashes are gpusem's bugs
    # (PluginCrashes below is a plugin's)
    crashes_are_gpusem_bugs = True

    def strategy(self, prop):
        return st.lists(st.integers(0, 60), max_size=10)

    def size(self, program) -> int:
        return len(program)

    def program_files(self, program) -> dict[str, str]:
        return {"program.json": json.dumps(list(program))}

    def check(self, program, prop="compile") -> CheckResult:
        xs = list(program)
        if 7 in xs and sum(xs) >= 50:
            if os.environ.get("TOY_SLOW_SHRINK") and len(xs) < 4:
                time.sleep(float(os.environ["TOY_SLOW_SHRINK"]))
            return CheckResult("finding", "wrong:big7", "wrong", f"sum {sum(xs)}",
                               self.program_files(xs), len(xs))
        if os.environ.get("TOY_SLOW"):
            time.sleep(float(os.environ["TOY_SLOW"]))
        if os.environ.get("TOY_FINALISERS"):  # most of the time spent in __del__,
            _Finalised(float(os.environ["TOY_FINALISERS"]))  # where a raised Ctrl-C
        return CheckResult("pass")  # is "ignored" by Python (issue 32.5)

    def replay(self, files, meta) -> CheckResult:
        return self.check(json.loads(files["program.json"]), meta["property"])


class _Finalised:
    """An object whose finaliser takes a while (a Popen, a temporary file, a ctypes
    handle being closed)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __del__(self) -> None:
        t = time.monotonic() + self.seconds
        while time.monotonic() < t:  # busy: signal handlers run between bytecodes
            pass


class AlwaysRaises(Toy):
    def check(self, program, prop="compile"):
        raise RuntimeError("boom in check")


class SometimesRaises(Toy):
    """One program in five (those whose length is 3) crashes the check."""

    def check(self, program, prop="compile"):
        if len(program) == 3:
            return {}["no such key"]  # a KeyError inside gpusem's own code
        return super().check(program, prop)


class PrefetchCrashes(Toy):
    def prefetch(self, programs, prop) -> bool:
        raise ValueError("batch build exploded")


class PluginCrashes(Toy):
    """A team's plugin whose own code (its compiler) crashes on lists of length 3."""

    name = "toy-plugin-crash"
    crashes_are_gpusem_bugs = None  # decided by where the class lives: not gpusem

    def check(self, program, prop="compile"):
        if len(program) == 3:
            raise RuntimeError("\x1b[31mmycc: segfault in codegen\x1b[0m")
        return super().check(program, prop)


class PluginMeetsGpusemBug(PluginCrashes):
    """A plugin that calls gpusem's library on lists of length 3, where gpusem's own
    code raises: gpusem's bug, not the plugin's."""

    def check(self, program, prop="compile"):
        if len(program) == 3:
            from gpusem.fuzz.reports import program_location

            program_location(None)  # a TypeError raised in gpusem's code
        return Toy.check(self, program, prop)


class FlakyTimeout(Toy):
    """Lists of length 5 time out on the first check only (load, not a bug); lists
    holding 42 time out every time (a real hang)."""

    def __init__(self, backend: str = "cpu") -> None:
        super().__init__(backend)
        self.seen: set[tuple] = set()

    def check(self, program, prop="compile"):
        key = tuple(program)
        if 42 in key:
            return CheckResult("finding", "compile:kernel-failed:timeout", "timeout",
                               "watchdog", self.program_files(key), len(key))
        if len(key) == 5 and key not in self.seen:
            self.seen.add(key)
            return CheckResult("finding", "compile:kernel-failed:timeout", "timeout",
                               "watchdog", self.program_files(key), len(key))
        return super().check(program, prop)


class SkipsAll(Toy):
    """Nothing runs on this backend (a cuda-only construct on the cpu harness)."""

    def check(self, program, prop="compile"):
        return CheckResult("skip", detail="not runnable here")


class InvalidAll(Toy):
    """Every program is set aside (racy, illegal): none is compared."""

    def check(self, program, prop="compile"):
        return CheckResult("invalid", detail="racy")


class SlowRound(Toy):
    """Its round outlasts a short budget before any program is compared (appyc's
    first round: the budget is gone before the first program is checked). The
    program is drawn slowly: a batch already paid for is counted whole (its verdicts
    are cached), so the slow part must come before the first check."""

    def strategy(self, prop):
        def slow(xs):
            time.sleep(1.5)
            return xs

        return st.lists(st.integers(0, 60), max_size=10).map(slow)


class Covering(Toy):
    def coverage(self, program) -> set[str]:
        return {"nonempty"} if program else {"empty"}

    def coverage_labels(self) -> tuple[str, ...]:
        return ("empty", "nonempty", "never")


TOYS = {"toys": Toy, "toy-raises": AlwaysRaises, "toy-sometimes": SometimesRaises,
        "toy-prefetch-crash": PrefetchCrashes, "toy-timeout": FlakyTimeout,
        "toy-cover": Covering, "toy-plugin-crash": PluginCrashes,
        "toy-plugin-gpusem-bug": PluginMeetsGpusemBug, "toy-skips": SkipsAll,
        "toy-invalid": InvalidAll, "toy-slow-round": SlowRound}


def register() -> None:
    for name, cls in TOYS.items():
        register_target(name, cls)


register()

if __name__ == "__main__":
    import sys

    from gpusem.cli.main import main

    sys.argv[0] = "gpusem"
    main()
