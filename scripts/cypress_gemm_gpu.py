"""Issue 30 on a GPU: seed 001's Fig. 5 GEMM (examples/cypress/gemm.cyp) through our
Cypress compiler (dependence analysis, vectorisation, copy elimination, allocation,
warp specialisation with its 3-deep pipeline) lowered to GPU IR
(compiler/cypress_cuda/to_gpuir.py), compiled by gpuir_cuda and launched through the
project's backend, at N = M = K = 256 .. 4096.

    python scripts/cypress_gemm_gpu.py --out gpu-out/cypress_gemm.json
        [--backend cuda|cpu] [--sizes 256,512,..] [--variants fig5-hopper,..]
        [--check-upto 512] [--fma-upto 2048] [--warmup 3] [--iters 20]
        [--mappings all|none|u128-v128-wgs2-p4,..] [--fused all|none|NAME,..]

The figure's mapping is kept but for the K tile: W = 32, not 64, because the data are
float32 (the Cypress target's small integers, in [-3, 3]), and three 256 x 64 + 64 x
256 float32 stages need 384 KiB of shared memory, more than a block has (rule
Pipeline-OutOfMemory; the figure's f16 needs half). Variants (`VARIANTS`):
`fig5-hopper`, the lowering's TMA + wgmma form (to_gpuir_hopper.py: the mapping's
partition_by_mma names WGMMA_64x256x16); `fig5-fma`, the same IR in the FMA form
(plain copies, an FMA loop a thread; to N = `--fma-upto`); `u128-hopper`, the block
tile 128 x 256 (each warpgroup one 64 x 256 float32 accumulator, 128 registers a
thread; Fig. 5b's 256 x 256 needs 256, which ptxas must spill). `--mappings`
(`MAPPINGS`, named `uU-vV-wgsG-pP`) adds other legal mappings of the same program
in the Hopper form: block tile U x V, G warpgroups, a pipeline P deep (seed 001
l.163: a mapping changes only the speed); each row is checked as every other, and
`best` names, per N, the fastest row whose C is exact, beside Fig. 5's own (both
ratios, never only the best). `--fused` (default all) runs each named Hopper-form
variant and mapping a second time as `NAME-fused`: our variant of Fig. 5 whose gemm
leaf is `mma_fma` (C = fma(A, B, C) for k ascending, one rounding a step; errata
"Extension: fused mma"), lowered to the fused wgmma, which gpuir_cuda emits with
`__fmaf_rn` (FFMA) where the plain one has a multiply and an add (FMUL + FADD);
`best` is then given per leaf. Its rows are checked as the others: on the integer
data every partial sum is exact, so the reading of either leaf is the exact product
(tests/cypress/test_fused_mma.py). A fused name may end in the two choices of the
fused nest's emission (gpuir_cuda's `instr.FusedNest`; `NAME-fused` alone: the
compiler's default): `NAME-fused-grouped-acopy`, `-grouped-noacopy`,
`-nogrouped-acopy`, `-nogrouped-noacopy` (grouped: branch cyperf4's nest on 64 x 256
tiles; acopy: cyperf5's per-warp copy of A; the same bits, other speeds:
results/cypress/gemm_speed.md, cyknob), or in `NAME-fused-blocked` (the accumulator
in the blocked layout, each thread an 8 x N / 16 block of a 64 x N tile: branch
cyfrag), then optionally `-prefetch` (the next chunk's operands loaded before this
chunk's FFMAs: cyfrag2) and `-k1`, `-k2` or `-k4` (k a chunk; else by registers),
e.g. `NAME-fused-blocked-prefetch-k2`; `--fused` takes such names too. Per row:

- ours: one checked launch of each kernel in order (the Hopper form transposes B
  first), then `CudaBackend.time_kernel_each` per kernel (CUDA events, `--warmup`,
  then `--iters`; the median): ours_ms is their sum;
- cuda_sha256: of the kernels' CUDA (rows with one hash ran the same code, e.g. the
  `grouped` choice on tiles it does not apply to);
- cuBLAS: `cupy.matmul` on the same device data (FP32: setup.sh sets CUPY_TF32=0),
  timed the same way; ratio = ours_ms / cublas_ms (above 1: ours is slower);
- checked: ours equals the Cypress sequential reading (interpreter/cypress/seq.py)
  up to `--check-upto` (its NumPy interpretation of every leaf call costs about 3 s
  at 256 and 22 s at 512 on one core), and equals the exact product (NumPy float64:
  integer data, every float32 sum exact; gpuir_cuda's wgmma is exact float32 on the
  CUDA cores, and a tensor core's tf32 would be exact on them too) at
  every size; cuBLAS's result is checked against the exact product too.

One JSON (`--out`, rewritten after every row): rows of n, variant, mapping, lowered
(or the one-line reason it is not), ours_ms, kernels_ms, cublas_ms, ratio,
ours_tflops, agree_reading, agree_exact, cublas_exact; `best` per N (fig5_ratio and
the best exact row's variant, mapping and ratio), and the command and device. Exit 1 when a
row disagrees or a kernel fails, 2 (one line) when the backend is missing.

`--ablate VARIANT,..` (at N = `--ablate-n`, 4096) adds, for timing only, each named
row with a part of the GEMM kernel's CUDA left out (`ABLATIONS`): `no-copies` (the
DMA warp's bulk copies, the expect_tx bytes 0: the compute and the barriers alone)
and `no-math` (the wgmma nest's k chunks: the copies and the barriers alone). Their C
is wrong by construction: such a row has `ablation`, no agree_* and never counts as
a disagreement or as `best`; ours_ms against the full row says which part bounds
the kernel (results/cypress/gemm_speed.md). `--backend
cpu` runs the same code on the cpu harness against numpy.matmul (wall clock with
the builds, not a speed). The lead runs it on the GPU: `bash scripts/gpu.sh cypress`.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import platform
import re
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIG5 = ROOT / "examples" / "cypress" / "gemm.cyp"


@dataclass(frozen=True)
class Mapping:
    """The tunables of Fig. 5b a variant sets: block tile U x V (gemm_host), warpgroups
    (WGS of gemm_tile, clear_tile, copy_tile), pipeline depth (gemm_block), and the
    lowering's form. Fig. 5b itself: 256, 256, 2, 3."""

    u: int = 256
    v: int = 256
    wgs: int = 2
    depth: int = 3
    form: str = "hopper"
    fused: bool = False  # ours: the leaf mma_fma (`fused`), not Fig. 5a's mma
    # the fused nest's emission (instr.FusedNest's fields); None: the compiler's
    # default. Not the program's: its reading and the exact product are the same.
    grouped: bool | None = None
    a_copy: bool | None = None
    layout: str | None = None  # "blocked": FusedNest.layout (cyfrag)
    prefetch: bool = False  # FusedNest.prefetch, of the blocked layout (cyfrag2)
    chunk: int = 0  # FusedNest.chunk, of the blocked layout (cyfrag2)
    # the warps issuing a stage's copies (to_gpuir_hopper.emit_hopper, cydma): 1,
    # or 4 (the DMA warpgroup, each warp a quarter of the rows): NAME-dma4
    dma_warps: int = 1
    # the warp config's setmaxnreg counts emitted (gpuir_cuda's split_roles, cyreg):
    # the compute warps 232 registers, the DMA warps 40; NAME-regs
    setmaxnreg: bool = False

    def describe(self) -> dict:
        out = {"U": self.u, "V": self.v, "WGS": self.wgs, "pipeline": self.depth,
               "W": 32, "form": self.form, "leaf": FUSED_LEAF if self.fused
               else "mma"}
        if self.dma_warps != 1:  # absent on the default: older rows' dicts stay
            out["dma_warps"] = self.dma_warps
        if self.setmaxnreg:  # absent on the default, as dma_warps
            out["setmaxnreg"] = True
        if self.fused:
            nest = nest_of(self)
            out["nest"] = {"grouped": nest.grouped, "a_copy": nest.a_copy,
                           "layout": nest.layout, "prefetch": nest.prefetch,
                           "chunk": nest.chunk, "default": nest == default_nest()}
        return out

    def as_fused(self) -> Mapping:
        return replace(self, fused=True)

    def program(self) -> Mapping:
        """The mapping without the nest's choices: what the program text says."""
        return replace(self, grouped=None, a_copy=None, layout=None, prefetch=False,
                       chunk=0, dma_warps=1, setmaxnreg=False)


def default_nest():
    from gpusem.compiler.gpuir_cuda.instr import FUSED_NEST

    return FUSED_NEST


def nest_of(m: Mapping):
    """The fused nest's emission for `m` (instr.FusedNest): its choices where set,
    the compiler's default where not."""
    if m.layout == "blocked":  # its own nest: neither choice of the wgmma layout's
        return replace(default_nest(), grouped=False, a_copy=False, layout="blocked",
                       prefetch=m.prefetch, chunk=m.chunk)
    chosen = {k: v for k in ("grouped", "a_copy") if (v := getattr(m, k)) is not None}
    return replace(default_nest(), **chosen)


# NAME-fused-<grouped|nogrouped>-<acopy|noacopy>: the fused nest's two choices on
# wgmma's fragment layout; NAME-fused-blocked[-prefetch][-k1|-k2|-k4]: the blocked
# layout's nest (cyfrag), software-pipelined and with a chunk of 1, 2, 4 k (cyfrag2)
NEST_SUFFIX = re.compile(
    r"-fused-(?:(no)?grouped-(no)?acopy|(blocked)(-prefetch)?(?:-k([124]))?)$")


# Fig. 5b's 256 x 256 tile (each of its 2 warpgroups holds 2 64 x 256 float32
# accumulators, 256 registers a thread: more than a thread has, so ptxas spills) and
# the 128 x 256 tile that fits (128).
VARIANTS = {"fig5-hopper": Mapping(), "fig5-fma": Mapping(form="fma"),
            "u128-hopper": Mapping(u=128)}
# Other mappings in the Hopper form (to_gpuir_hopper.hopper_fits: 64 rows a
# warpgroup, V <= 256; the stages in 227 KiB): fewer accumulators a thread (V = 128:
# 64 registers, room for operands in flight), more compute warps a CTA (4
# warpgroups), a deeper pipeline, and smaller tiles for more CTAs at small N (N =
# 1024 with 256 x 256 tiles is 16 CTAs on 132 SMs).
MAPPINGS = {f"u{m.u}-v{m.v}-wgs{m.wgs}-p{m.depth}": m for m in (
    Mapping(u=128, v=256, wgs=2, depth=4),
    Mapping(u=128, v=128, wgs=2, depth=4),
    Mapping(u=256, v=128, wgs=4, depth=3),
    Mapping(u=256, v=128, wgs=4, depth=4),
    Mapping(u=128, v=128, wgs=1, depth=4),
    Mapping(u=64, v=128, wgs=1, depth=4),
    Mapping(u=64, v=64, wgs=1, depth=4),
)}

# Tiles that give each compute thread 128 accumulators in 2 warpgroups (cyreg): they
# fit the compute warps' 232 registers after setmaxnreg (NAME-...-regs), not the
# launch's 168. Names like MAPPINGS', not in `--mappings all` (that set's rows stay).
WIDE = {f"u{m.u}-v{m.v}-wgs{m.wgs}-p{m.depth}": m for m in (
    Mapping(u=256, v=128, wgs=2, depth=3),
    Mapping(u=256, v=128, wgs=2, depth=4),
)}

FUSED_LEAF = "mma_fma"
FUSED_NOTE = ("# OURS, NOT THE PAPER'S: Fig. 5 with the leaf mma_fma (C = fma(A, B, C), "
              "k ascending, one rounding a step;\n# errata \"Extension: fused mma\") in "
              "place of Fig. 5a's mma, rendered by scripts/cypress_gemm_gpu.py.\n")


def render(n: int, m: Mapping = Mapping()) -> str:
    """Fig. 5 at N = M = K = n, with the float32 K tile and mapping `m`'s tunables;
    with `m.fused`, our variant whose gemm leaf is `mma_fma` (labelled in the text:
    the paper's program, examples/cypress/gemm.cyp, stays as it is)."""
    text = FIG5.read_text()
    if m.fused:
        assert text.count("    mma(C, A, B)\n") == 1, "Fig. 5's leaf moved"
        text = FUSED_NOTE + text.replace("    mma(C, A, B)\n",
                                         f"    {FUSED_LEAF}(C, A, B)\n")
    for old, new in [('tunables={"U": 256, "V": 256}',
                      f'tunables={{"U": {m.u}, "V": {m.v}}}'),
                     ('tunables={"W": 64}', 'tunables={"W": 32}'),
                     ("pipeline=3)", f"pipeline={m.depth})")]:
        assert text.count(old) == 1, f"Fig. 5's {old} moved"
        text = text.replace(old, new)
    assert text.count('tunables={"WGS": 2}') == 3, "Fig. 5's WGS moved"
    text = text.replace('tunables={"WGS": 2}', f'tunables={{"WGS": {m.wgs}}}')
    header = f"# inputs: C=float32[{n},{n}] A=float32[{n},{n}] B=float32[{n},{n}]"
    return re.sub(r"^# inputs: .*$", header, text, count=1, flags=re.MULTILINE)


def lower(text: str, form: str = "auto", dma_warps: int = 1):
    """(program, arrays, scalars, GPU IR text) after every pass of our compiler
    (`dma_warps`: Mapping.dma_warps)."""
    from gpusem.calculus.cypress.reader import read_program
    from gpusem.compiler.cypress_cuda.allocate import allocate
    from gpusem.compiler.cypress_cuda.copyelim import eliminate_copies
    from gpusem.compiler.cypress_cuda.dependence import dependence_analysis
    from gpusem.compiler.cypress_cuda.to_gpuir import lower_gemm
    from gpusem.compiler.cypress_cuda.vectorize import vectorize
    from gpusem.compiler.cypress_cuda.warpspec import warp_specialise

    program = read_program(text, FIG5.name)
    arrays, scalars = inputs(text)
    ir = dependence_analysis(program, arrays, scalars)
    ir = warp_specialise(allocate(eliminate_copies(vectorize(ir), program), program),
                         program)
    return program, arrays, scalars, lower_gemm(ir, program, arrays, "fig5_gemm",
                                                form, dma_warps)


def inputs(text: str) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The header's inputs; above its guard of 2^22 elements a tensor (N = 4096), the
    same draw (calculus/cypress/inputs.py: seed 0, integers in [-3, 3], in header
    order) made here."""
    from gpusem.calculus.cypress.inputs import MAX_ELEMENTS, header_inputs, make_inputs

    spec = header_inputs(text) or ""
    shapes = [(name, tuple(int(x) for x in dims.split(",")))
              for name, dims in re.findall(r"(\w+)=float32\[([0-9,]+)\]", spec)]
    if all(np.prod(shape) <= MAX_ELEMENTS for _, shape in shapes):
        return make_inputs(spec)
    rng = np.random.default_rng(0)
    return {name: rng.integers(-3, 4, size=shape).astype(np.float32)
            for name, shape in shapes}, {}


# Timing attribution (`--ablate`): text edits of the emitted CUDA, each leaving out
# one part of the GEMM kernel. Each must apply (a kernel it does not change is an
# error, never a silent full row).
ABLATIONS = {
    "no-copies": [(r"gs_i\+\+\) gs_bulk_copy_g2s(?:_multicast)?\(.*?\);\n",
                   "gs_i++) {}  // ablated: no-copies\n"),
                  (r"(gs_mbar_arrive_expect_tx\([^;]*?), [1-9]\d*u\)", r"\1, 0u)")],
    "no-math": [(r"gs_kc < [1-9]\d*; gs_kc \+=", "gs_kc < 0; gs_kc +=")],
}


def ablate(source: str, what: str) -> str:
    for pattern, repl in ABLATIONS[what]:
        source, n = re.subn(pattern, repl, source)
        if n == 0:
            raise ValueError(f"ablation {what}: {pattern!r} matches nothing")
    return source


def jobs_for(gpuir: str, arrays: dict[str, np.ndarray], timeout_s: float,
             ablation: str = "", nest=None, setmaxnreg: bool = False):
    """One Job per kernel of the proc (the Hopper form: the transposition of B,
    then the GEMM), each on the arrays the kernels before it leave; with
    `ablation`, the GEMM's source edited (`ablate`); `nest`: the fused nest's
    emission (instr.FusedNest; None: the default); `setmaxnreg`: Mapping's."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.backends.kernel import Job
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc

    proc = parse_module(gpuir, "fig5_gemm.gpuir").procs[-1]
    m, n = arrays["C"].shape
    defines = {"M": m, "N": n, "K": arrays["A"].shape[1]}
    state = {p.name: (arrays[p.name] if p.name in arrays else
                      np.zeros((n, m), np.float32)).reshape(-1).copy()
             for p in proc.data_params}
    specs = compile_proc(proc, defines, source=gpuir, file="fig5_gemm.gpuir",
                         fused=nest, setmaxnreg=setmaxnreg).specs()
    if ablation:
        specs = [replace(sp, source=ablate(sp.source, ablation)) for sp in specs]

    def job(spec) -> Job:
        return Job(spec, {p.name: state[p.name] if p.pointer else defines[p.name]
                          for p in spec.params}, 0, timeout_s)
    return specs, state, job


def run_all(backend, gpuir: str, arrays: dict[str, np.ndarray], timeout_s: float,
            ablation: str = "", nest=None, setmaxnreg: bool = False):
    """(C, the jobs as launched, "" or why a kernel failed)."""
    specs, state, job = jobs_for(gpuir, arrays, timeout_s, ablation, nest,
                                 setmaxnreg)
    jobs = []
    for spec in specs:
        jobs.append(job(spec))
        (res,) = backend.run([jobs[-1]])
        if not res.ok:
            return None, jobs, f"{spec.name}: {res.kind}: {res.message[:300]}"
        state.update({k: np.asarray(v).reshape(-1) for k, v in res.outputs.items()})
    return state["C"], jobs, ""


def gpu_timer(xp, warmup: int, iters: int):
    def median_ms(call) -> float:
        for _ in range(warmup):
            call()
        marks = [xp.cuda.Event() for _ in range(iters + 1)]
        marks[0].record()
        for mark in marks[1:]:
            call()
            mark.record()
        marks[-1].synchronize()
        return statistics.median(xp.cuda.get_elapsed_time(a, b)
                                 for a, b in itertools.pairwise(marks))
    return median_ms


def wall_timer(warmup: int, iters: int):
    def median_ms(call) -> float:
        for _ in range(warmup):
            call()
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            call()
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)
    return median_ms


def baseline(a: np.ndarray, b: np.ndarray, on_gpu: bool, warmup: int, iters: int
             ) -> tuple[str, np.ndarray, float]:
    if on_gpu:
        import cupy as xp

        da, db = xp.asarray(a), xp.asarray(b)
        got = xp.asnumpy(xp.matmul(da, db))
        ms = gpu_timer(xp, warmup, iters)(lambda: xp.matmul(da, db))
        return f"cupy.matmul (cuBLAS FP32, CuPy {xp.__version__})", got, ms
    got = a @ b
    return "numpy.matmul (cpu backend)", got, wall_timer(warmup, iters)(lambda: a @ b)


READINGS: dict[tuple[int, Mapping], np.ndarray] = {}  # seq's C: one a program
EXACT: dict[tuple[int, int, int], np.ndarray] = {}  # the exact product, the last N's


def row(n: int, variant: str, m: Mapping, args, backend, ablation: str = "") -> dict:
    from gpusem.calculus.errors import GpusemError
    from gpusem.interpreter.cypress.seq import seq

    form = m.form
    out: dict = {"n": n, "variant": variant, "tile": [m.u, m.v], "form": form,
                 "mapping": m.describe()}
    if ablation:
        out["ablation"] = ablation
    t = time.perf_counter()
    try:
        program, arrays, scalars, gpuir = lower(render(n, m), form, m.dma_warps)
    except GpusemError as err:
        out["lowered"] = err.one_line()
        return out
    out["lowered"] = "yes"
    out["lower_s"] = round(time.perf_counter() - t, 3)
    a, b = arrays["A"], arrays["B"]
    key = (n, a.tobytes().__hash__(), b.tobytes().__hash__())
    if key not in EXACT:  # the same inputs for every mapping of one N
        EXACT.clear()
        EXACT[key] = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    exact = EXACT[key]
    want = None
    if n <= args.check_upto and not ablation:
        if (n, m.program()) not in READINGS:
            t = time.perf_counter()
            READINGS[n, m.program()] = seq(program, arrays, scalars)[0]["C"]
            out["seq_s"] = round(time.perf_counter() - t, 3)
        want = READINGS[n, m.program()]
    t = time.perf_counter()
    got, jobs, failed = run_all(backend, gpuir, arrays, args.timeout, ablation,
                                nest_of(m), m.setmaxnreg)
    if failed:
        out["failed"] = failed
        return out
    out["cuda_sha256"] = hashlib.sha256("".join(
        j.spec.source for j in jobs).encode()).hexdigest()
    if not ablation:  # an ablated kernel's C is wrong by construction
        got = np.asarray(got).reshape(n, n)
        out["agree_reading"] = None if want is None else bool(np.array_equal(got,
                                                                             want))
        out["agree_exact"] = bool(np.array_equal(got, exact))
    on_gpu = backend.name == "cuda"
    if on_gpu:  # every kernel of ours counts (the Hopper form's transposition too)
        each = [statistics.median(backend.time_kernel_each(j, args.warmup,
                                                           args.iters))
                for j in jobs]
        out["kernels_ms"] = each
        out["ours_ms"] = sum(each)
    else:
        out["ours_ms"] = (time.perf_counter() - t) * 1e3  # wall clock, builds in
    name, base, base_ms = baseline(a, b, on_gpu, args.warmup, args.iters)
    out.update(baseline=name, cublas_ms=base_ms,
               cublas_exact=bool(np.array_equal(base.reshape(n, n), exact)),
               ratio=out["ours_ms"] / base_ms if base_ms else None,
               ours_tflops=2 * n**3 / (out["ours_ms"] * 1e-3) / 1e12)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="gpu-out/cypress_gemm.json")
    ap.add_argument("--backend", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--sizes", default="", help="N values, by commas or spaces")
    ap.add_argument("--check-upto", type=int, default=512)
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="names of VARIANTS (none: only --mappings and --fused)")
    ap.add_argument("--fma-upto", type=int, default=2048,
                    help="the FMA form only up to this N (its kernel is slow)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--mappings", default="none",
                    help="all, none, or names of MAPPINGS to try beside --variants")
    ap.add_argument("--fused", default="all",
                    help="all, none, or names of the variants and mappings (Hopper "
                         "form) also run as our fused variant (leaf mma_fma), each "
                         "row NAME-fused; or fused names with the nest's choices, "
                         "NAME-fused-[no]grouped-[no]acopy or "
                         "NAME-fused-blocked[-prefetch][-k1|-k2|-k4]")
    ap.add_argument("--ablate", default="",
                    help="variants or mappings to time with a part left out "
                         "(ABLATIONS), at N = --ablate-n only")
    ap.add_argument("--ablate-n", type=int, default=4096)
    args = ap.parse_args(argv)
    chosen = {} if args.mappings == "none" else dict(MAPPINGS) \
        if args.mappings == "all" else {k: MAPPINGS[k] for k in args.mappings.split(",")}
    runs = {**{v: VARIANTS[v] for v in args.variants.split(",")
               if args.variants != "none"}, **chosen}
    runs |= fused_runs(runs, args.fused)
    default = "256,512,1024,2048,4096" if args.backend == "cuda" else "256"
    sizes = [int(s) for s in re.split(r"[,\s]+", (args.sizes or default).strip())]
    from gpusem.calculus.errors import CannotRunHere
    from gpusem.compiler.backends.registry import shared_backend

    try:
        backend = shared_backend(args.backend)
        if args.backend == "cuda":
            import cupy  # noqa: F401
    except (CannotRunHere, ImportError) as err:
        print(f"cypress_gemm_gpu: no {args.backend} backend here: {err}"[:300])
        return 2
    report = {"command": " ".join(["python", *sys.argv]), "backend": args.backend,
              "device": platform.node(), "fig5": str(FIG5.relative_to(ROOT)),
              "mapping": "Fig. 5b with W = 32 (float32)", "rows": [], "best": []}
    bad = False
    for n, (variant, m) in itertools.product(sizes, runs.items()):
        if m.form == "fma" and n > args.fma_upto:
            continue
        r = row(n, variant, m, args, backend)
        bad |= "failed" in r or r.get("agree_exact") is False \
            or r.get("agree_reading") is False
        report["rows"].append(r)
        report["best"] = best(report["rows"])
        print(json.dumps(r), flush=True)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    for variant, what in itertools.product(filter(None, args.ablate.split(",")),
                                           ABLATIONS):
        if args.ablate_n not in sizes:
            break
        r = row(args.ablate_n, variant, named(variant), args, backend, what)
        bad |= "failed" in r
        report["rows"].append(r)
        print(json.dumps(r), flush=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    for b in report["best"]:
        print(json.dumps(b), flush=True)
    return 1 if bad else 0


def fused_runs(runs: dict[str, Mapping], which: str) -> dict[str, Mapping]:
    """NAME-fused: the same mapping with our leaf mma_fma, for each Hopper-form run
    `which` names (all: every run; none; or names of VARIANTS and MAPPINGS, run or
    not, or such a name's fused row with the nest's choices, `named`); the FMA
    form has no fused lowering."""
    known = {**VARIANTS, **MAPPINGS, **WIDE, **runs}
    names = [] if which == "none" else list(runs) if which == "all" \
        else which.split(",")
    chosen = {k: named(k) for k in names
              if _chosen(k)}
    return {f"{k}-fused": known[k].as_fused() for k in names
            if k not in chosen and known[k].form == "hopper" and not known[k].fused
            } | chosen


def _chosen(k: str) -> bool:
    """A row name with the fused nest's or the DMA's or the registers' choices
    (`named` reads each)."""
    return k.endswith("-regs") or bool(
        NEST_SUFFIX.search(k) or k.endswith("-fused-dma4")
        or (k.endswith("-dma4") and NEST_SUFFIX.search(k[:-5])))


def named(name: str) -> Mapping:
    """The run a row name means: a variant or mapping, NAME-fused (our leaf
    mma_fma), NAME-fused-[no]grouped-[no]acopy (and the fused nest's choices:
    instr.FusedNest) or NAME-fused-blocked[-prefetch][-kC] (its blocked layout,
    software-pipelined, C k a chunk); any of them -dma4: a stage's copies issued by
    the DMA warpgroup's 4 warps (cydma); then -regs: the warp config's setmaxnreg
    emitted, the compute warps' code apart from the DMA warps' (cyreg)."""
    known = {**VARIANTS, **MAPPINGS, **WIDE}
    if name.endswith("-regs"):  # setmaxnreg (gpuir_cuda.roles, cyreg)
        base = named(name.removesuffix("-regs"))
        if base.form != "hopper":
            raise ValueError(f"{name}: the {base.form} form has no warp roles")
        return replace(base, setmaxnreg=True)
    if name.endswith("-dma4"):  # the copies over the DMA warpgroup's 4 warps (cydma)
        base = named(name.removesuffix("-dma4"))
        if base.form != "hopper":
            raise ValueError(f"{name}: the {base.form} form has no DMA warp")
        return replace(base, dma_warps=4)
    if (m := NEST_SUFFIX.search(name)) is not None:
        base = known[name[:m.start()]]
        if base.form != "hopper":
            raise ValueError(f"{name}: the {base.form} form has no fused wgmma")
        if m.group(3):
            return replace(base.as_fused(), layout="blocked",
                           prefetch=m.group(4) is not None,
                           chunk=int(m.group(5) or 0))
        return replace(base.as_fused(), grouped=m.group(1) is None,
                       a_copy=m.group(2) is None)
    if name.endswith("-fused"):
        return known[name.removesuffix("-fused")].as_fused()
    return known[name]


def best(rows: list[dict]) -> list[dict]:
    """Per N and leaf (mma: exact float32 with a multiply and an add a step; mma_fma:
    ours, one fma a step): Fig. 5's own ratio and the fastest row whose C is the
    exact product (and the reading's, where checked), with its mapping. A row that
    failed or disagrees is never the best."""
    out = []
    for n, leaf in itertools.product(sorted({r["n"] for r in rows}),
                                     ("mma", FUSED_LEAF)):
        mine = [r for r in rows if r["n"] == n and "ablation" not in r
                and r["mapping"]["leaf"] == leaf]
        if not mine:
            continue
        good = [r for r in mine if r.get("agree_exact") is True
                and r.get("agree_reading") is not False and "failed" not in r
                and r.get("ratio") is not None]
        fig5 = next((r for r in mine if r["variant"].startswith("fig5-hopper")
                     and r["mapping"]["form"] == "hopper"
                     and r["mapping"].get("nest", {}).get("default", True)), {})
        top = min(good, key=lambda r: r["ours_ms"], default=None)
        out.append({"n": n, "leaf": leaf, "fig5_ms": fig5.get("ours_ms"),
                    "fig5_ratio": fig5.get("ratio"),
                    "best_variant": top and top["variant"],
                    "best_mapping": top and top["mapping"],
                    "best_ms": top and top["ours_ms"],
                    "best_ratio": top and top["ratio"],
                    "cublas_ms": top and top["cublas_ms"]})
    return out


if __name__ == "__main__":
    sys.exit(main())
