"""Instruction calls whose control arguments matter to the front end's InstrCall rule
(Section 3.4 "Proc & Instruction Calls"): a call's collective unit set by its
arguments (Exo-GPU's TMA multicast runs on `ncta * cuda_warp_in_cluster_strided
(cta_stride)`), and size arguments that must equal their windows' extents (Exo-GPU's
`cudaMemcpyAsync_htod_1f32(n, dst, src)`). Used by typing_rules/gpuir/frontend.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import cvars, eval_c
from gpusem.calculus.gpuir.instructions import Instr, InstrParam
from gpusem.calculus.gpuir.units import unit_def


def _constant(c: A.CExpr, sizes: set[str]) -> bool:
    return cvars(c) <= sizes


def call_unit(s: A.InstrCall, g: Instr, consts: Mapping[str, int],
              sizes: set[str]) -> tuple[A.UnitExpr | None, str | None]:
    """τ_u of this call (its control arguments may set it: `Instr.unit_params`) and a
    problem with it; no unit when an argument it needs is not a constant (the
    argument checks report that)."""
    values: dict[str, int] = {}
    for p, a in zip(g.params, s.args, strict=False):
        if p.name in g.unit_params:
            if isinstance(a, (A.DRead, A.DConst)) or not _constant(a, sizes):
                return None, None
            values[p.name] = eval_c(a, consts)
    if len(values) != len(g.unit_params):
        return None, None
    try:
        unit_def(g.unit_for(values))
    except BadInput as err:
        return None, f"bad argument: {g.name}: {err.message}"
    return g.unit_for(values), None


def size_arg_problem(g: Instr, p: InstrParam, a: A.InstrArg, symbols: dict[str, int],
                     consts: Mapping[str, int], sizes: set[str]) -> str | None:
    """A size argument must equal the extent its windows give the symbol."""
    if p.size_of is None or isinstance(a, (A.DRead, A.DConst)):
        return None
    if not _constant(a, sizes) or p.size_of not in symbols:
        return None
    got = eval_c(a, consts)
    if got != symbols[p.size_of]:
        return (f"shape mismatch: {g.name} argument {p.name} = {got}, but its windows "
                f"have extent {symbols[p.size_of]}")
    return None
