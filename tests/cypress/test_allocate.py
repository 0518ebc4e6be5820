"""Allocation (compiler/cypress_cuda/allocate.py, seed 001 Sec. 4.2.4) and the seeded
faults of our Cypress passes (compiler/cypress_cuda/faults.py): each pass's output is
checked on the event machine, where placed shared tensors share one static buffer,
so a missing write-after-read edge is a race."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.event_parser import parse_events
from gpusem.calculus.cypress.event_printer import print_events
from gpusem.calculus.cypress.inputs import header_inputs, make_inputs
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import IllTyped
from gpusem.compiler.cypress_cuda.allocate import allocate
from gpusem.compiler.cypress_cuda.copyelim import eliminate_copies
from gpusem.compiler.cypress_cuda.dependence import dependence_analysis
from gpusem.compiler.cypress_cuda.vectorize import vectorize
from gpusem.interpreter.cypress.events import instantiate, orders, races, run_order
from gpusem.interpreter.cypress.seq import seq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIG8A = HERE / "fig8/fig8a.cyp"
DUAL = ROOT / "examples/cypress/dual_gemm.cyp"


def _load(path: Path):  # type: ignore[no-untyped-def]
    text = path.read_text()
    program = read_program(text, path.name)
    arrays, scalars = make_inputs(header_inputs(text) or "")
    return program, arrays, scalars


def _compile(path: Path, limit: int = 227 * 1024):  # type: ignore[no-untyped-def]
    program, arrays, scalars = _load(path)
    ir = eliminate_copies(vectorize(dependence_analysis(program, arrays, scalars)),
                          program)
    return program, arrays, scalars, allocate(ir, program, limit=limit)


def _placed(ir: E.EventProgram) -> dict[str, int]:
    return {line.split(" = ")[0].strip(): int(line.split("smem[")[1][:-1])
            for line in print_events(ir).splitlines() if "@ smem[" in line}


def _agrees(path: Path, limit: int) -> list[object]:
    program, arrays, scalars, ir = _compile(path, limit)
    want, _ = seq(program, arrays, scalars)
    inst = instantiate(ir, program, arrays)  # run_order restarts from its storage
    found = races(inst)
    for schedule in ("program", "latest", "random:1"):
        got = run_order(inst, orders(inst, schedule))
        for name in want:
            if not np.array_equal(got[name], want[name], equal_nan=True):
                found.append((schedule, name))
    return list(found)


def test_fig8_tiles_get_their_own_bytes() -> None:
    program, arrays, scalars, ir = _compile(FIG8A)
    assert _placed(ir) == {"A2": 0, "B2": 64 * 64}
    assert parse_events(print_events(ir), "x.ir") == ir
    assert _agrees(FIG8A, 227 * 1024) == []


def test_a_tight_bound_aliases_the_second_gemms_tiles_onto_the_first() -> None:
    """Dual-GEMM's four tiles need 196,608 bytes; under 100,000 the second GEMM's
    tiles take the first one's places, after the first one's readers (l.689)."""
    _, _, _, roomy = _compile(DUAL)
    assert len(set(_placed(roomy).values())) == 4
    _, _, _, tight = _compile(DUAL, 100_000)
    assert _placed(tight) == {"A3": 0, "B": 8192, "A5": 0, "B4": 8192}
    assert _agrees(DUAL, 100_000) == []


def test_out_of_memory_when_no_aliasing_is_enough() -> None:
    with pytest.raises(IllTyped) as caught:
        _compile(ROOT / "examples/cypress/flash_attention.cyp", 40_000)
    assert caught.value.rule == "Alloc-OutOfMemory"
    assert "out of memory" in str(caught.value)


LOOP = """# params: X, Y
Xp = partition_by_blocks(X, (2,))
Yp = partition_by_blocks(Y, (2,))
e1: () = for k in [0, 2), {} do
  S = tensor([2], SHARED)
  e2: () = copy(Xp[k], S), {}
  e3: () = copy(S, Yp[k]), {e2}
  yield e2
yield e1
"""

TINY = """
@task("t", Leaf, reads=["X"], writes=["Y"])
def leaf(X: tensor[1, f32], Y: tensor[1, f32]):
    copy(X, Y)

TaskMapping(instance="leaf", variant="leaf", proc=BLOCK, mems=[GLOBAL, GLOBAL],
            entrypoint=True)
"""


def _loop_races() -> list[object]:
    program = read_program(TINY, "tiny.cyp")
    arrays, _ = make_inputs("X=float32[4] Y=float32[4]")
    ir = parse_events(LOOP, "x.ir")
    assert races(instantiate(ir, program, arrays)) == []  # a fresh S per iteration
    return list(races(instantiate(allocate(ir, program), program, arrays)))


def test_a_reused_buffer_waits_for_the_previous_iterations_readers() -> None:
    """S is one buffer for both iterations: the loop body yields its reader e3 too,
    so iteration 1's copy into S waits for iteration 0's copy out of it."""
    assert _loop_races() == []


@pytest.mark.parametrize("fault, where", [
    ("cypress-drop-broadcast", "vectorize"),
    ("cypress-eager-spill", "copyelim"),
    ("cypress-alias-no-war", "allocate"),
    ("cypress-no-carried-war", "allocate"),
])
def test_each_seeded_fault_is_found(fault: str, where: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSEM_FAULT", fault)
    if fault == "cypress-no-carried-war":
        assert _loop_races()
        return
    if fault == "cypress-alias-no-war":
        assert _agrees(DUAL, 100_000)
        return
    program, arrays, scalars = _load(FIG8A)
    ir = vectorize(dependence_analysis(program, arrays, scalars))
    if where == "copyelim":
        ir = eliminate_copies(ir, program)
    assert races(instantiate(ir, program, arrays)), fault
