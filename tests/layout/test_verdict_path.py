"""A generated program's verdict is decided below the stage that asks for it (issue 25,
item 3): one program of the Bundl `compile` property, run to its verdict on the cpu
backend under `sys.setprofile` (`scripts/verdict_call_path.py`), makes no call from a
lower stage into a higher one, and the reference outcome it asks for is judged wholly
below the fuzz stage: no fuzz-stage code runs on the request's behalf (1179 calls in 5
fuzz modules when the race analysis and the reference lived in fuzz/bundl/)."""

from __future__ import annotations

import types

from tests.script_module import load_script


def _script():
    return load_script("verdict_call_path")


def test_a_compile_verdict_never_climbs_a_stage():
    script = _script()
    path, verdict = script.measure(seed=0)
    report = path.as_dict()
    # the run did reach the judgments (an instrumentation that sees nothing passes
    # nothing): the interpreter, the race proof, the compiler
    assert verdict == "pass", verdict
    assert {"gpusem.interpreter.bundl.reference", "gpusem.typing_rules.bundl.race",
            "gpusem.interpreter.bundl.small_step"} <= set(path.modules)
    assert any(m.startswith("gpusem.compiler.") for m in path.modules)
    assert report["climbs"] == 0, report["climb_edges"]
    assert report["reference_fuzz_calls"] == 0, report["reference_fuzz_modules"]


def _asked() -> list[int]:
    return sorted([2, 1])


def _judge() -> list[int]:
    return asked()  # type: ignore[name-defined]  # noqa: F821 - its module's global


def _campaign() -> list[int]:
    return judge()  # type: ignore[name-defined]  # noqa: F821 - its module's global


def test_the_counter_sees_a_climb():
    """The measure itself: a call from an interpreter module into a fuzz module (a
    callback) is a climb; the call back down is not, nor a call within one stage."""
    script = _script()
    fuzz: dict = {"__name__": "gpusem.fuzz.bundl.fake"}
    interp: dict = {"__name__": "gpusem.interpreter.bundl.fake"}
    # the functions above, each run as a function of a (fake) gpusem module
    interp["asked"] = types.FunctionType(_asked.__code__, fuzz)
    fuzz["judge"] = types.FunctionType(_judge.__code__, interp)
    campaign = types.FunctionType(_campaign.__code__, fuzz)
    path = script.record(campaign)
    assert dict(path.climbs) == {
        ("gpusem.interpreter.bundl.fake", "gpusem.fuzz.bundl.fake"): 1}
    assert path.edges[("gpusem.fuzz.bundl.fake", "gpusem.interpreter.bundl.fake")] == 1
