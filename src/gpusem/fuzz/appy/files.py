"""The files of an APPy finding's bundle: inputs, expected (what plain NumPy computes:
the sequential reading), actual, and the per-kernel trace."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
from gpusem.calculus.errors import BadInput

if TYPE_CHECKING:
    from gpusem.compiler.appy_triton.driver import Outcome
    from gpusem.fuzz.appy.verdicts import KernelRun, ProgramRun


def _arr(a: np.ndarray) -> dict:
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.tolist()}


def inputs_json(arrays: dict, scalars: dict) -> str:
    return json.dumps({"arrays": {k: _arr(v) for k, v in arrays.items()},
                       "scalars": scalars}, indent=1) + "\n"


def read_inputs(text: str) -> tuple[dict, dict]:
    """A bundle's inputs.json; BadInput (one line) when it is not one."""
    try:
        d = json.loads(text)
        arrays = {str(k): np.asarray(v["data"], dtype=v["dtype"]).reshape(v["shape"])
                  for k, v in d["arrays"].items()}
        scalars = {str(k): v for k, v in d["scalars"].items()}
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise BadInput(f"malformed bundle: inputs.json: {type(err).__name__}: "
                       f"{str(err)[:120]}") from None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in scalars.values()):
        raise BadInput("malformed bundle: inputs.json: a scalar is not a number")
    return arrays, scalars


def arrays_json(arrays: dict | None) -> str:
    return json.dumps({k: _arr(v) for k, v in (arrays or {}).items()}) + "\n"


def actual_json(out: Outcome) -> str:
    if out.kind == "wrong":
        return json.dumps({"outcome": out.kind, "mismatch": out.detail,
                           "arrays": {k: _arr(v) for k, v in out.outputs.items()}}) + "\n"
    return json.dumps({"outcome": out.kind, "error": out.detail}) + "\n"


def trace(run: ProgramRun, chosen: KernelRun | None) -> str:
    lines = ["legality: legal (Legal-Range, Legal-Private, Legal-SimdScalar, "
             "Legal-Atomic, Legal-Data, Legal-Return, Legal-Disjoint, Legal-SimdLanes "
             "all hold)"]
    if run.whole is not None:
        lines.append(f"whole function: {run.whole.kind} {run.whole.detail[:200]}")
    for j, k in enumerate(run.kernels):
        out = k.outcome
        mark = " <- this bundle" if k is chosen else ""
        lines.append(f"kernel {j}: {out.kind if out else '-'} "
                     f"{k.signature or ''} {k.blame or ''}{mark}".rstrip())
    if chosen is not None and chosen.outcome is not None:
        lines += [f"detail: {chosen.outcome.detail}",
                  f"seconds: {chosen.outcome.seconds:.3f}"]
    return "\n".join(lines) + "\n"
