"""The cuda backend's host side per launch, made cheaper in issue 31.3
(scripts/profile_cuda_host.py): the same answers as before, computed once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpusem import api
from gpusem.compiler.backends import cuda
from gpusem.compiler.backends.kernel import Job, KernelSpec, ptr
from gpusem.compiler.bundl_cuda.pipeline import compile_program

from tests.script_module import SCRIPTS, load_script

# What the backend searched each launch's source with before (`_uses_shared`).
LOOKBEHIND = re.compile(r"(?<!extern )__shared__")
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples/bundl").glob(
    "*.bundl"))


@pytest.mark.parametrize("text", [
    "", "__shared__", "extern __shared__ int d[];", "xextern __shared__ int d[];",
    "extern  __shared__ int d[];", "tern __shared__", "__shared____shared__",
    "static __shared__ float s[4];\nextern __shared__ int d[];",
    "extern __shared__ int d[];\n__shared__ float s[4];", "__shared_", "extern ",
    "extern __shared__ extern __shared__", "extern __shared__ __shared__",
])
def test_static_shared_finds_what_the_lookbehind_regex_finds(text: str) -> None:
    assert cuda.static_shared(text) == (LOOKBEHIND.search(text) is not None)


def test_static_shared_on_compiled_examples() -> None:
    seen = 0
    for path in EXAMPLES:
        try:
            source = compile_program(api.parse(path.read_text())).source
        except Exception:  # noqa: BLE001, S112 - bad_*.bundl are rejected on purpose
            continue
        assert cuda.static_shared(source) == (LOOKBEHIND.search(source) is not None)
        seen += 1
    assert seen > 10


def test_code_keys_are_hashed_once_per_spec(monkeypatch) -> None:
    hashed = []
    code_key = KernelSpec.code_key
    monkeypatch.setattr(KernelSpec, "code_key",
                        lambda self: hashed.append(self) or code_key(self))
    a = KernelSpec("ka", "extern \"C\" __global__ void ka(int* o) {}", 1, 1, 0,
                   (ptr("o", "int32", 1),))
    b = KernelSpec("kb", "extern \"C\" __global__ void kb(int* o) {}", 1, 1, 0,
                   (ptr("o", "int32", 1),))
    jobs = [Job(a, {}, seed) for seed in range(4)] + [Job(b), Job(a)]
    keys = cuda._code_keys(jobs)
    assert len(hashed) == 2
    assert keys == [code_key(j.spec) for j in jobs]


def test_profile_cuda_host_runs_the_real_protocol(monkeypatch) -> None:
    """scripts/profile_cuda_host.py: every launch of a round goes through the spawned
    worker (its stand-in device) and comes back ok, four per compared program."""
    monkeypatch.syspath_prepend(str(SCRIPTS))  # the spawned worker imports it
    script = load_script("profile_cuda_host")
    serve = cuda.serve
    out = script.one(rounds=1, round_size=8, seed=0)
    assert cuda.serve is serve  # put back for the other tests
    assert out["programs"] > 0 and out["launches"] == 4 * out["programs"]
    assert out["stats"]["launch_batches"] >= 1
