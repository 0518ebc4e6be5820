"""Issue 30 without a GPU: where Fig. 5's compiled GEMM spends its instructions, read
from the SASS (results/cypress/gemm_speed.md, branch cyperf3).

    python scripts/cypress_gemm_sass.py [--n 4096] [--mappings fig5-hopper-fused,..]
        [--keep DIR] [--no-fused-at] [--nests]

Per variant or mapping of scripts/cypress_gemm_gpu.py: the CUDA that script launches
(`lower(render(n, m))`, `compile_proc`), built as the cuda backend builds it (nvcc
-gencode arch=compute_90a,code=sm_90a --fmad=false, `-Xptxas -v`) and read with
`cuobjdump -sass` (toolchain_build.find_tool: Triton's copy where CUDA has none).
For the GEMM kernel it prints ptxas's registers, stack and spills (with `NAME-regs`,
the launch's count: `registers_named`, the highest register the code names + 1, and
`setmaxnreg`, the USETMAXREG counts, say what the warps got); the innermost loop
holding the FMULs, or the FFMAs of a `NAME-fused` mapping (our leaf mma_fma; one wgmma
a thread): its instructions by kind, instructions and LDS.128 a multiply-add (an FMUL +
FADD pair, or one FFMA); a one-warp issue model of that loop (in order, each instruction
when its sources are ready: LDS 33 cycles, the rest 4; instructions a cycle); the
extra register-read cycles a multiply-add of the loop's FP instructions under the
register-bank model published for Volta and Turing (`bank_stalls`; cyperf4), the
same with 4 banks (`bank4_...`: Kepler to Pascal's count; cyperf5), and its
reuse-cache hits; and the DMA warp's copies: loops over the lanes (BRA.U.ANY),
static UBLKCPs, and instructions a copy in each loop holding UBLKCPs. A fused name
may carry the fused nest's two choices, `NAME-fused-[no]grouped-[no]acopy`, or
the blocked accumulator layout, `NAME-fused-blocked` (cypress_gemm_gpu.py's
`named`); `--nests` builds, for each fused name given, all four (cyknob).
`lds_floats_a_product`: the floats the loop's shared loads bring a thread, per
multiply-add (an LDS.64 2, an LDS.128 4); `nest_span`: the loop from its first
shared load to its last multiply-add, its instructions, one-warp IPC and how many
multiply-adds each shared load runs ahead of its first use (`lds_lead`). Exit 2
(one line) without nvcc or cuobjdump.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LATENCY = {"LDS": 33, "LDL": 40, "S2R": 20}  # cycles; everything else 4
PRODUCTS = ("FMUL", "FFMA")  # one a multiply-add: FMUL + FADD (mma), FFMA (mma_fma)
LDS_FLOATS = {"LDS.64": 2, "LDS.128": 4}  # floats a thread an LDS brings (else 1)


def dma_of(m) -> tuple[int, ...]:
    """`lower`'s dma_warps where `m` asks for more than one (older benches have
    neither the field nor the argument)."""
    w = getattr(m, "dma_warps", 1)
    return (w,) if w != 1 else ()


def bench():
    spec = importlib.util.spec_from_file_location(
        "cypress_gemm_gpu", ROOT / "scripts" / "cypress_gemm_gpu.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def cuda_of(mod, n: int, m) -> str:
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc

    _, _, _, gpuir = mod.lower(mod.render(n, m), m.form, *dma_of(m))
    proc = parse_module(gpuir, "fig5_gemm.gpuir").procs[-1]
    regs = {"setmaxnreg": True} if getattr(m, "setmaxnreg", False) else {}
    return compile_proc(proc, {"M": n, "N": n, "K": n}, source=gpuir,
                        fused=mod.nest_of(m), **regs).source


def build(source: str, work: Path, name: str, nvcc: str, cuobjdump: str
          ) -> tuple[str, str]:
    """(ptxas -v text, SASS text)."""
    from gpusem.compiler.backends.cpu import HERE
    from gpusem.compiler.backends.nvcc import NVCC_FLAGS

    cu, cubin = work / f"{name}.cu", work / f"{name}.cubin"
    cu.write_text(source)
    res = subprocess.run([nvcc, *NVCC_FLAGS, "-cubin", "-Xptxas", "-v", f"-I{HERE}",
                          "-o", str(cubin), str(cu)],
                         capture_output=True, text=True, check=True).stderr
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True,
                          text=True, check=True).stdout
    return res, sass


def gemm_kernel(sass: str) -> tuple[str, list[tuple[int, str]]]:
    """The GEMM (the proc's last kernel, `fig5_gemm_<highest>`): its name and its
    (address, instruction without predicate)."""
    funcs = {f.split("\n", 1)[0].strip(): f
             for f in re.split(r"\n\s*Function : ", sass)[1:]}
    name = max(funcs, key=lambda f: int(f.rsplit("_", 1)[1]))
    return name, [(int(a, 16), re.sub(r"^@!?U?P\w+\s+", "", t))
                  for a, t in LINE.findall(funcs[name])]


def loops(ins: list[tuple[int, str]], raw: list[str]) -> list[tuple[int, int, bool]]:
    """(first, last index, over the lanes) of every backward branch's loop."""
    at = {a: i for i, (a, _) in enumerate(ins)}
    out = []
    for i, t in enumerate(raw):
        m = re.match(r"(?:@!?U?P\w+\s+)?BRA(\.U\.ANY)?\s+(0x[0-9a-f]+)", t)
        if m and int(m.group(2), 16) in at and int(m.group(2), 16) < ins[i][0]:
            out.append((at[int(m.group(2), 16)], i, m.group(1) is not None))
    return out


def op(t: str) -> str:
    return t.split()[0] if t else ""


def issue_model(body: list[str]) -> float:
    """Instructions a cycle of one warp alone issuing `body` in order."""
    ready: dict[int, int] = {}
    t = 0
    for text in body:
        name, _, rest = text.partition(" ")
        parts = [p for p in rest.replace(".reuse", "").split(",") if p.strip()]
        store = name.split(".")[0] in ("STS", "STL", "STG", "BRA") \
            or name.startswith("ISETP")
        regs = [[int(r) for r in re.findall(r"\bR(\d+)\b", p)] for p in parts]
        dst = [] if store or not regs else regs[0]
        srcs = [r for rs in (regs if store else regs[1:]) for r in rs]
        start = max([t, *(ready.get(r, 0) for r in srcs)])
        width = 4 if ".128" in name else 2 if ".64" in name else 1
        base = name.split(".")[0]
        for r in (range(dst[0], dst[0] + width) if dst and base in LATENCY
                  else dst[:1]):
            ready[r] = start + LATENCY.get(base, 4)
        t = start + 1
    return len(body) / max(t, 1)


def lds_lead(body: list[str]) -> dict:
    """Per shared load of `body`, the multiply-adds issued between it and the first
    instruction that reads a register it writes (how far ahead of its use a load
    is: with 33 cycles of LDS latency and 4 issue cycles a multiply-add a scheduler,
    about 8 hide it for one warp); min, median and the count under 8 (cyfrag2)."""
    leads = []
    for i, text in enumerate(body):
        name, _, rest = text.partition(" ")
        if not name.startswith("LDS") or not (m := re.match(r"\s*R(\d+)", rest)):
            continue
        width = 4 if ".128" in name else 2 if ".64" in name else 1
        mine = set(range(int(m.group(1)), int(m.group(1)) + width))
        n = 0
        for later in body[i + 1:]:
            srcs = later.partition(" ")[2].split(",", 1)
            regs = {int(r) for r in re.findall(r"\bR(\d+)\b", srcs[-1])}
            if len(srcs) == 2 and regs & mine:
                break
            n += op(later) in PRODUCTS
        leads.append(n)
    leads.sort()
    return {"min": leads[0], "median": leads[len(leads) // 2],
            "under_8": sum(x < 8 for x in leads)} if leads else {}


def bank_stalls(body: list[str], banks: int = 2) -> tuple[int, int]:
    """(extra register-read cycles, operands served by the reuse cache) of the FP
    instructions of `body` under the register-file model published for Volta and
    Turing (Jia et al., "Dissecting the NVIDIA Volta/Turing GPU architecture via
    microbenchmarking": `banks` banks, register r in bank r % banks, one read a
    bank a cycle; NVIDIA does not document Hopper's): a source read in the same
    slot as a `.reuse` operand of the instruction before comes from the reuse
    cache; of the others, every read past the first in one bank costs a cycle."""
    extra = reused = 0
    cached: list[int | None] = [None, None, None]
    for text in body:
        name, _, rest = text.partition(" ")
        if name.split(".")[0] not in ("FFMA", "FMUL", "FADD"):
            cached = [None, None, None]
            continue
        srcs = [p.strip() for p in rest.split(",")[1:]]
        regs = [int(m.group(1)) if (m := re.match(r"R(\d+)", p)) else None
                for p in srcs]
        live = []
        for slot, r in enumerate(regs):
            if r is None or r == 255:  # RZ or an immediate: no read
                continue
            if slot < 3 and cached[slot] == r:
                reused += 1
            else:
                live.append(r % banks)
        extra += sum(max(0, live.count(b) - 1) for b in range(banks))
        cached = [r if slot < len(srcs) and srcs[slot].endswith(".reuse") else None
                  for slot, r in enumerate((regs + [None] * 3)[:3])]
    return extra, reused


def report(name: str, res: str, sass: str) -> dict:
    gemm, ins = gemm_kernel(sass)
    kernel = res.split(f"Compiling entry function '{gemm}'")[-1].split(
        "Compiling entry function")[0]
    regs = re.search(r"Used (\d+) registers", kernel)
    stack = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                      r"(\d+) bytes spill loads", kernel)
    raw = [t for _, t in ins]
    fmul = [lo for lo, hi, _ in loops(ins, raw)
            if any(op(t) in PRODUCTS for t in raw[lo:hi + 1])]
    inner = min(((lo, hi) for lo, hi, _ in loops(ins, raw)
                 if any(op(t) in PRODUCTS for t in raw[lo:hi + 1])),
                key=lambda x: x[1] - x[0], default=None) if fmul else None
    out: dict = {"mapping": name, "registers": regs and int(regs.group(1)),
                 "stack_spill_st_ld": stack and [int(x) for x in stack.groups()]}
    # with setmaxnreg (NAME-regs, cyreg) ptxas's count is the launch's; the
    # registers the code names (highest R + 1) and the USETMAXREG counts show what
    # the warps got after it
    out["registers_named"] = 1 + max((int(r) for t in raw
                                      for r in re.findall(r"\bR(\d+)\b", t)),
                                     default=-1)
    out["setmaxnreg"] = [f"{m.group(1)} {int(m.group(2), 16)}" for t in raw
                         if (m := re.match(r"USETMAXREG\.(\w+)\S*\s+(?:U?P\w+,\s*)?"
                                           r"(0x[0-9a-f]+)", t))]
    if inner:
        body = raw[inner[0]:inner[1] + 1]
        kinds = collections.Counter(op(t) for t in body)
        pairs = kinds["FMUL"] + kinds["FFMA"]  # multiply-adds an iteration
        lds = sum(v for k, v in kinds.items() if k.startswith("LDS"))
        out["loop"] = {"instructions": len(body), "FMUL": kinds["FMUL"],
                       "FADD": kinds["FADD"], "FFMA": kinds["FFMA"],
                       "instructions_a_multiply_add": round(len(body) / max(pairs, 1),
                                                            3),
                       "LDS": {k: v for k, v in kinds.items() if k.startswith("LDS")},
                       "LDL": sum(v for k, v in kinds.items() if k.startswith("LDL")),
                       "STL": sum(v for k, v in kinds.items() if k.startswith("STL")),
                       "MOV": kinds["MOV"],
                       "lds_per_pair": round(lds / max(pairs, 1), 3),
                       "lds_floats_a_product": round(sum(
                           v * LDS_FLOATS.get(k, 1) for k, v in kinds.items()
                           if k.startswith("LDS")) / max(pairs, 1), 3),
                       "one_warp_ipc": round(issue_model(body), 2),
                       "bank_extra_a_product": round(bank_stalls(body)[0]
                                                     / max(pairs, 1), 2),
                       "bank4_extra_a_product": round(bank_stalls(body, 4)[0]
                                                      / max(pairs, 1), 2),
                       "reuse_hits": bank_stalls(body)[1]}
        # the nest alone: from the loop's first shared load to its last multiply-add
        # (an unrolled nest's loop is a stage, and ptxas places other code in its
        # range: the tile's stores, the DMA warps' branch; cyfrag2)
        ends = [i for i, t in enumerate(body) if op(t).startswith("LDS")
                or op(t) in PRODUCTS]
        span = body[ends[0]:ends[-1] + 1]
        out["loop"]["nest_span"] = {
            "instructions": len(span),
            "instructions_a_multiply_add": round(len(span) / max(pairs, 1), 3),
            "one_warp_ipc": round(issue_model(span), 2),
            "lds_lead_ffma": lds_lead(span)}
    copies = [(hi - lo + 1) / n for lo, hi, _ in loops(ins, raw)
              if (n := sum(op(t) == "UBLKCP.S.G" for t in raw[lo:hi + 1]))
              and not any(op(t) in PRODUCTS for t in raw[lo:hi + 1])]
    out["dma"] = {"bra_u_any": sum(op(t) == "BRA.U.ANY" for t in raw),
                  "ublkcp_static": sum(op(t).startswith("UBLKCP") for t in raw),
                  "instructions_a_copy_per_loop": sorted({round(c, 1) for c in copies})}
    return out


def main(argv: list[str] | None = None) -> int:
    import json

    from gpusem.compiler.backends.toolchain_build import find_tool

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    five = ("fig5-hopper", "u128-hopper", "u256-v128-wgs4-p3", "u128-v128-wgs2-p4",
            "u64-v64-wgs1-p4")
    ap.add_argument("--mappings", default=",".join([*five, *(f"{m}-fused"
                                                             for m in five)]))
    ap.add_argument("--keep", default="", help="a folder for the .cu and .cubin")
    ap.add_argument("--no-fused-at", action="store_true",
                    help="the fused nest reads A along k (FusedNest.a_copy off: "
                         "before cyperf5) where the name does not say")
    ap.add_argument("--nests", action="store_true",
                    help="each fused name given as its four nests, "
                         "NAME-fused-[no]grouped-[no]acopy (cyknob)")
    args = ap.parse_args(argv)
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    if not nvcc or not cuobjdump:
        print("cypress_gemm_sass: needs nvcc and cuobjdump")
        return 2
    mod = bench()
    names = args.mappings.split(",")
    if args.nests:  # NAME-fused -> its four nests; the others as given
        names = [f"{n.removesuffix('-fused')}-fused-{g}grouped-{a}acopy"
                 if n.endswith("-fused") else n for n in names
                 for g in ("no", "") for a in ("no", "")]
        names = list(dict.fromkeys(names))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in names:
            m = mod.named(name)  # NAME-fused..: the leaf mma_fma
            if args.no_fused_at and m.a_copy is None:
                m = replace(m, a_copy=False)
            res, sass = build(cuda_of(mod, args.n, m), work, name, nvcc, cuobjdump)
            print(json.dumps(report(name, res, sass) | nest_fields(mod, m)),
                  flush=True)
    return 0


def nest_fields(mod, m) -> dict:
    """The fused nest's emission a fused row was built with (instr.FusedNest)."""
    if not m.fused:
        return {}
    nest = mod.nest_of(m)
    return {"nest": {"grouped": nest.grouped, "a_copy": nest.a_copy,
                     "layout": nest.layout, "prefetch": nest.prefetch,
                     "chunk": nest.chunk}}


if __name__ == "__main__":
    sys.exit(main())
