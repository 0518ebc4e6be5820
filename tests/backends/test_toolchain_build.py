"""The toolchain matrix's host side (`compiler/backends/toolchain_build.py`,
`toolchain.py`) without a GPU: each host configuration builds a batch with one nvcc /
ptxas call and finds every kernel's entry; configurations are source variants with a
tag; the T1 fixture is T1-shaped under this nvcc. nvcc is on every development and CI
machine (DESIGN.md, "Backends and machines")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gpusem.compiler.backends import toolchain_build as tb
from gpusem.compiler.backends.kernel import Job, KernelSpec, ptr
from gpusem.compiler.backends.toolchain import (
    CONFIGS,
    Matrix,
    build_only,
    config_of,
    untagged,
    variant,
)

T1 = (Path(__file__).parent / "kernels" / "t1_nc_alias.cu").read_text()


def t1_spec() -> KernelSpec:
    return KernelSpec("bundl_main", T1, 1, 4, params=(
        ptr("g_x0", "int32", 2), ptr("g_out", "int32", 4),
        ptr("gs_gscratch_int", "int32", 4)))


def t1_job(seed: int = 0) -> Job:
    return Job(t1_spec(), {"g_x0": np.array([5, 100], dtype="int32")}, seed)


T1_EXPECTED = [13, 101, 101, 101]  # C++: x0[0] + 7 + 1, then x0[1] + 1


def test_every_host_config_builds_a_batch_and_finds_each_entry():
    items = [(0, "bundl_main", T1), (1, "bundl_main", tb.strip_restrict(T1)),
             (10, "bundl_main", T1)]
    for config in tb.HOST_CONFIGS:
        errors, binary, lowered = tb.build(config, items)
        assert errors == {} and binary, (config, errors)
        assert lowered[0].startswith(tb.entry_prefix(0, "bundl_main"))
        assert lowered[1] != lowered[10] != lowered[0]  # gs_k1 is not a prefix of gs_k10
    errors, binary, _ = tb.build("ptx-jit", items[:1])
    assert binary.endswith(b"\0") and b".entry" in binary  # PTX for the driver's JIT


def test_the_host_configs_of_a_batch_share_one_nvvm_ptx(monkeypatch):
    calls: list[list[str]] = []
    real = tb._run

    def counted(cmd, cwd):
        calls.append(cmd)
        return real(cmd, cwd)

    monkeypatch.setattr(tb, "_run", counted)
    items = [(0, "bundl_main", T1 + "// a unit of its own\n")]
    for config in tb.HOST_CONFIGS:
        assert tb.build(config, items)[0] == {}
    # one nvcc -cubin --keep makes nvcc-O3's cubin and the PTX that ptxas-O0 and
    # ptx-jit build: nvcc's front end runs once for the three (and once for -G)
    assert sum("--keep" in cmd for cmd in calls) == 1
    assert not any("-ptx" in cmd for cmd in calls)
    assert len(calls) == 3  # nvcc-O3 (+ PTX), nvcc-G, ptxas-O0 (ptx-jit: none)
    assert untagged(variant(t1_spec(), "nvcc-G").source) == T1.rstrip() + "\n"


def test_a_kernel_that_does_not_build_is_blamed_alone():
    items = [(0, "bundl_main", T1), (1, "k", "extern \"C\" __global__ void k() { x; }")]
    errors, binary, lowered = tb.build("nvcc-O3", items)
    assert set(errors) == {1} and "nvcc-O3" in errors[1]
    assert binary and 0 in lowered
    refused = build_only([t1_spec(), KernelSpec("k", items[1][2], 1, 1)])
    assert all(verdicts[0] is None and verdicts[1] for verdicts in refused.values())


def test_configs_are_tagged_source_variants():
    spec = t1_spec()
    tagged = {c: variant(spec, c) for c in CONFIGS}
    assert len({s.code_key() for s in tagged.values()}) == len(CONFIGS)
    assert all(config_of(s.source) == c for c, s in tagged.items())
    assert config_of(spec.source) == "nvrtc"
    assert "__restrict__" not in tagged["no-restrict"].source
    assert tagged["nvrtc"].source.count("__restrict__") == T1.count("__restrict__") > 0


def test_the_t1_fixture_is_t1_shaped_under_this_nvcc():
    """What makes the fixture T1: NVVM's PTX loads through the read-only path from a
    `selp` of the input's and the just-written scratch cell's addresses; without
    `__restrict__` the same load is a coherent one. (An observation of this NVVM, so
    the GPU test's expectations are grounded; a newer NVVM may change it.)"""
    ptx, log = tb.ptx_of([(0, "bundl_main", T1)])
    assert ptx is not None, log
    lines = ptx.splitlines()
    selp = next(i for i, ln in enumerate(lines) if "selp.b64" in ln)
    assert "ld.global.nc" in lines[selp + 1]
    plain, _ = tb.ptx_of([(0, "bundl_main", tb.strip_restrict(T1))])
    assert plain is not None and "ld.global.nc" not in plain


def test_our_compiler_makes_a_t1_shaped_kernel_of_the_bundl_program():
    """tests/backends/kernels/t1_nc_alias.bundl: the same shape from our compiler (a
    barrier between the store and the merged load), right on the cpu harness."""
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.compile_property import check_program
    from gpusem.interpreter.bundl.reference import reference

    prog = _t1_program()
    kernel = compile_program(prog, CompileOptions())
    ptx, log = tb.ptx_of([(0, kernel.name, kernel.source)])
    assert ptx is not None, log
    lines = ptx.splitlines()
    selp = max(i for i, ln in enumerate(lines) if "selp.b64" in ln)
    assert "ld.global.nc" in lines[selp + 1]
    assert reference(prog).globals["out"] == [13, 101]
    assert check_program(prog).kind == "agree"


def _t1_program():
    from gpusem.calculus.bundl.parser import parse_program

    path = Path(__file__).parent / "kernels" / "t1_nc_alias.bundl"
    return parse_program(path.read_text(), str(path))


def test_the_cpu_config_runs_t1_right():
    matrix = Matrix("cpu")
    try:
        (results,) = matrix.run([t1_job()]).values()
    finally:
        matrix.close()
    assert results[0].kind == "ok", results[0].message
    assert results[0].outputs["g_out"].tolist() == T1_EXPECTED


def test_sass_needs_a_cubin():
    assert tb.sass_memory_ops(b"//\n.version 8.0\n\0", "k") == ""


def test_the_kept_ptx_is_nvcc_ptx_and_the_cubin_is_ptxas_O3_of_it():
    """What makes one nvcc call enough: the PTX `--keep` leaves is what `nvcc -ptx`
    emits, and nvcc-O3's cubin holds for each kernel what ptxas -O3 makes of that PTX
    (the kernel digests agree, every one)."""
    items = [(0, "bundl_main", T1), (1, "bundl_main", tb.strip_restrict(T1))]
    ptx, log = tb.ptx_of(items)
    assert ptx is not None, log
    _, cubin, _ = tb.build("nvcc-O3", items)
    _, jit, _ = tb.build("ptx-jit", items)
    assert jit == ptx.encode() + b"\0"
    digests = tb.kernel_digests(cubin)
    assert set(digests) == {0, 1} and digests[0] != digests[1]  # .nc vs coherent


def test_kernel_digests_follow_the_kernel_not_its_place_in_the_batch():
    """One kernel is gs_k0 in one batch and gs_k7 in another: the same digest; a
    different build of it (ptxas -O0, -G) a different one; PTX has none."""
    plain = tb.strip_restrict(T1)
    _, first, _ = tb.build("nvcc-O3", [(0, "bundl_main", T1), (1, "bundl_main", plain)])
    _, moved, _ = tb.build("nvcc-O3", [(3, "bundl_main", plain), (7, "bundl_main", T1)])
    _, o0, _ = tb.build("ptxas-O0", [(0, "bundl_main", T1), (1, "bundl_main", plain)])
    a, b, c = (tb.kernel_digests(x) for x in (first, moved, o0))
    assert a[0] == b[7] and a[1] == b[3]
    assert c[0] != a[0] and c[1] != a[1]
    assert tb.kernel_digests(b"//\n.version 8.0\n\0") == {}
    assert tb.kernel_digests(None) == {}
