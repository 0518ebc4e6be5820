"""Property tests of GPU IR -> AMIR -> machine on generated kernels: the conversion
is total on well-formed programs (a verdict, never a crash), and a lemma of the
semantics: inserting a Fence never turns an accepted program into a rejected one
(a Fence's lift only joins visibility upwards, f ∨ f_aug, Definition B.3, and every
check is monotone in visibility, Figure 7), so the Fence rows of the conversion must
not introduce anything a fence could break."""

from __future__ import annotations

from dataclasses import replace

from gpusem.calculus.amir import ast as M
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir.parser import parse_proc
from gpusem.interpreter.amir.from_gpuir import convert
from gpusem.interpreter.amir.synccheck import synccheck_proc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HEAD = ("proc p(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):\n"
        "    with CudaDeviceFunction(blockDim=64):\n"
        "        for task in cuda_tasks(0, N / 64):\n")
DEFINES = {"N": 128}
SYNC_TLS = ("cuda_in_order", "cuda_temporal", "cuda_generic_and_async", "Sm80_generic",
            "empty_sync_tl")


@st.composite
def blocks(draw, depth: int = 0, names=None) -> list[str]:
    """A block of CTA-scope statements (each a list of lines, relative indent)."""
    names = names if names is not None else {"smem": [], "bar": [], "n": 0}
    out: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        names["n"] += 1
        k = names["n"]
        kind = draw(st.sampled_from(["alloc", "bar", "fence", "threads", "warps",
                                     "split"] + (["if", "seq"] if depth < 2 else [])))
        match kind:
            case "alloc":
                out.append(f"s{k}: f32[64] @ CudaSmemLinear")
                names["smem"].append(f"s{k}")
            case "bar":
                out.append(f"z{k}: barrier @ CudaMbarrier")
                names["bar"].append(f"z{k}")
            case "fence":
                pre, post = draw(st.sampled_from(SYNC_TLS)), draw(st.sampled_from(SYNC_TLS))
                out.append(f"Fence({pre}, {post})")
            case "threads":
                out.append(f"for t{k} in cuda_threads(0, 64, unit=cuda_thread):")
                for _ in range(draw(st.integers(1, 2))):
                    out.append("    " + draw(assignment(f"t{k}", names)))
            case "warps":
                out.append(f"for w{k} in cuda_threads(0, 2, unit=cuda_warp):")
                out.append("    Fence(cuda_in_order, cuda_in_order)")
            case "split" if names["bar"]:
                z = draw(st.sampled_from(names["bar"]))
                out.append(f"Arrive(cuda_in_order, 1) >> {z}")
                out.append(f"Await({z}, cuda_in_order, -1)")
            case "if":
                out.append("if task < 2:")
                out += ["    " + ln for ln in draw(blocks(depth + 1, _scoped(names)))]
            case "seq":
                out.append(f"for i{k} in seq(0, 2):")
                out += ["    " + ln for ln in draw(blocks(depth + 1, _scoped(names)))]
            case _:
                out.append("Fence(cuda_in_order, cuda_in_order)")
    return out


def _scoped(names: dict) -> dict:
    """Names declared in a nested block are not visible after it."""
    return {"smem": list(names["smem"]), "bar": list(names["bar"]), "n": names["n"] + 100}


@st.composite
def assignment(draw, t: str, names: dict) -> str:
    def cell(var: str) -> str:
        idx = draw(st.sampled_from([t, f"63 - {t}"]))
        return f"{var}[task * 64 + {idx}]" if var in ("A", "B") else f"{var}[{idx}]"

    pool = ["A", "B"] + names["smem"]
    dst, src = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
    op = draw(st.sampled_from(["=", "+="]))
    return f"{cell(dst)} {op} {cell(src)} * 2.0"


def kernel(lines: list[str]) -> G.Proc:
    return parse_proc(HEAD + "".join(" " * 12 + ln + "\n" for ln in lines), "gen.gpuir")


def verdict(proc: G.Proc) -> str:
    try:
        res = synccheck_proc(proc, DEFINES)
    except IllTyped:
        return "front end"
    return "accepted" if res.verdict.accepted else res.verdict.violation.check


SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(blocks())
def test_conversion_total_on_generated_kernels(lines):
    """A verdict, never a crash; every AMIR statement points into the source."""
    proc = kernel(lines)
    assert verdict(proc) in ("accepted", "front end", "CheckReads", "CheckMutates",
                             "CheckBarrier")
    n = len(lines) + HEAD.count("\n")
    for s in M.walk(convert(proc, DEFINES).body):
        assert 1 <= s.origin.line <= n, s


@SETTINGS
@given(blocks(), st.data())
def test_inserting_a_fence_is_monotone(lines, data):
    proc = kernel(lines)
    task_loop = proc.body[0].body[0]
    body = task_loop.body
    at = data.draw(st.integers(0, len(body)))
    fence = G.Fence("cuda_generic_and_async", "cuda_generic_and_async")
    fenced = replace(proc, body=(replace(proc.body[0], body=(
        replace(task_loop, body=body[:at] + (fence,) + body[at:]),)),))
    before, after = verdict(proc), verdict(fenced)
    if before == "accepted":
        assert after == "accepted", (lines, at)
