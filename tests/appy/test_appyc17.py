"""Issue 17 with appyc 0.2.0 on the cpu backend (the `appy` extra): per-kernel
verdicts, reductions on the CPU stand-in, the NumPy 2.4 / Triton 3.6 adaptation, the
CLI verbs on APPy files, and (issue 15) a hostile bundle's replay running nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.appy import ast as A
from gpusem.calculus.appy.parser import parse_program
from gpusem.compiler.appy_triton.driver import appyc_available
from gpusem.fuzz.appy.strategies import AppyProgram
from gpusem.fuzz.appy.target import AppyTarget

ok, why = appyc_available()
pytestmark = pytest.mark.skipif(not ok, reason=why)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def target():
    t = AppyTarget("cpu", timeout=60.0)
    yield t
    t.close()


def test_reduction_clause_runs_on_the_cpu_backend(target) -> None:
    """appyc's host code hard-codes device="cuda" for `reduction(+:x)`: the stand-in
    reads it as the CPU, so these programs are compared, not skipped."""
    src = ("def kernel(A, S, N):\n    acc = 0.0\n    #pragma parallel for reduction(+:acc)"
           "\n    for i in range(N):\n        acc += A[i]\n    S[0] = acc\n")
    a = np.arange(300, dtype=np.float32) / 4
    res = target.check_source(src, {"A": a, "S": np.zeros(1, np.float32)}, {"N": 300})
    assert res.status == "pass", res.detail


def test_scalar_bounded_loops_run_under_numpy_2_4(target) -> None:
    """Triton 3.6's interpreter converts a scalar loop bound with int(array), which
    NumPy 2.4 refuses; the adaptation makes the kernel run (and says so)."""
    from gpusem.compiler.appy_triton.driver import Case

    src = ("def kernel(A, C, M, N):\n    #pragma parallel for\n    for i in range(M):\n"
           "        #pragma simd\n        for j in range(N):\n"
           "            C[i, j] = A[i, j] + 1.0\n")
    a = np.ones((3, 300), np.float32)
    out = target.driver.run(Case("c", src, "kernel", ["A", "C", "M", "N"],
                                 {"A": a, "C": np.zeros_like(a)}, {"M": 3, "N": 300}),
                            {"A": a, "C": a + 1})
    assert out.kind == "agree", out.detail
    if np.lib.NumpyVersion(np.__version__) >= "2.4.0":
        assert "numpy-index" in out.adapted


def test_the_numpy_triton_mismatch_is_environmental_not_appyc() -> None:
    from gpusem.compiler.appy_triton.worker import environmental

    text = ("InterpreterError: TypeError('only 0-dimensional arrays can be converted "
            "to Python scalars')")
    assert environmental(text, "").startswith("environment: NumPy")
    assert environmental("TypeError: something else", "") == ""


def test_each_kernel_gets_its_own_verdict(target) -> None:
    """A kernel appyc rejects (sequential for: a generation error for the whole
    module) no longer hides the next kernel: that one is compared on its own."""
    i = A.Name("i")
    seq = A.For("i", A.Const(1), A.Name("N"), A.Const(1), (A.Assign(
        A.Subscript("P", (i,)), A.BinOp("+", A.Subscript("P", (i,)), A.Subscript(
            "P", (A.BinOp("-", i, A.Const(1)),)))),), A.SequentialFor())
    add = A.For("i", A.Const(0), A.Name("N"), A.Const(1), (A.Assign(
        A.Subscript("C", (i,)), A.BinOp("+", A.Subscript("P", (i,)), A.Const(1.0))),),
        A.ParallelFor())
    fn = A.Function("kernel", (A.Param("P", True), A.Param("C", True),
                               A.Param("N", False)), (seq, add))
    prog = AppyProgram(fn, (("P", "float32", (8,)), ("C", "float32", (8,))),
                       (("N", 8),), 1, kernels=(1, 1))
    res, run = target.check_program(prog)
    assert res.status == "finding" and res.signature == "cause:sequential-for"
    assert run.whole.kind == "generation"
    assert [k.outcome.kind for k in run.kernels] == ["generation", "agree"]
    assert run.compared  # the program reached a numeric comparison


def test_replaying_a_hostile_bundle_runs_nothing_of_its_text(tmp_path) -> None:
    """Issue 15: annotations, defaults, decorators and module statements of a bundle's
    program.py never run; only gpusem's re-printed program reaches appyc."""
    from gpusem.fuzz.bundle import read_bundle, write_bundle

    marks = [tmp_path / f"pwned{k}" for k in range(4)]
    program = (
        f"open({str(marks[0])!r}, 'w').write('module')\n"
        f"@__import__('builtins').open({str(marks[1])!r}, 'w').close\n"
        f"def kernel(A: open({str(marks[2])!r}, 'w').write('annotation'), C,\n"
        f"           N=open({str(marks[3])!r}, 'w').write('default')):\n"
        "    #pragma parallel for\n    for i in range(N):\n        C[i] = A[i] + 1.0\n")
    inputs = {"arrays": {k: {"dtype": "float32", "shape": [4], "data": [1, 2, 3, 4]}
                         for k in "AC"}, "scalars": {"N": 4}}
    path = write_bundle(tmp_path / "b", {"target": "appy", "backend": "cpu",
                                         "property": "compile", "signature": "x",
                                         "kind": "wrong"},
                        {"program.py": program, "inputs.json": json.dumps(inputs)})
    b = read_bundle(path)
    t = AppyTarget("cpu", timeout=60.0)
    try:
        res = t.replay(b.files, b.meta)
    finally:
        t.close()
    assert res.status == "pass"  # the kernel itself ran (and agrees)...
    assert not [m.name for m in marks if m.exists()]  # ...and nothing else did


def gpusem(*args: str) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "gpusem.cli.main", *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


@pytest.mark.parametrize(("verb", "file", "code", "text"), [
    ("check", "examples/appy/vector_add.py", 0, "ok: legal"),
    ("check", "tests/appy/conformance/race_shifted_write.py", 1, "[Legal-Disjoint]"),
    ("check", "tests/appy/conformance/bad_while.py", 2, "bad_while.py:4:5: unsupported"),
    ("run", "tests/appy/conformance/negative_index.py", 0, "terminated"),
    ("run", "tests/appy/conformance/bad_le.py", 2, "bad_le.py:"),
    ("exec", "examples/appy/vector_add.py", 0, "agree"),
    ("exec", "tests/appy/conformance/sequential_for.py", 1, "cause:sequential-for"),
    ("exec", "tests/appy/conformance/escaping_scalar.py", 1, "not compared"),
    ("exec", "tests/appy/conformance/bad_dangling.py", 2, "dangling pragma"),
])
def test_cli_verbs_on_appy_files(verb: str, file: str, code: int, text: str) -> None:
    rc, out = gpusem(verb, file)
    assert rc == code and text in out, out
    assert "Traceback" not in out


def test_run_without_inputs_is_bad_input(tmp_path) -> None:
    f = tmp_path / "k.py"
    f.write_text("def k(A, N):\n    A[0] = 1.0\n")
    rc, out = gpusem("run", str(f))
    assert rc == 2 and "no inputs" in out
    rc, out = gpusem("run", str(f), "--inputs", "A=float32[2] N=2")
    assert rc == 0 and "A = [1.0," in out
    assert parse_program(f.read_text()).name == "k"


@pytest.mark.parametrize(("src", "arrays", "scalars", "signature"), [
    ("def kernel(A, S, N):\n    #pragma parallel for\n    for i in range(N):\n"
     "        #pragma atomic\n        S[0] += A[i]\n",
     {"A": np.arange(300).astype(np.int32), "S": np.zeros(1, np.int32)}, {"N": 300},
     "cause:atomic-linked-to-loop"),
    ("def kernel(I, H, N):\n    #pragma parallel for\n    for i in range(N):\n"
     "        #pragma atomic\n        H[I[i]] += 1.0\n",
     {"I": (np.arange(300) % 5).astype(np.int32), "H": np.zeros(5, np.float32)},
     {"N": 300}, ""),
    ("def kernel(I, H, N):\n    #pragma parallel for\n    for i in range(N):\n"
     "        l = I[i]\n        #pragma atomic\n        H[l] += 1.0\n",
     {"I": (np.arange(300) % 5).astype(np.int32), "H": np.zeros(5, np.float32)},
     {"N": 300}, "cause:atomic-linked-to-loop"),
    ("def kernel(L, X, G, M, N):\n    #pragma parallel for\n    for i in range(M):\n"
     "        l = L[i]\n        #pragma atomic\n        G[l, :N] += X[i, :N]\n",
     {"L": np.array([0, 1, 0, 1], np.int32), "X": np.ones((4, 8), np.float32),
      "G": np.zeros((2, 8), np.float32)}, {"M": 4, "N": 8}, ""),
    ("def kernel(A, C, N):\n    #pragma parallel for simd\n    for i in range(N):\n"
     "        C[i] += A[i]\n", {"A": np.arange(300).astype(np.float32) / 4,
                                "C": np.ones(300, np.float32)}, {"N": 300},
     "cause:simd-augassign-as-reduction"),
    ("def kernel(A, C, N):\n    #pragma parallel for simd\n    for i in range(N):\n"
     "        C[i] *= A[i]\n", {"A": np.arange(300).astype(np.float32) / 4,
                                "C": np.ones(300, np.float32)}, {"N": 300}, ""),
    ("def kernel(A, B, N):\n    #pragma parallel for\n    for i in range(N):\n"
     "        B[i] = A[i] // 2\n", {"A": np.arange(-8, 8).astype(np.int32),
                                    "B": np.zeros(16, np.int32)}, {"N": 16},
     "cause:floor-div-mod"),
])
def test_catalogued_causes_are_as_narrow_as_appyc_bug(target, src, arrays, scalars,
                                                      signature) -> None:
    """Each catalogue entry's trigger, checked against appyc 0.2.0: the construct that
    fails is named, and its neighbours that compile right are not."""
    res = target.check_source(src, arrays, scalars)
    assert (res.signature if res.status == "finding" else "") == signature, res.detail
