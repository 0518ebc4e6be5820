"""Standalone reproducers (issue 18): one `.cu` file that `nvcc` alone builds (the
runtime inlined, inputs and the interpreter's output embedded, a main() that compares),
as every CUDA bundle holds and `gpusem compile --standalone` writes. nvcc is on CI's
machine (no GPU: the binary is built, and run only to see it says so)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.compiler.bundl_cuda.launch import initial_globals
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
from gpusem.compiler.bundl_cuda.standalone import NVCC_COMMAND, standalone_source
from gpusem.interpreter.bundl.schedulers import run_program

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["block_reduce_shared.bundl", "float_affine.bundl", "async_copy.bundl",
            "claim_mask.bundl", "alloc_global_per_unit.bundl"]


def repro(name: str) -> str:
    path = ROOT / "examples/bundl" / name
    src = path.read_text()
    prog = parse_program(src, str(path))
    kernel = compile_program(prog, CompileOptions(), src, name)
    out = run_program(prog, schedule="rr")
    assert out.kind == "terminated"
    return standalone_source(kernel, initial_globals(prog), out.globals, name)


def nvcc(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    assert shutil.which("nvcc"), "nvcc is needed (CI has it; pip: nvidia-cuda-nvcc)"
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_reproducer_is_self_contained() -> None:
    text = repro("block_reduce_shared.bundl")
    assert '#include "gpusem_rt.cuh"' not in text and "gs_div_i32" in text
    assert "int main()" in text and "return 1;" in text and NVCC_COMMAND in text
    assert "want_g_out" in text and "in_g_A" in text


def test_scratch_of_alloc_in_global_starts_zeroed_and_is_not_an_output() -> None:
    """`alloc in Global` lowers to a scratch parameter (galloc.py): the reproducer
    gives it zeroed bytes and compares only the program's globals (a campaign's
    reproducer of such a program was an internal KeyError)."""
    text = repro("alloc_global_per_unit.bundl")
    assert "in_gs_gscratch_int" in text and "want_gs_gscratch" not in text
    assert "want_g_" in text


@pytest.mark.parametrize("name", EXAMPLES)
def test_nvcc_alone_builds_it(tmp_path, name) -> None:
    (tmp_path / "repro.cu").write_text(repro(name))
    res = nvcc(NVCC_COMMAND.split(), tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    run = subprocess.run(["./repro"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    if run.returncode == 2:  # no GPU here (CI): it says so, nothing crashes
        assert "no usable CUDA device" in run.stdout
    else:  # on a GPU machine: the kernel agrees with the interpreter
        assert run.returncode == 0 and run.stdout.startswith("agree"), run.stdout


def test_the_plainest_nvcc_command_builds_it(tmp_path) -> None:
    (tmp_path / "repro.cu").write_text(repro("float_affine.bundl"))
    res = nvcc(["nvcc", "-arch=sm_90a", "repro.cu"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "a.out").is_file()


@pytest.mark.parametrize("name", ["fence_broadcast", "mbarrier_broadcast"])
def test_gpuir_reproducers_build_too(tmp_path, name) -> None:
    """GPU IR: every kernel of the proc launched in order on shared buffers, the
    sequential reading embedded (`gpusem compile FILE.gpuir --standalone`)."""
    from click.testing import CliRunner
    from gpusem.cli.main import cli

    out = tmp_path / "repro.cu"
    res = CliRunner().invoke(cli, ["compile", str(ROOT / f"examples/gpuir/{name}.gpuir"),
                                   "--standalone", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "want_" in out.read_text() and "int main()" in out.read_text()
    built = nvcc(NVCC_COMMAND.split(), tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]


# ------------------------------------------------------------------ repro_cpu.cpp
def repro_cpu(name: str, perturb: bool = False) -> str:
    from gpusem.compiler.bundl_cuda.standalone import standalone_cpu

    path = ROOT / "examples/bundl" / name
    src = path.read_text()
    prog = parse_program(src, str(path))
    kernel = compile_program(prog, CompileOptions(), src, name)
    out = run_program(prog, schedule="rr")
    expected = {k: list(v) for k, v in out.globals.items()}
    if perturb:  # a wrong reference: the reproducer must say so
        first = next(iter(expected))
        expected[first][0] = expected[first][0] + 1
    return standalone_cpu(kernel, initial_globals(prog), expected, name, seed=2)


def gxx(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    from gpusem.compiler.bundl_cuda.standalone import CPU_COMMAND

    (tmp_path / "repro_cpu.cpp").write_text(text)
    assert "-w" not in CPU_COMMAND.split()  # warnings are not silenced
    build = subprocess.run(CPU_COMMAND.split(), cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0 and not build.stderr, build.stderr[-3000:]
    return subprocess.run(["./repro_cpu"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("name", EXAMPLES)
def test_g_plus_plus_alone_builds_the_cpu_reproducer_and_it_agrees(tmp_path, name):
    """Issue 32.10: a reproducer without a GPU: one file, the harness inlined (no
    `-I`), built by g++ without a warning, agreeing with the reference."""
    text = repro_cpu(name)
    assert '#include "' not in text.replace('// #include "', "")  # all inlined
    run = gxx(tmp_path, text)
    assert run.returncode == 0 and "agree" in run.stdout, run.stdout + run.stderr


def test_the_cpu_reproducer_exits_1_on_the_wrong_answer(tmp_path):
    run = gxx(tmp_path, repro_cpu("block_reduce_shared.bundl", perturb=True))
    assert run.returncode == 1 and run.stdout.startswith("mismatch: g_"), run.stdout


NAN_PROGRAM = """machine blocks = 1, threads = 4;

global W : float[4] = [0.0, 1.0, -1.5, 2.0];
global out : float[4];

main {
  lower out into ob {
    destruct {
      lower ob into ot {
        destruct {
          let t : int @ thread[1] = partition_id;
          partition ot into o1 by 4 {
            group 4 {
              o1[0] = W[t] / W[0];
            }
          }
        }
      }
    }
  }
}
"""


def test_the_cpu_reproducer_takes_any_nan_for_a_nan_but_not_a_number(tmp_path):
    # errata L13: 0/0 is 0xffc00000 on x86, 0x7fffffff on the GPU; a reference made
    # on one and a run on the other must agree (compiler/backends/standalone*.py)
    import numpy as np
    from gpusem.compiler.bundl_cuda.standalone import standalone_cpu

    prog = parse_program(NAN_PROGRAM, "nan.bundl")
    kernel = compile_program(prog, CompileOptions(), NAN_PROGRAM, "nan.bundl")
    out = run_program(prog, schedule="rr")
    assert out.kind == "terminated"
    expected = {k: list(v) for k, v in out.globals.items()}
    assert np.isnan(expected["out"][0]) and expected["out"][1] == float("inf")
    gpu_nan = float(np.array([0x7FFFFFFF], dtype=np.uint32).view(np.float32)[0])
    as_on_gpu = dict(expected, out=[gpu_nan, *expected["out"][1:]])
    run = gxx(tmp_path, standalone_cpu(kernel, initial_globals(prog), as_on_gpu,
                                       "nan.bundl", seed=2))
    assert run.returncode == 0 and "agree" in run.stdout, run.stdout + run.stderr
    wrong = dict(expected, out=[1.0, *expected["out"][1:]])
    run = gxx(tmp_path, standalone_cpu(kernel, initial_globals(prog), wrong,
                                       "nan.bundl", seed=2))
    assert run.returncode == 1 and run.stdout.startswith("mismatch: g_out[0]"), run.stdout
