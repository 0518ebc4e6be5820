"""`gpusem compile` and `gpusem exec` on lambda-cu files (issue 29 item 5): exit codes
(exec: 0 agree, 1 ill-formed or a disagreement, 2 bad input) and the standalone
reproducer, which builds with g++ alone and checks itself against the interpreter."""

import subprocess

import pytest
from gpusem.compiler.backends.cpu import CXX

from tests.lambdacu.test_cli import GOOD, ILL_FORMED, TRAPS, invoke

SCAN = ("kernel k(xs: [int]) -> [int] {\n  let r = SCAN { i => xs[i] using xs } (iadd)"
        " #xs\n  ret r\n}\nfunction main() -> [int] { run k([4, 5, 6]) }\n")


def test_compile_shows_the_cuda(tmp_path):
    code, text = invoke(tmp_path, GOOD, "compile")
    assert code == 0 and '#include "lambdacu_rt.cuh"' in text
    assert text.count("__global__ void k_k_") == 1


def test_compile_rejects_ill_formed_exit_1(tmp_path):
    code, text = invoke(tmp_path, ILL_FORMED, "compile")
    assert code == 1 and "WF-" in text


def test_exec_agrees_exit_0(tmp_path):
    code, text = invoke(tmp_path, SCAN, "exec", "-D", "LC_BLOCK=2",
                        "--schedules", "0,1")
    assert code == 0 and text.startswith("agree: compiled (cpu, block 2")
    assert "main = [4, 9, 15]" in text


def test_exec_both_trap_agrees(tmp_path):
    code, text = invoke(tmp_path, TRAPS, "exec", "--schedules", "0")
    assert code == 0 and "agree" in text


def test_exec_disagreement_exit_1(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", "scan-exclusive")
    code, text = invoke(tmp_path, SCAN, "exec", "--schedules", "0")
    assert code == 1 and text.startswith("disagree: ")
    assert "main = [0, 4, 9]" in text  # the exclusive scan


def test_exec_bad_block_exit_2(tmp_path):
    code, text = invoke(tmp_path, GOOD, "exec", "-D", "LC_BLOCK=3")
    assert code == 2 and "power of two" in text


@pytest.mark.parametrize("fault", ["", "scan-exclusive"])
def test_standalone_checks_itself(tmp_path, monkeypatch, fault):
    monkeypatch.setenv("GPUSEM_FAULT", fault)
    out = tmp_path / "repro.cu"
    code, text = invoke(tmp_path, SCAN, "compile", "--standalone", "-o", str(out))
    assert code == 0 and "nvcc" in text
    exe = tmp_path / "repro"
    subprocess.run([CXX, "-std=c++17", "-O1", "-ffp-contract=off", "-x", "c++",
                    str(out), "-o", str(exe)], check=True, capture_output=True)
    ran = subprocess.run([str(exe)], capture_output=True, text=True)
    assert ran.returncode == (1 if fault else 0), ran.stdout
    assert ("mismatch" if fault else "agree") in ran.stdout
