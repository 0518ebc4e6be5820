"""setmaxnreg on the warp-specialised GEMM (branch cyreg, issue 30; gpuir_cuda's
`roles.py`, bench suffix `-regs`): each register class's code in a branch of its own
from the K loop on, headed by its `setmaxnreg` (the DMA warps 40, the compute warps
232), `__launch_bounds__(T, 1)`, and the loops that index D by their variable
unrolled. Bit-exact against the GPU IR reading on the cpu harness; the kernels
compiled without the option are unchanged."""

from __future__ import annotations

import re
from dataclasses import replace
from types import ModuleType

import pytest

from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda import kir as K
from gpusem.compiler.gpuir_cuda.errors import CompileError
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from gpusem.compiler.gpuir_cuda.roles import launch_registers, pool_problem
from gpusem.compiler.gpuir_cuda.run import Case, check_batch, make_inputs
from gpusem.interpreter.gpuir.sequential import run_sequential
from tests.script_module import load_script

N = 256
SIZES = {"M": N, "N": N, "K": N}
DEC = "gs_setmaxnreg_dec(40);"  # setmaxnreg.dec.sync.aligned.u32 40 under nvcc
INC = "gs_setmaxnreg_inc(232);"
# the best kernel's tile, two tiles of 128 accumulators a thread (D over r = 2
# tiles: the unrolled loop), and the one-DMA-warp form (a class of 1 DMA warp and 3
# unused ones: the DMA branch stays a test inside the class's branch)
SPLIT = ("u128-v128-wgs2-p4-fused-blocked-dma4", "u256-v128-wgs2-p3-fused-blocked-dma4",
         "u128-hopper-fused-blocked")


@pytest.fixture(scope="module")
def mod() -> ModuleType:
    return load_script("cypress_gemm_gpu")


def _compiled(mod: ModuleType, name: str, n: int = N):
    m = mod.named(name)
    text = mod.lower(mod.render(n, m), m.form, m.dma_warps)[3]
    proc = parse_module(text, "fig5_gemm.gpuir").procs[-1]
    sizes = {"M": n, "N": n, "K": n}
    return text, proc, compile_proc(proc, sizes, source=text, fused=mod.nest_of(m),
                                     setmaxnreg=m.setmaxnreg)


def _gemm(source: str) -> str:
    """The GEMM kernel's text (the proc's second kernel)."""
    return source[source.index("fig5_gemm_1("):]


def test_split_kernels_equal_their_reading_on_the_cpu_harness(mod: ModuleType) -> None:
    """Each split kernel equals its GPU IR's reading bit for bit on the cpu harness
    (full-significand inputs). Control: the compute branch without its arrive on the
    empty barrier (a role's copy of the loop missing a statement) must not pass."""
    cases = []
    for name in SPLIT:
        text, proc, compiled = _compiled(mod, f"{name}-regs")
        inputs = make_inputs(proc, SIZES)
        case = Case(proc, dict(SIZES), inputs, run_sequential(proc, SIZES, inputs),
                    source=text)
        case.compiled = compiled
        cases.append(case)
    first = cases[0].compiled.source
    arrive = re.search(r"\n *gs_mbar_arrive\(&war\[[^\n]*\n", first)
    assert arrive is not None
    broken = first.replace(arrive.group(0), "\n")
    cases.append(replace(cases[0], compiled=replace(cases[0].compiled, source=broken)))
    verdicts = check_batch(cases, "cpu", seeds=(0,), timeout_s=300.0)
    bad = {name: v.describe() for name, v in zip(SPLIT, verdicts) if not v.agree}
    assert not bad, bad
    assert not verdicts[-1].agree, verdicts[-1].describe()


@pytest.mark.parametrize("name", SPLIT)
def test_each_role_has_its_own_loop_and_count(mod: ModuleType, name: str) -> None:
    """The GEMM kernel: one branch a class in the warp config's order, the compute
    class's (inc 232), then the DMA class's (dec 40); the K loop once in each; copies only in the DMA
    branch, FFMAs only in the compute branch; `__launch_bounds__(T, 1)` (without a
    minimum of CTAs an SM ptxas ignores setmaxnreg, C7508)."""
    _, _, compiled = _compiled(mod, f"{name}-regs")
    gemm = _gemm(compiled.source)
    assert "__launch_bounds__(384, 1) fig5_gemm_1(" in compiled.source
    assert gemm.count(DEC) == 1 and gemm.count(INC) == 1
    comp, dma = gemm.split(DEC)  # the warp config's order: compute, then DMA
    comp = comp[comp.index(INC):]
    assert len(re.findall(r"for \(int k = 0", dma)) == 1
    assert len(re.findall(r"for \(int k = 0", comp)) == 1
    assert "gs_bulk_copy_g2s" in dma and "gs_bulk_copy_g2s" not in comp
    assert "gs_ffma" in comp and "gs_ffma" not in dma
    assert dma.count("__syncthreads();") == comp.count("__syncthreads();") == 1
    if "dma4" not in name:  # 1 DMA warp in its class of 4: still tested inside
        assert "CudaWarps: warp(s) 8 .. 8 of dma" in dma


def test_without_the_option_the_kernels_are_unchanged(mod: ModuleType) -> None:
    """No setmaxnreg, one K loop, `__launch_bounds__(384)`: the option's absence is
    the compile as before (the name's `-regs` is the only switch; byte for byte
    against main: results/cypress/sass_cyreg/cuda_sha256_*.jsonl)."""
    _, _, plain = _compiled(mod, SPLIT[1])
    assert "setmaxnreg" not in plain.source
    assert "__launch_bounds__(384) fig5_gemm_1(" in plain.source
    assert len(re.findall(r"for \(int k = 0", _gemm(plain.source))) == 1


def test_register_tiles_indexed_by_a_loop_unroll_it(mod: ModuleType) -> None:
    """u256-v128-wgs2 (D[wg, r], r < 2): split, each loop over r gets `#pragma
    unroll` (nvcc keeps D in registers; rolled, in local memory); the default
    compile keeps them rolled."""
    _, _, split = _compiled(mod, f"{SPLIT[1]}-regs")
    _, _, plain = _compiled(mod, SPLIT[1])
    r_loop = re.compile(r"#pragma unroll\n *#endif\n *for \(int r = 0")
    assert len(r_loop.findall(_gemm(split.source))) == 3  # zero, K loop, store
    assert not r_loop.findall(_gemm(plain.source))


def test_counts_that_overfill_the_pool_are_refused(mod: ModuleType) -> None:
    """4 compute warpgroups at 232 and a DMA warpgroup at 40 (640 threads: 96
    registers a thread at launch) ask 123,904 registers of 61,440: the compute
    warps' setmaxnreg.inc would wait forever; refused, not emitted."""
    with pytest.raises(CompileError, match="wait forever"):
        _compiled(mod, "u256-v128-wgs4-p3-fused-blocked-dma4-regs")
    assert launch_registers(384) == 168 and launch_registers(640) == 96
    assert launch_registers(256) == 255
    roles = (K.WarpRole(("compute",), 0, 8, 0, 232), K.WarpRole(("dma",), 8, 4, 40))
    fits = K.GKernel("k", (), 1, 384, 1, (), roles=roles)
    assert pool_problem(fits) == ""  # 232 x 256 + 40 x 128 = 168 x 384
    over = replace(fits, roles=(replace(roles[0], inc=240), roles[1]))
    assert "wait forever" in pool_problem(over)


def test_the_benchmark_names_regs(mod: ModuleType) -> None:
    """NAME-regs after any Hopper row's suffixes; --fused takes it; the program (the
    reading a row is checked against) is the base row's; u256-v128-wgs2-pP are
    names, not in `--mappings all`."""
    m = mod.named("u256-v128-wgs2-p3-fused-blocked-dma4-regs")
    base = mod.named("u256-v128-wgs2-p3-fused-blocked-dma4")
    assert m == replace(base, setmaxnreg=True) and not base.setmaxnreg
    assert m.program() == base.program()
    assert m.describe()["setmaxnreg"] is True and "setmaxnreg" not in base.describe()
    runs = mod.fused_runs({}, "u256-v128-wgs2-p3-fused-blocked-dma4-regs,"
                          "u128-hopper-fused-regs")
    assert runs == {"u256-v128-wgs2-p3-fused-blocked-dma4-regs": m,
                    "u128-hopper-fused-regs": mod.named("u128-hopper-fused-regs")}
    assert "u256-v128-wgs2-p3" not in mod.MAPPINGS
    with pytest.raises(ValueError, match="fma form has no warp roles"):
        mod.named("fig5-fma-regs")


def test_the_cluster_gemm_example_splits_and_agrees() -> None:
    """examples/gpuir/gemm_hopper.gpuir (Exo-GPU's Hopper GEMM: clusters of 2 CTAs,
    the producer class first, 1 producer and 3 unused warps in it): split with
    setmaxnreg, the warp index taken within the CTA (`gs_t % 384`), and equal to its
    reading bit for bit on the cpu harness under 2 schedules."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "gpuir" / "gemm_hopper.gpuir"
    text = path.read_text()
    sizes = {"N": 256}
    proc = parse_module(text, path.name).procs[-1]
    compiled = compile_proc(proc, sizes, source=text, setmaxnreg=True)
    src = compiled.source
    assert src.count("gs_setmaxnreg_dec(40);") == 1
    assert src.count("gs_setmaxnreg_inc(232);") == 1
    assert src.index("gs_setmaxnreg_dec(40);") < src.index("gs_setmaxnreg_inc(232);")
    assert "if ((unsigned)(gs_t % 384 / 32) < 4u) {  // role split" in src
    assert "__launch_bounds__(384, 1)" in src
    inputs = make_inputs(proc, sizes)
    case = Case(proc, dict(sizes), inputs, run_sequential(proc, sizes, inputs),
                source=text)
    case.compiled = compiled
    (verdict,) = check_batch([case], "cpu", seeds=(0, 1), timeout_s=300.0)
    assert verdict.agree, verdict.describe()
