"""The shared Python types and the cpu translation-unit rewrites."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.kernel import (
    Job,
    KernelSpec,
    prepare_args,
    ptr,
    scalar,
)
from gpusem.compiler.backends.registry import get_backend

SPEC = KernelSpec(
    "k", "", 2, (32, 2), 0, (ptr("a", "float32", 4), scalar("n", "int32"))
)


def test_dims_are_normalised_to_three():
    assert SPEC.grid == (2, 1, 1) and SPEC.block == (32, 2, 1)
    assert SPEC.threads_per_block == 64
    assert SPEC.signature() == "float * a, int n"


@pytest.mark.parametrize(
    "make",
    [
        lambda: KernelSpec("k", "", 0, 1),
        lambda: KernelSpec("k", "", (1, 1, 1, 1), 1),
        lambda: KernelSpec("not a name", "", 1, 1),
        lambda: KernelSpec("k", "", 1, 1, -4),
        lambda: KernelSpec(
            "k", "", 1, 1, 0, (scalar("x", "int32"), scalar("x", "int32"))
        ),
        lambda: ptr("p", "complex64", 3),
        lambda: ptr("p", "int32", 0),
    ],
)
def test_malformed_specs_are_bad_input(make):
    with pytest.raises(BadInput):
        make()


@pytest.mark.parametrize(
    "inputs, prefix",
    [
        ({"a": np.zeros(4, np.float64), "n": 1}, "dtype mismatch"),
        ({"a": np.zeros(5, np.float32), "n": 1}, "size mismatch"),
        ({"n": 1, "zz": 3}, "unknown input"),
        ({"a": np.zeros(4, np.float32)}, "missing scalar input"),
        ({"n": 2**40}, "bad scalar"),
    ],
)
def test_malformed_jobs_are_bad_input(inputs, prefix):
    with pytest.raises(BadInput) as err:
        prepare_args(Job(SPEC, inputs))
    assert err.value.prefix == prefix


def test_prepare_args_copies_and_zero_fills():
    a = np.arange(4, dtype=np.float32)
    arrays, scalars = prepare_args(Job(SPEC, {"a": a, "n": 3}))
    arrays["a"][0] = 99
    assert a[0] == 0  # the caller's array is never written
    assert scalars["n"] == np.int32(3) and scalars["n"].dtype == np.int32
    zeros, _ = prepare_args(Job(SPEC, {"n": 3}))
    assert np.array_equal(zeros["a"], np.zeros(4, np.float32))


def test_unknown_backend_is_bad_input():
    with pytest.raises(BadInput):
        get_backend("tpu")


def test_code_key_depends_on_source_name_and_types():
    base = KernelSpec("k", "x", 1, 1, 0, (ptr("a", "int32", 4),))
    assert (
        base.code_key()
        == KernelSpec("k", "x", 9, 9, 0, (ptr("a", "int32", 8),)).code_key()
    )
    assert (
        base.code_key()
        != KernelSpec("k", "y", 1, 1, 0, (ptr("a", "int32", 4),)).code_key()
    )
    assert (
        base.code_key()
        != KernelSpec("k", "x", 1, 1, 0, (ptr("a", "uint32", 4),)).code_key()
    )


def test_rewrite_keeps_line_numbers_and_binds_dynamic_shared_memory():
    src = (
        "#include <cstdint>\n#define TILE 4\n"
        'extern "C" __global__ void k(float* o) {\n'
        "  extern __shared__ __align__(16) float buf[];\n"
        "  static __shared__ int s[TILE];\n}\n"
        'extern "C" {\n__device__ int helper() { return 1; }\n}\n'
    )
    text, includes, defines = cpu_source.rewrite(src)
    assert text.count("\n") == src.count("\n")
    assert includes == ["#include <cstdint>"] and defines == ["TILE"]
    assert "float* const buf = reinterpret_cast<float*>(::gs::dyn_smem());" in text
    assert "static __shared__" not in text and '"C"' not in text
    assert "namespace {" in text


def test_raw_asm_detection_ignores_comments_strings_and_ptx_only():
    assert cpu_source.raw_asm('void f() { asm volatile("bar.sync 0;"); }')
    assert cpu_source.raw_asm('void f() { __asm__("nop"); }')
    assert not cpu_source.raw_asm('// asm volatile("x")\nconst char* s = "asm";')
    assert not cpu_source.raw_asm(
        'GS_PTX_ONLY("wgmma", asm volatile("wgmma.fence.sync.aligned;"));'
    )
    assert cpu_source.raw_asm('GS_PTX_ONLY("x", f(")")); asm("nop");')
