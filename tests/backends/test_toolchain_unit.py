"""One unit for the host configurations of a batch (`toolchain.host_unit`): the matrix
builds nvcc-O3, nvcc-G, ptxas-O0 and ptx-jit of a round from ONE nvcc front end, and
what each configuration builds for a kernel is what it built before, when each
configuration had the batch in its own order (the order of the tagged code keys).
No GPU: the host builds are the tree's, nvcc and ptxas as installed."""

from __future__ import annotations

import re
from functools import cache

from gpusem.compiler.backends import toolchain_build as tb
from gpusem.compiler.backends.kernel import KernelSpec
from gpusem.compiler.backends.toolchain import TAG, MatrixBackend, host_unit, variant


@cache
def round_specs(seed: int = 23, count: int = 24) -> tuple[KernelSpec, ...]:
    """Distinct kernels of a toolchain campaign's first round of `seed`."""
    from gpusem.compiler.bundl_cuda.launch import kernel_spec
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target = BundlTarget("cpu")
    specs: dict[str, KernelSpec] = {}
    try:
        for drawn in generate_round(target.strategy("toolchain"), round_seed(seed, 0),
                                    100):
            try:
                spec = kernel_spec(compile_program(as_generated(drawn.program).program,
                                                   CompileOptions()))
            except Exception:  # noqa: BLE001, S112 - the compile property's finding
                continue
            specs.setdefault(spec.code_key(), spec)
    finally:
        target.close()
    return tuple(list(specs.values())[:count])


def old_items(specs: tuple[KernelSpec, ...], config: str
              ) -> list[tuple[int, str, str]]:
    """The batch as `_ensure_built` hands it over and as the host build took it before
    `host_unit`: by the tagged code key, the tag removed."""
    from gpusem.compiler.backends.toolchain import untagged

    tagged = sorted((variant(s, config) for s in specs), key=lambda s: s.code_key())
    return [(i, s.name, untagged(s.source)) for i, s in enumerate(tagged)]


def nvcc_calls(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real = tb._run

    def counted(cmd: list[str], cwd: str):
        calls.append(cmd)
        return real(cmd, cwd)

    monkeypatch.setattr(tb, "_run", counted)
    return calls


def test_the_host_configs_of_a_round_run_nvcc_once_each(monkeypatch):
    specs = round_specs(count=6)
    orders = {c: [untagged_text for _, _, untagged_text in old_items(specs, c)]
              for c in tb.HOST_CONFIGS}
    assert len({tuple(o) for o in orders.values()}) > 1  # the batch orders differ
    tb._NVVM.clear()
    calls = nvcc_calls(monkeypatch)
    gpu = MatrixBackend()
    for config in ("nvcc-O3", "nvcc-G", "ptxas-O0", "ptx-jit"):
        gpu.prepare([variant(s, config) for s in specs])
    tools = sorted((c[0].rsplit("/", 1)[-1], "-G" in c) for c in calls)
    assert tools == [("nvcc", False), ("nvcc", True), ("ptxas", False)]


def test_a_kernels_digest_and_entry_are_found_through_its_number():
    """The batch's index i is the unit's gs_k<n>: the digest, the entry and the
    binary of a spec are the kernel's own, whatever n is."""
    specs = round_specs(count=5)
    gpu = MatrixBackend()
    tagged = [variant(s, "nvcc-O3") for s in specs]
    gpu.prepare(tagged)
    alone = {}
    for spec in specs:
        _, binary, _ = tb.build("nvcc-O3", [(0, spec.name, spec.source)])
        alone[spec.code_key()] = tb.kernel_digests(binary)[0]
    for spec, t in zip(specs, tagged, strict=True):
        assert gpu.kernel_digest(t) == alone[spec.code_key()]
        binary, entry = gpu.binary_of(t)
        assert spec.name in entry and entry.encode() in binary


_NAMESPACE = re.compile(r"\d+gs_k\d+")
_BLOCK = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b.*?^\}",
                    re.MULTILINE | re.DOTALL)


def ptx_functions(ptx: bytes) -> list[str]:
    """The module's functions, each with its kernel's namespace number left out."""
    text = ptx.rstrip(b"\0").decode()
    return sorted(_NAMESPACE.sub("@", m.group(0)) for m in _BLOCK.finditer(text))


# nvcc-G's device-debug tables for cuda-gdb (registers, lines, the PTX text) list
# every kernel of the unit by name in unit order, and its debug labels ($L__tmp<n>,
# symbols of no section) are numbered through the unit: not code, and no other
# configuration has them (so nvcc-G shares no launch either way)
_DEBUG_TABLES = re.compile(rf"{tb._NOT_CODE.pattern}|^(\.rela)?\.nv_debug_.*$")
_SYMBOLS = tb._symbols


def _symbols_but_debug_labels(*args):
    return [(name, b"$L__" if name.startswith("$L__") else record)
            for name, record in _SYMBOLS(*args)]


def test_each_host_build_of_a_kernel_is_what_its_own_order_built(monkeypatch):
    """The machine code of every kernel of a generated round under nvcc-O3,
    ptxas-O0 and nvcc-G (kernel_digests: sections, symbols, relocations, the
    kernel's .nv.info records; for nvcc-G less its debugger tables), and ptx-jit's
    PTX function by function, are the same from the shared unit as from the
    configuration's own order."""
    specs = round_specs()
    assert len(specs) >= 20
    for config in ("nvcc-O3", "ptxas-O0", "ptx-jit", "nvcc-G"):
        chosen = specs if config != "nvcc-G" else specs[:8]  # -G: seconds a kernel
        before = old_items(chosen, config)
        after, slots = host_unit([(i, n, f"{s.rstrip()}\n{TAG}{config}\n")
                                  for i, n, s in before])
        assert [s for _, _, s in after] != [s for _, _, s in before]  # reordered
        e0, b0, _ = tb.build(config, before)
        e1, b1, _ = tb.build(config, after)
        assert e0 == {} and e1 == {}, (config, e0, e1)
        if config == "ptx-jit":
            assert ptx_functions(b0) == ptx_functions(b1)
            continue
        if config == "nvcc-G":
            monkeypatch.setattr(tb, "_NOT_CODE", _DEBUG_TABLES)
            monkeypatch.setattr(tb, "_symbols", _symbols_but_debug_labels)
        d0, d1 = tb.kernel_digests(b0), tb.kernel_digests(b1)
        assert len(d0) == len(before)
        assert {i: d1[slots[i]] for i in d0} == d0, config


def test_host_unit_numbers_the_kernels_by_their_text():
    items = [(3, "bundl_main", "c\n// gpusem toolchain config: ptxas-O0\n"),
             (0, "bundl_main", "b\n// gpusem toolchain config: ptxas-O0\n"),
             (7, "bundl_main", "a\n// gpusem toolchain config: ptxas-O0\n")]
    plain, slots = host_unit(items)
    assert [s for _, _, s in plain] == ["a\n", "b\n", "c\n"]
    assert [n for n, _, _ in plain] == [0, 1, 2]
    assert slots == {7: 0, 0: 1, 3: 2}
    other, same = host_unit([(i, n, s.replace("ptxas-O0", "nvcc-G"))
                             for i, n, s in reversed(items)])
    assert other == plain and same == slots


def test_a_host_kernels_digest_is_never_a_guess(monkeypatch):
    """Each host batch's numbering is kept while the batch is (past the bound only the
    kept batches' are); a host batch whose numbering is unknown has no digest (its
    jobs are launched, never shared with another configuration's)."""
    from gpusem.compiler.backends.cuda import MAX_MODULES_PER_WORKER

    def build(config, items):  # n -> the digest of the text numbered n
        return {}, b"cubin", {n: f"e{n}" for n, _, _ in items}

    monkeypatch.setattr(tb, "build", build)
    monkeypatch.setattr(tb, "kernel_digests", lambda binary: {0: "d0", 1: "d1"})
    specs = [KernelSpec("k", "b\n", 1, 1), KernelSpec("k", "a\n", 1, 1)]
    gpu = MatrixBackend()
    first = [variant(s, "ptxas-O0") for s in specs]
    gpu.prepare(first)
    # the batch holds them by tagged code key; the unit numbers them by text
    assert [gpu.kernel_digest(t) for t in first] == ["d1", "d0"]
    assert [gpu.binary_of(t)[1] for t in first] == ["e1", "e0"]
    batch = gpu._built[first[0].code_key()]
    for k in range(4 * MAX_MODULES_PER_WORKER):  # past the bound: the others go
        gpu.prepare([*first, variant(KernelSpec("k", f"x{k}\n", 1, 1), "ptxas-O0")])
    assert gpu._built[first[0].code_key()] is batch  # kept, so is its numbering
    assert [gpu.kernel_digest(t) for t in first] == ["d1", "d0"]
    assert len(gpu._slots) <= MAX_MODULES_PER_WORKER + 2
    gpu._slots.clear()
    assert [gpu.kernel_digest(t) for t in first] == [None, None]
