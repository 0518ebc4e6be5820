"""The static PTX oracle (issue 23, item 3): every installed NVRTC, no GPU.

The wheels of the `nvrtc` extra (NVRTC 11.8, 12.9, 13.5) are installed by CI as the
README's test command says; a missing one fails `test_every_pinned_nvrtc_is_found`.
"""

from __future__ import annotations

import locale
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpusem import api
from gpusem.calculus.errors import BadInput, GpusemError
from gpusem.compiler.backends.nvrtc_lib import compile_ptx, find_nvrtc
from gpusem.compiler.backends.ptx_check import check_ptx, cu_params
from gpusem.compiler.backends.ptx_oracle import check_cuda

from tests.cpu_time import cpu_seconds

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "ptx"
T1_CU = HERE / "t1_scratch_nc.cu"
T1_BUNDL = HERE / "t1_scratch_nc.bundl"
CONTROL_CU = HERE / "t1_control_no_restrict.cu"
PINNED = {(11, 8), (12, 9), (13, 5)}  # pyproject.toml, extra `nvrtc`


def test_every_pinned_nvrtc_is_found() -> None:
    found = {n.version: n for n in find_nvrtc()}
    assert PINNED <= set(found), f"installed: {sorted(found)}"
    assert found[(11, 8)].arch == "compute_90"  # 11.8 has no sm_90a
    assert found[(12, 9)].arch == found[(13, 5)].arch == "compute_90a"


def test_versions_share_one_process() -> None:
    """Each version's PTX in this process (all three loaded) equals its PTX in a fresh
    process that loads only it: the libraries do not interfere."""
    source = T1_CU.read_text()
    script = ("import sys; from gpusem.compiler.backends.nvrtc_lib import *; "
              "n = [x for x in find_nvrtc() if x.path == sys.argv[1]][0]; "
              "sys.stdout.write(compile_ptx(n, open(sys.argv[2]).read()).ptx)")
    nvrtcs = find_nvrtc()
    here = {n.path: compile_ptx(n, source).ptx for n in nvrtcs}
    env = os.environ | {"PYTHONPATH": str(ROOT / "src")}
    for n in nvrtcs:
        alone = subprocess.run([sys.executable, "-c", script, n.path, str(T1_CU)],
                               capture_output=True, text=True, check=True,
                               env=env).stdout
        assert alone == here[n.path], n.label
        assert f"release {n.version[0]}.{n.version[1]}" in alone


def test_nvrtc_leaves_the_threads_locale_as_it_was() -> None:
    """NVRTC 11.8 switches the calling thread to the C locale; without
    `_thread_locale_kept`, `read_text()` of a UTF-8 file (the README) then failed
    later in the same pytest process."""
    before = locale.getpreferredencoding(False)
    for n in find_nvrtc():
        compile_ptx(n, T1_CU.read_text())
        assert locale.getpreferredencoding(False) == before, n.label


def test_t1_kernel_fails_under_every_nvrtc() -> None:
    report = check_cuda(T1_CU.read_text())
    assert {t.nvrtc.version for t in report.toolchains} >= PINNED
    for t in report.toolchains:
        assert t.verdict is not None, t.build_error
        (finding,) = t.findings
        assert finding.check == "ld.nc-read-only"
        assert finding.param == "gs_gscratch_int"  # the scratch buffer, not g_x0
        assert finding.attribution == "nvvm"
        ptx = t.ptx.splitlines()
        assert ptx[finding.line - 1].split() == (finding.text + ";").split()
        assert finding.text.startswith("ld.global.nc")
        assert ptx[finding.store_line - 1].strip().startswith("st.global")
        assert finding.store_line < finding.line
    assert report.exit_code == 1


def test_control_without_restrict_holds() -> None:
    """The same kernel without `__restrict__` on the read-only input: NVVM keeps the
    loads apart and coherent; the check holds (so it is not a blanket rejection)."""
    report = check_cuda(CONTROL_CU.read_text())
    assert report.exit_code == 0
    assert all(t.verdict is not None and not t.findings for t in report.toolchains)


def test_t1_bundl_program_compiles_to_the_miscompiled_shape() -> None:
    report = api.ptx_check(T1_BUNDL)
    assert report.exit_code == 1
    assert {(f.check, f.param) for f in report.findings} == {
        ("ld.nc-read-only", "gs_gscratch_int")}
    assert {f.toolchain for f in report.findings} == {
        t.nvrtc.label for t in report.toolchains}


def _examples() -> list[Path]:
    return sorted([*ROOT.glob("examples/bundl/**/*.bundl"),
                   *ROOT.glob("examples/gpuir/*.gpuir")])


def test_every_example_that_compiles_passes() -> None:
    checked, nc_loads, start = [], 0, cpu_seconds()  # CPU: wall time is the load's
    for path in _examples():
        try:
            source = api.cuda_source(path)
        except GpusemError:
            continue  # an example of a rejected program (its golden says so)
        report = check_cuda(source)
        assert report.exit_code == 0, (path, report.lines())
        nc_loads += sum(t.verdict.nc_loads for t in report.toolchains if t.verdict)
        checked.append(path.name)
    assert len(checked) >= 40, checked
    assert nc_loads >= 100  # the check weighed real .nc loads, not none
    assert cpu_seconds() - start < 300


# ------------------------------------------------------------------ the CLI
def gpusem(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpusem.cli.main", *args],
                          capture_output=True, text=True, timeout=300, check=False,
                          env=os.environ | {"PYTHONPATH": str(ROOT / "src")} | env)


def test_cli_exit_1_names_check_version_and_line() -> None:
    res = gpusem("compile", str(T1_BUNDL), "--ptx-check")
    assert res.returncode == 1, res.stderr
    failed = [ln for ln in res.stdout.splitlines() if "FAILED ld.nc-read-only" in ln]
    assert len(failed) == len(find_nvrtc())
    assert "nvrtc 11.8" in res.stdout and "PTX line 38" in res.stdout


def test_cli_exit_0_one_line_per_version() -> None:
    res = gpusem("compile", str(ROOT / "examples/bundl/memcpy_global.bundl"),
                 "--ptx-check")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == len(find_nvrtc())
    assert all("every check holds" in ln and "4 ld.global.nc" in ln for ln in lines)


def test_cli_exit_2_without_nvrtc(tmp_path: Path) -> None:
    res = gpusem("compile", str(T1_BUNDL), "--ptx-check",
                 GPUSEM_NVRTC_PATH=str(tmp_path))
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1 and "no NVRTC installed" in res.stderr
    os.environ["GPUSEM_NVRTC_PATH"] = str(tmp_path)
    try:
        with pytest.raises(BadInput):
            api.ptx_check(T1_BUNDL)
    finally:
        del os.environ["GPUSEM_NVRTC_PATH"]


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.bundl"
    bad.write_text("machine blocks = 1, threads = 1;\nmain {\n  x[0] = ;\n}\n")
    res = gpusem("compile", str(bad), "--ptx-check")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"{bad}:3:")


# ------------------------------------------------------------------ the checks alone
PTX_HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def _kernel(body: str, params: int = 2) -> str:
    decl = ",\n".join(f"  .param .u64 k_param_{i}" for i in range(params))
    return f"{PTX_HEAD}.visible .entry k(\n{decl}\n)\n{{\n{body}\n}}\n"


LOOP = _kernel("""
  .reg .b64 %rd<9>;
  .reg .b32 %r<4>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mov.u64 %rd5, %rd4;
$L__BB0_1:
  ld.global.nc.u32 %r1, [%rd5+4];
  st.global.u32 [%rd3], %r1;
  mov.u64 %rd5, %rd3;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra $L__BB0_1;
  ret;""")


def test_a_loop_carried_pointer_reaches_the_fixpoint() -> None:
    """%rd5 is the input on entry and the output after one trip: the `.nc` load may
    read the buffer the loop writes (found only by joining the back edge)."""
    verdict = check_ptx(LOOP, "test")
    assert [(f.check, f.param, f.line) for f in verdict.findings] == [
        ("ld.nc-read-only", "k_param_0", 19)]
    assert verdict.nc_loads == 1


def test_a_read_only_nc_load_holds() -> None:
    body = LOOP.replace("mov.u64 %rd5, %rd3;", "add.s64 %rd5, %rd5, 4;")
    assert check_ptx(body, "test").findings == ()
    assert check_ptx(body, "test").nc_loads == 1


def test_global_access_to_shared_memory_is_out_of_its_window() -> None:
    ptx = PTX_HEAD + """.shared .align 4 .b8 buf[64];
.visible .entry k(.param .u64 k_param_0)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<2>;
  mov.u64 %rd1, buf;
  ld.global.u32 %r1, [%rd1+8];
  ld.param.u64 %rd2, [k_param_0];
  st.shared.u32 [%rd2], %r1;
  st.shared.u32 [buf], %r1;
  ret;
}
"""
    found = [(f.check, f.param, f.line) for f in check_ptx(ptx, "t").findings]
    assert found == [("state-space-window", "buf", 10),
                     ("state-space-window", "k_param_0", 12)]


def test_a_store_into_a_const_parameter_is_ours() -> None:
    cu = 'extern "C" __global__ void k(const int* __restrict__ a, int* b) {}'
    assert [p.const for p in cu_params(cu, "k") or ()] == [True, False]
    ptx = _kernel("""
  .reg .b64 %rd<4>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [k_param_0];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.nc.u32 %r1, [%rd2];
  st.global.u32 [%rd2+4], %r1;
  ret;""")
    findings = check_ptx(ptx, "t", cu).findings
    assert {(f.check, f.param, f.attribution) for f in findings} == {
        ("ld.nc-read-only", "a", "ours"), ("const-written", "a", "ours")}


def test_a_store_through_a_loaded_pointer_may_write_any_writable_buffer() -> None:
    cu = 'extern "C" __global__ void k(const int* a, int* b) {}'
    ptx = _kernel("""
  .reg .b64 %rd<6>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  ld.global.nc.u32 %r1, [%rd2];
  ld.global.u64 %rd3, [%rd1];
  st.global.u32 [%rd3], %r1;
  ret;""")
    found = check_ptx(ptx, "t", cu).findings
    # `a` is const: a pointer read from memory is assumed not to write it
    assert [(f.check, f.param) for f in found] == [("ld.nc-read-only", "b")]
    assert [(f.line, f.store_line) for f in found] == [(14, 16)]


def test_the_reader_keeps_every_parameter_in_order() -> None:
    """Parameters with alignment, pointer attributes or array sizes (a by-value struct)
    all count: the checks map PTX parameter i to the .cu's parameter i."""
    from gpusem.compiler.backends.ptx_reader import read_ptx

    ptx = PTX_HEAD + """.visible .entry k(
  .param .align 8 .b8 k_param_0[16],
  .param .u64 .ptr .global .align 4 k_param_1,
  .param .u32 k_param_2
)
{
  ret;
}
"""
    (kernel,) = read_ptx(ptx).kernels
    assert kernel.params == ("k_param_0", "k_param_1", "k_param_2")
