"""`gpusem compile FILE.gpuir` and `gpusem exec FILE.gpuir`: exit codes 0 / 1 / 2 and
one-line messages (DESIGN.md's command-line contract)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpusem.cli.main import cli, main

EX = Path(__file__).resolve().parents[2] / "examples" / "gpuir"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_compile_prints_cuda():
    r = run("compile", str(EX / "fence_broadcast.gpuir"), "-D", "N=512")
    assert r.exit_code == 0
    assert 'extern "C" __global__' in r.output and "__syncthreads();" in r.output
    assert "N=512" in r.output.splitlines()[0]


def test_compile_writes_a_file(tmp_path):
    out = tmp_path / "k.cu"
    r = run("compile", str(EX / "gemv_shfl.gpuir"), "-o", str(out))
    assert r.exit_code == 0 and "kernel gemv_shfl, grid 64, block 128" in r.output
    assert "__shfl_xor_sync" in out.read_text()


def test_exec_agrees_exit_0():
    r = run("exec", str(EX / "tmp_vector_copy.gpuir"), "--backend", "cpu")
    assert r.exit_code == 0 and r.output.startswith("agree: 4 schedule(s)")


def test_exec_disagrees_exit_1_with_first_cell():
    r = run("exec", str(EX / "fence_broadcast_missing_fence.gpuir"), "--schedules", "0")
    assert r.exit_code == 1
    assert r.output.startswith("disagree: B[") and "sequential reading says" in r.output


def test_exec_unsupported_on_cpu_exit_1():
    # what the compiler does not lower: stream-ordered host copies (the Hopper GEMM,
    # its tensor maps made by host code, is lowered since issue 32.12)
    prog = EX.parents[1] / "tests" / "gpuir" / "conformance" / "stream_copies.gpuir"
    r = run("exec", str(prog), "--json")
    assert r.exit_code == 1 and '"kind": "unsupported"' in r.output
    assert "CPU code outside a CudaDeviceFunction" in r.output


def test_exec_hopper_gemm_agrees_on_cpu():
    r = run("exec", str(EX / "gemm_hopper.gpuir"), "--schedules", "0")
    assert r.exit_code == 0 and r.output.startswith("agree: 1 schedule(s)"), r.output


def entry(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """The real entry point, which turns BadInput into one line and exit 2."""
    monkeypatch.setattr(sys, "argv", ["gpusem", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return exc.value.code, out.out + out.err


def test_missing_definition_is_bad_input(tmp_path, monkeypatch, capsys):
    src = (EX / "fence_broadcast.gpuir").read_text().replace("# defines: N=256\n", "")
    path = tmp_path / "nodef.gpuir"
    path.write_text(src)
    code, out = entry(monkeypatch, capsys, "compile", str(path))
    assert code == 2 and "missing definition: N" in out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1


def test_unknown_proc_is_bad_input(monkeypatch, capsys):
    code, out = entry(monkeypatch, capsys, "exec", str(EX / "fence_broadcast.gpuir"),
                      "--proc", "nope")
    assert code == 2 and "no procedure named nope" in out
