"""Warp specialisation and pipelining (seed 001 Sec. 4.2.5, Fig. 12): the golden of
Fig. 5's GEMM after the pass, the roles and barriers it introduces (Fig. 1b's prod and
cons barriers), and translation validation on the event machine: after the pass the
IR is race-free and computes the sequential reading under every schedule we try, at
every pipeline depth, with warp specialisation on and off; the two seeded faults
(a missing backward write-after-read edge, a consumer that releases its buffer early)
are races the machine finds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.event_parser import parse_events
from gpusem.calculus.cypress.event_printer import print_events
from gpusem.calculus.cypress.inputs import header_inputs, make_inputs
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.compiler.cypress_cuda.allocate import allocate
from gpusem.compiler.cypress_cuda.copyelim import eliminate_copies
from gpusem.compiler.cypress_cuda.dependence import dependence_analysis
from gpusem.compiler.cypress_cuda.vectorize import vectorize
from gpusem.compiler.cypress_cuda.warpspec import (
    Schedule,
    crossing,
    schedule_of,
    warp_specialise,
)
from gpusem.interpreter.cypress.events import instantiate, orders, races, run_order
from gpusem.interpreter.cypress.seq import seq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# Fig. 8a with a K tile of 16: 8 iterations, so that every depth 1-4 reuses a buffer
FIG8A_8 = (HERE / "fig8/fig8a.cyp").read_text().replace(
    'tunables={"W": 64}, entrypoint=True', 'tunables={"W": 16}, entrypoint=True')


def _passes(text: str, itemsize: int = 4):  # type: ignore[no-untyped-def]
    program = read_program(text, "x.cyp")
    arrays, scalars = make_inputs(header_inputs(text) or "")
    ir = allocate(eliminate_copies(vectorize(dependence_analysis(
        program, arrays, scalars)), program), program, itemsize=itemsize)
    return program, arrays, scalars, ir

_ops = E.all_ops  # every operation, nested bodies included


def test_fig5_gemm_after_the_pass_is_the_golden() -> None:
    """Fig. 5 (warpspecialize=True, pipeline=3, f16: 2 bytes an element); regenerate
    only by hand, after reading the diff."""
    program, _, _, ir = _passes((ROOT / "examples/cypress/gemm.cyp").read_text(), 2)
    assert schedule_of(program) == Schedule(True, 3)
    out = warp_specialise(ir, program, itemsize=2)
    text = print_events(out)
    assert text == (HERE / "fig12/gemm_warpspec.ir").read_text()
    assert parse_events(text, "x.ir") == out


def test_fig5_gemm_roles_and_barriers_are_fig1b() -> None:
    """The TMA copies of the A and B tiles run on the DMA warp, the rest on the
    compute warps; the crossing edges are Fig. 1b's barriers: prod (the copies of
    iteration k before its gemm) and cons (the gemm of iteration k - 3 before the
    copies into its buffers: the backward edges, l.697)."""
    program, _, _, ir = _passes((ROOT / "examples/cypress/gemm.cyp").read_text(), 2)
    out = warp_specialise(ir, program, itemsize=2)
    loop = next(op for op in _ops(out.body.ops)
                if isinstance(op, E.Loop) and op.pipeline)
    assert loop.pipeline == 3
    dma = [op for op in _ops(loop.body.ops)
           if isinstance(op, E.Copy | E.Call) and op.role == "dma"]
    assert [(op.src.name, op.dst.name) for op in dma if isinstance(op, E.Copy)] == [
        ("A2p", "A3"), ("B2p", "B3")]
    assert all(op.role == "compute" for op in _ops(out.body.ops)
               if isinstance(op, E.Copy | E.Call) and op not in dma)
    edges = {(c.producer, c.consumer, c.back, c.direction) for c in crossing(out)}
    gemm = next(op.event for op in _ops(loop.body.ops) if isinstance(op, E.Call))
    backward = {e for e in edges if e[3] == "compute->dma"}
    assert backward == {(gemm, op.event, 3, "compute->dma") for op in dma}
    assert {(op.event, gemm, 0, "dma->compute") for op in dma} <= edges
    # the pipelined buffers: one [3, ..] tensor each, indexed k % 3 in the body
    text = print_events(out)
    assert "A3 = A3sp[k % 3, 0, 0]" in text and "A3s = tensor([3, 256, 64], " \
        "SHARED) @ smem[0]" in text


@pytest.mark.parametrize("ws, depth", [(True, 1), (True, 2), (True, 3), (True, 4),
                                       (False, 2), (False, 4)])
def test_the_pass_preserves_meaning(ws: bool, depth: int) -> None:
    program, arrays, scalars, ir = _passes(FIG8A_8)
    want, _ = seq(program, arrays, scalars)
    out = warp_specialise(ir, program, schedule=Schedule(ws, depth))
    assert any(isinstance(op, E.Loop) and op.pipeline == depth
               for op in _ops(out.body.ops))
    assert all(bool(op.role) == ws for op in _ops(out.body.ops)
               if isinstance(op, E.Copy | E.Call))
    inst = instantiate(out, program, arrays)  # run_order restarts from its storage
    assert races(inst) == []
    for schedule in ("program", "latest", "random:1", "random:2"):
        got = run_order(inst, orders(inst, schedule))
        for name in want:
            assert np.array_equal(got[name], want[name], equal_nan=True), (
                schedule, name)


def test_the_dma_warp_runs_ahead() -> None:
    """Pipelining is what it is for: some schedule runs the copy of iteration k + 2
    before the gemm of iteration k (without the pass the loop's yield forbids it)."""
    program, arrays, _, ir = _passes(FIG8A_8)
    for out, ahead in ((ir, False),
                       (warp_specialise(ir, program, schedule=Schedule(True, 3)),
                        True)):
        inst = instantiate(out, program, arrays)
        order = orders(inst, "latest")
        label = [inst.nodes[n].label for n in order]
        first_gemm = next(i for i, x in enumerate(label) if x.startswith("e19[k=0]"))
        copy_k2 = label.index("e9[k=2]")
        assert (copy_k2 < first_gemm) is ahead, ahead


@pytest.mark.parametrize("fault", ["cypress-ws-no-backward-war",
                                   "cypress-ws-early-release"])
def test_each_seeded_fault_is_a_race(fault: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    program, arrays, _, ir = _passes(FIG8A_8)
    good = warp_specialise(ir, program, schedule=Schedule(True, 3))
    monkeypatch.setenv("GPUSEM_FAULT", fault)
    bad = warp_specialise(ir, program, schedule=Schedule(True, 3))
    assert bad != good
    found = races(instantiate(bad, program, arrays))
    assert found and "smem(" in found[0].tensor


def test_identity_without_a_schedule() -> None:
    program, _, _, ir = _passes(FIG8A_8)
    assert schedule_of(program) == Schedule(False, 1)
    assert warp_specialise(ir, program) is ir


def test_deep_pipelines_of_large_tiles_run_out_of_memory() -> None:
    program, _, _, ir = _passes((HERE / "fig8/fig8a.cyp").read_text())
    with pytest.raises(IllTyped) as caught:
        warp_specialise(ir, program, schedule=Schedule(True, 4))
    assert caught.value.rule == "Pipeline-OutOfMemory"


def test_carried_event_outside_a_pipelined_loop_is_stuck() -> None:
    from gpusem.calculus.errors import Stuck
    program, arrays, _, _ = _passes(FIG8A_8)
    text = ("# params: C, A, B\nX = tensor([4], REGISTER)\n"
            "e1: () = copy(A, C), {e1@-1}\nyield e1\n")
    ir = parse_events(text, "x.ir")
    assert ir.body.ops[1].pre == (E.EvRef("e1", (), 1),)  # type: ignore[union-attr]
    with pytest.raises(Stuck):
        instantiate(ir, program, arrays)


@pytest.mark.parametrize("text, where", [
    ("# params: C\ne1: () = pfor i in [0, 2) pipeline 2, {} do\nyield {}\n",
     "x.ir:2:1"),
    ("# params: C\ne1: () = copy(C, C), {e0@-0}\nyield e1\n", "x.ir:2:1"),
])
def test_malformed_pipelined_ir_is_one_line(text: str, where: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_events(text, "x.ir")
    assert caught.value.one_line().startswith(where + ": ")
