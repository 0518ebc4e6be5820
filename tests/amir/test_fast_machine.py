"""The fast machine (interpreter/amir/fast.py) against the reference machine, which stays
the definition: identical verdicts, violation reports (check, cell, threads, both
spans, message), statistics, traps and budget exhaustions, on every conformance
program and example, and on generated kernels made to probe each precondition of the
symmetry argument (translated windows that do or do not overlap across tasks, host
writes that make the entry state non-uniform, later tasks out of bounds, small step
budgets, checks after the kernel). proofs_notes/fast_checker.md is the argument."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from gpusem.calculus.amir.parser import parse_file
from gpusem.calculus.errors import GpusemError
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.interpreter.amir.fast import FastMachine
from gpusem.interpreter.amir.fast_nest import task_nest
from gpusem.interpreter.amir.from_gpuir import convert
from gpusem.interpreter.amir.machine import check_amir
from gpusem.typing_rules.gpuir.frontend import check_proc, header_defines

ROOT = Path(__file__).resolve().parents[2]
MACHINE_CHECKS = ("CheckReads", "CheckMutates", "CheckBarrier")


def reaches_machine(path: Path) -> bool:
    """Its header says the program is accepted or rejected by a machine check (not by
    the front end, not bad input)."""
    head = re.search(r"^# expect: (\w+) ?(\w*)", path.read_text(), re.MULTILINE)
    return head is not None and (head.group(1) == "accepted" or
                                 head.group(2) in MACHINE_CHECKS)


GPUIR = [p for p in sorted((ROOT / "examples" / "gpuir").glob("*.gpuir")) +
         sorted((ROOT / "tests" / "gpuir" / "conformance").glob("*.gpuir"))
         if reaches_machine(p)]
AMIR = sorted((ROOT / "tests" / "amir" / "programs").glob("*.amir"))


def outcome(run) -> tuple:
    """Everything a run shows: the exception (kind, text), or the verdict's report."""
    try:
        v = run()
    except GpusemError as err:
        return ("error", type(err).__name__, err.one_line())
    w = v.violation
    st = v.stats
    stats = (st.statements, st.recorded_accesses, st.records, st.lifts,
             frozenset(st.exercised))
    if w is None:
        return ("accepted", stats)
    return ("rejected", w.check, w.variable, w.index, w.threads, w.other_threads,
            w.span, w.other_span, w.message, stats)


def both(prog, defines, max_steps=200_000_000) -> tuple[tuple, tuple, FastMachine]:
    ref = outcome(lambda: check_amir(prog, defines, max_steps=max_steps))
    fm: list[FastMachine] = []

    def fast():
        m = FastMachine(prog, defines, max_steps=max_steps)
        fm.append(m)
        return m.run()

    return ref, outcome(fast), fm[0] if fm else None


def converted(source: str, name: str, defines: dict[str, int] | None = None):
    proc = parse_module(source, name).procs[-1]
    env = {**header_defines(source), **(defines or {})}
    return convert(proc, env, analysis=check_proc(proc, env)), env


@pytest.mark.parametrize("path", GPUIR, ids=lambda p: p.stem)
def test_same_as_reference_on_gpuir_programs(path):
    prog, env = converted(path.read_text(), str(path))
    ref, fast, _ = both(prog, env)
    assert fast == ref


@pytest.mark.parametrize("path", AMIR, ids=lambda p: p.stem)
def test_same_as_reference_on_amir_programs(path):
    from tests.amir.test_machine_conformance import header

    prog = parse_file(str(path))
    defines = header(path)[3]
    ref, fast, _ = both(prog, {p: defines.get(p, 2) for p in prog.params})
    assert fast == ref


def test_the_paper_gemm_takes_the_fast_path():
    """The Hopper GEMM's task nest is decided from its first task (16 tasks at N=1024),
    with the reference's statistics."""
    text = (ROOT / "examples" / "gpuir" / "gemm_hopper.gpuir").read_text()
    prog, env = converted(text, "gemm_hopper.gpuir", {"N": 512})
    ref, fast, m = both(prog, env)
    assert fast == ref and ref[0] == "accepted"
    assert m.fast_nests == 1


def test_the_ragged_gemm_is_asymmetric():
    """The machine-speed kernel of issue 27.2 (scripts/bench_amir_machine.py): its last
    row of tiles runs other statements, so no task nest takes the fast path, and the
    fast machine gives the reference's verdict by running every task."""
    path = ROOT / "examples" / "gpuir" / "bench" / "gemm_hopper_ragged.gpuir"
    prog, env = converted(path.read_text(), str(path), {"N": 512})
    ref, fast, m = both(prog, env)
    assert fast == ref and ref[0] == "accepted"
    assert m.fast_nests == 0


# ------------------------------------------------------ generated probe kernels

KERNEL = """\
proc probe({params}):
{host_before}    with CudaDeviceFunction(blockDim=32):
{tasks}{ind}buf: f32[32] @ CudaSmemLinear
{ind}for tid in cuda_threads(0, 32, unit=cuda_thread):
{ind}    buf[tid] = A[{a_off} + tid]
{fence1}{ind}for tid in cuda_threads(0, 32, unit=cuda_thread):
{ind}    B[{b_off} + ({mul} * tid + {add}) % 32] {op} buf[({mul2} * tid) % 32]
{fence2}{host_after}"""


def probe(rng: random.Random) -> tuple[str, int]:
    """A kernel whose tasks read A and write B at windows translated by the task
    variables; the strides may make two tasks share cells, the sizes may put a later
    task out of bounds, a host write may make the entry state non-uniform, a host
    read after the kernel may observe it."""
    nested = rng.random() < .5
    t1, t2 = rng.randint(1, 4), (rng.randint(1, 3) if nested else 1)
    sa = rng.choice((0, 8, 32, 64))
    sb1 = rng.choice((16, 32, 32, 64, 96))
    sb2 = rng.choice((32, 128)) * (1 if nested else 0)
    size = 32 + max(sa, sb1) * (t1 - 1) + max(sa, sb2) * (t2 - 1)
    size += rng.choice((0, 0, 0, -16, 32))          # sometimes too small
    loops = f"        for t in cuda_tasks(0, {t1}):\n"
    ind = " " * 12
    a_off, b_off = f"{sa} * t", f"{sb1} * t"
    if nested:
        loops += f"            for u in cuda_tasks(0, {t2}):\n"
        ind = " " * 16
        a_off += f" + {sa} * u"
        b_off += f" + {sb2} * u"
    fences = ["", f"{ind}Fence(cuda_in_order, cuda_in_order)\n",
              f"{ind}Fence(cuda_in_order, cuda_temporal)\n"]
    host_before = ""
    if rng.random() < .3:
        host_before = f"    A[{rng.randrange(max(1, size))}] = 2.0\n"
    host_after = ""
    if rng.random() < .2:
        host_after = ("    Fence(cuda_stream_sync, cpu_in_order)\n"
                      if rng.random() < .5 else "") + "    H[0] = B[0]\n"
    params = (f"A: f32[{max(1, size)}] @ CudaGmemLinear, "
              f"B: f32[{max(1, size)}] @ CudaGmemLinear, H: f32[1] @ DRAM")
    src = KERNEL.format(
        params=params, host_before=host_before, tasks=loops, ind=ind, a_off=a_off,
        b_off=b_off, fence1=rng.choice(fences[:2] + fences[1:2]),
        fence2=f"{ind}Fence(cuda_in_order, cuda_in_order)\n",
        mul=rng.choice((1, 1, 3)), add=rng.choice((0, 1)), mul2=rng.choice((1, 5)),
        op=rng.choice(("=", "=", "+=")), host_after=host_after)
    budget = 200_000_000 if rng.random() < .85 else rng.choice((300, 700, 1500))
    return src, budget


def _generated(count: int, seed: int) -> tuple[int, int, set[str]]:
    rng = random.Random(seed)
    fast_taken = fell_back = 0
    kinds: set[str] = set()
    for i in range(count):
        src, budget = probe(rng)
        try:
            prog, env = converted(src, f"probe{i}.gpuir")
        except GpusemError:
            kinds.add("front end")
            continue
        ref, fast, m = both(prog, env, budget)
        assert fast == ref, src
        kinds.add(ref[1] if ref[0] == "error" else ref[0])
        nests = [s for s in prog.body if task_nest(s) is not None]
        if m is not None and m.fast_nests:
            fast_taken += 1
        elif nests:
            fell_back += 1
    return fast_taken, fell_back, kinds


def test_same_as_reference_on_generated_kernels():
    """400 probe kernels: every outcome identical; the fast path taken on many, the
    reference path (some precondition failing) on many, and every kind of outcome met
    (accepted, rejected, trapped, budget exhausted)."""
    fast_taken, fell_back, kinds = _generated(400, 16)
    assert fast_taken >= 80 and fell_back >= 40, (fast_taken, fell_back)
    assert {"accepted", "rejected", "Trap", "BudgetExhausted"} <= kinds, kinds


@pytest.mark.slow
def test_same_as_reference_on_thousands_of_generated_kernels():
    """The same over 5,000 kernels (pytest -m slow)."""
    fast_taken, fell_back, kinds = _generated(5000, 1616)
    assert fast_taken >= 1000 and fell_back >= 500, (fast_taken, fell_back)
    assert {"accepted", "rejected", "Trap", "BudgetExhausted"} <= kinds, kinds


def test_interpreted_work_grows_linearly_on_the_gemm():
    """The algorithmic win, pinned deterministically (no clock): from N = 512 to 1024
    the work the reference interprets grows 8x (tasks x k-steps, cubic), the work the
    fast machine interprets 2x (one task's k-steps, linear)."""
    text = (ROOT / "examples" / "gpuir" / "gemm_hopper.gpuir").read_text()
    work = {}
    for n in (512, 1024):
        prog, env = converted(text, "gemm_hopper.gpuir", {"N": n})
        m = FastMachine(prog, env)
        v = m.run()
        assert v.accepted
        work[n] = (v.stats.statements, v.stats.statements - m.skipped_statements)
    total = work[1024][0] / work[512][0]
    interpreted = work[1024][1] / work[512][1]
    assert 7.5 <= total <= 8.5 and 1.8 <= interpreted <= 2.3, work
