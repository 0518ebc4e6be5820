"""`gpusem synccheck`: exit codes 0 / 1 / 2, the compiler-style rejection report (the
failing check, variable and index, timeline, threads, and BOTH source lines), --json,
--print-amir (which parses back), header defaults, and bad input without a traceback.

The two programs are Section 2.1's Fence example (accepted) and the same without its
first Fence, which the paper's reasoning rejects: thread 0 reads buf[i] that thread i
wrote with no barrier in between (a CheckMutates failure at the read)."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest
from gpusem.calculus.amir.parser import parse_proc as parse_amir
from gpusem.cli.main import main
from gpusem.interpreter.amir.synccheck import synccheck

FENCED = """\
# defines: N=128
proc smem_broadcast(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, N / 128):
            buf: f32[128] @ CudaSmemLinear
            for tid in cuda_threads(0, 128, unit=cuda_thread):
                buf[tid] = A[task * 128 + tid]
            Fence(cuda_in_order, cuda_in_order)
            for tid in cuda_threads(0, 128, unit=cuda_thread):
                acc: f32 @ CudaRmem
                acc = 0.0
                for i in seq(0, 128):
                    acc += buf[i]
                B[task * 128 + tid] = acc
            Fence(cuda_in_order, cuda_in_order)
"""
UNFENCED = FENCED.replace("            Fence(cuda_in_order, cuda_in_order)\n"
                          "            for tid", "            for tid", 1)
WRITE_LINE = "                buf[tid] = A[task * 128 + tid]"
READ_LINE = "                    acc += buf[i]"


@pytest.fixture
def run(tmp_path, capsys, monkeypatch):
    """Run `gpusem synccheck` in process through the real entry point (which turns
    errors into one line and an exit code)."""

    def go(text: str, *args: str, name: str = "k.gpuir"):
        f = tmp_path / name
        f.write_text(text)
        monkeypatch.setattr(sys, "argv", ["gpusem", "synccheck", str(f), *args])
        with pytest.raises(SystemExit) as exit_:
            main()
        out = capsys.readouterr()
        return SimpleNamespace(exit_code=exit_.value.code, output=out.out + out.err,
                               stdout=out.out)

    return go


def test_accepted_exit_0(run):
    r = run(FENCED)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("accepted: smem_broadcast(N=128)")


def test_rejected_report_shows_both_lines(run):
    r = run(UNFENCED)
    assert r.exit_code == 1
    out = r.output
    assert "error: unsynchronized mutate" in out and "CheckMutates" in out
    assert "variable: buf[" in out and "cuda_in_order_ram_qual" in out
    assert READ_LINE in out and WRITE_LINE in out  # both conflicting accesses
    assert out.index(READ_LINE) < out.index(WRITE_LINE)  # this access, then the earlier
    assert "(task, thread)" in out and "(1, 0)" in out


def test_rejected_json(run):
    r = run(UNFENCED, "--json")
    assert r.exit_code == 1
    v = json.loads(r.stdout)
    assert v["verdict"] == "rejected"
    x = v["violation"]
    assert x["check"] == "CheckMutates" and x["variable"] == "buf"
    lines = UNFENCED.splitlines()
    assert lines[x["access"]["line"] - 1] == READ_LINE
    assert lines[x["other_access"]["line"] - 1] == WRITE_LINE
    reader, writer = x["threads"][0], x["other_threads"][0]
    assert reader[0] == writer[0] == 1 and reader[1] != writer[1]  # one task, 2 threads
    assert writer[1] == x["index"][0]  # thread i wrote buf[i]


def test_print_amir_parses_back(run):
    r = run(FENCED, "--print-amir")
    assert r.exit_code == 0
    text = r.stdout[: r.stdout.index("accepted:")]
    prog = parse_amir(text)
    assert prog.name == "smem_broadcast" and prog.params == ("N",)


def test_defines_override_header(run):
    r = run(FENCED, "-D", "N=256", "--json")
    assert json.loads(r.stdout)["defines"] == {"N": 256}


def test_free_report_names_the_lifetime(run):
    """Without the trailing Fence the free of buf (end of the task) fails: the other
    threads' reads are not ordered before it."""
    text = FENCED[: FENCED.rindex("            Fence")]
    r = run(text)
    assert r.exit_code == 1
    assert "CheckReads" in r.output and "freed at the end" in r.output
    assert READ_LINE in r.output


@pytest.mark.parametrize("text,args,needle", [
    (FENCED, ("-D", "N"), "bad definition"),
    (FENCED.replace("# defines: N=128\n", ""), (), "missing definition"),
    ("proc p(:\n", (), "syntax error"),
    (FENCED.replace("cuda_in_order, cuda_in_order", "cuda_nonsense, cuda_in_order", 1),
     (), "unknown sync timeline"),
    (FENCED, ("--proc", "nope"), "no procedure named nope"),
    (FENCED, ("--max-steps", "100"), "step budget exhausted"),
    (FENCED, ("--max-steps", "0"), "out of range"),
], ids=["bad-define", "missing-define", "syntax", "timeline", "proc", "budget",
        "budget-range"])
def test_bad_input_exit_2(run, text, args, needle):
    r = run(text, *args)
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_not_gpuir_exit_2(run):
    r = run("x", name="k.bundl")
    assert r.exit_code == 2 and ".gpuir and .amir" in r.output


def test_front_end_error_exit_1(run):
    """A program the front end rejects (a write at CTA scope, made by 128 threads) is
    rejected before conversion, with the front end's message."""
    text = FENCED.replace("            buf: f32", "            B[task * 128] = 0.0\n"
                          "            buf: f32")
    r = run(text)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "ThreadScope" in r.output and ":5:13:" in r.output


# Section 2.1's split-barrier variant, ending in an Arrive/Await pair instead of a
# Fence: accepted only with the barrier reads recorded as convergent (errata "barrier
# accesses are convergent"); Figure 5 as printed rejects it at the free of `done`.
SPLIT = """\
proc split(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, N / 128):
            buf: f32[128] @ CudaSmemLinear
            ready: barrier @ CudaMbarrier
            done: barrier @ CudaMbarrier
            for tid in cuda_threads(0, 128, unit=cuda_thread):
                buf[tid] = A[task * 128 + tid]
            Arrive(cuda_in_order, 1) >> ready
            Await(ready, cuda_in_order, -1)
            for tid in cuda_threads(0, 128, unit=cuda_thread):
                B[task * 128 + tid] = buf[127 - tid]
            Arrive(cuda_in_order, 1) >> done
            Await(done, cuda_in_order, -1)
"""


def test_rules_fixed_accepts_split_barrier_variant(run):
    assert run(SPLIT, "-D", "N=128").exit_code == 0
    r = run(SPLIT, "-D", "N=128", "--rules", "paper")
    assert r.exit_code == 1 and "CheckReads" in r.output
    assert "done is freed at the end" in r.output


def test_read_after_temporal_fence_needs_full_visibility(run):
    """errata "Figure 5 reads": after Fence(cuda_in_order, cuda_temporal) (no memory
    fence: the write is only temporally ordered) another thread's plain read
    `B[..] = buf[127 - tid]` is a race; Figure 5 as printed checks the reads of `=`
    with τ_v^pre = temporally_ordered and lets it through."""
    text = (SPLIT.replace("            Arrive(cuda_in_order, 1) >> ready\n", "")
            .replace("Await(ready, cuda_in_order, -1)", "Fence(cuda_in_order, "
                     "cuda_temporal)")
            .replace("            Arrive(cuda_in_order, 1) >> done\n", "")
            .replace("Await(done, cuda_in_order, -1)", "Fence(cuda_in_order, "
                     "cuda_in_order)"))
    fixed = run(text, "-D", "N=128")
    assert fixed.exit_code == 1 and "fully_ordered" in fixed.output
    assert "B[task * 128 + tid] = buf[127 - tid]" in fixed.output
    assert "buf[tid] = A[task * 128 + tid]" in fixed.output
    assert run(text, "-D", "N=128", "--rules", "paper").exit_code == 0


WITNESS = """\
proc witness(A: f32[64] @ CudaGmemLinear, B: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[64] @ CudaSmemLinear
            for tid in cuda_threads(0, 64, unit=cuda_thread):
                buf[tid] = A[tid]
            Fence(cuda_in_order, cuda_temporal)
            for w in cuda_threads(0, 2, unit=cuda_warp):
                Fence(cuda_in_order, cuda_in_order)
            for tid in cuda_threads(0, 64, unit=cuda_thread):
                B[tid] = buf[63 - tid]
            Fence(cuda_in_order, cuda_in_order)
"""


def test_a_temporal_order_is_no_witness_for_a_later_fence(run):
    """errata "The witness W and temporal visibility" (results/exo/FINDINGS.md E8):
    after the CTA's temporal fence the other warp's write is only temporally ordered
    for a warp, so the warp's own full fence cannot pass it on; W as printed counts
    temporally_ordered (>= unordered) and accepts."""
    fixed = run(WITNESS)
    assert fixed.exit_code == 1 and "fully_ordered" in fixed.output
    assert "B[tid] = buf[63 - tid]" in fixed.output
    assert "buf[tid] = A[tid]" in fixed.output
    assert run(WITNESS, "--rules", "paper").exit_code == 0
    # a thread's own write stays a witness: each warp reads its own warp's cells
    own = WITNESS.replace("buf[63 - tid]", "buf[tid / 32 * 32 + 31 - tid % 32]")
    assert run(own).exit_code == 0
    # and the CTA-wide full fence orders every write for every thread
    full = WITNESS.replace("Fence(cuda_in_order, cuda_temporal)",
                           "Fence(cuda_in_order, cuda_in_order)")
    assert run(full).exit_code == 0


def test_library_entry_point():
    res = synccheck(FENCED, "k.gpuir", {"N": 128})
    assert res.verdict.accepted and res.proc == "smem_broadcast"
    assert res.verdict.stats.recorded_accesses > 0


# ------------------------------------------------- AMIR-level programs (.amir files)

AMIR_OK = """\
# defines: N=2
proc p(N):
    Alloc(z, barrier)
    for i in loop(0, N):
        RecordMutate(fully_ordered, false, x[i], cuda2, {}, {}) @ threads(0)
    Arrive(true, {cuda2}, {z}) @ threads(0)
    Await(z, {cuda2}, {cuda2}, -1) @ threads(1)
    CheckMutates(fully_ordered, false, x[0:N], {cuda2}) @ threads(1)
    CheckBarrier(z)
"""
AMIR_RACE = AMIR_OK.replace("    Await(z, {cuda2}, {cuda2}, -1) @ threads(1)\n", "")


def test_amir_file_accepted_exit_0(run):
    r = run(AMIR_OK, name="k.amir")
    assert r.exit_code == 0 and r.output.startswith("accepted: p(N=2)"), r.output


def test_amir_file_rejected_with_both_lines(run):
    """Issue 16: `.amir` files go straight to the machine; the diagnostic is the
    GPU IR one, with the AMIR file's own lines as the two accesses."""
    r = run(AMIR_RACE, name="k.amir")
    assert r.exit_code == 1, r.output
    assert "check: CheckMutates   variable: x[0]" in r.output
    assert "CheckMutates(fully_ordered, false, x[0:N], {cuda2}) @ threads(1)" in r.output
    assert "RecordMutate(fully_ordered, false, x[i], cuda2, {}, {}) @ threads(0)" \
        in r.output


def test_amir_file_json_and_defines(run):
    r = run(AMIR_OK, "-D", "N=3", "--json", name="k.amir")
    got = json.loads(r.stdout)
    assert r.exit_code == 0 and got["verdict"] == "accepted"
    assert got["defines"] == {"N": 3}


@pytest.mark.parametrize("text,args,needle", [
    (AMIR_OK.replace("# defines: N=2\n", ""), (), "missing definition"),
    ("proc p(:\n", (), "k.amir:1:"),
    (AMIR_OK, ("--proc", "q"), "no procedure named q"),
    ("proc p():\n    Alloc(z[2], barrier)\n"
     "    Arrive(true, {cuda2}, {z[0:2]}) @ threads(0)\n", (),
     "no unique home barrier"),
], ids=["missing-define", "syntax", "proc", "home"])
def test_amir_file_bad_input_exit_2(run, text, args, needle):
    r = run(text, *args, name="k.amir")
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
