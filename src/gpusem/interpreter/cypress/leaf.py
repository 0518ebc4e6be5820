"""The leaf library: the data operations a leaf variant performs (seed 001 l.180:
leaf variants "directly access tensor data"), each with one exact meaning on NumPy
float32 / int32 storage. The paper's leaves call CuTe (Fig. 5a l.62); these are our
reconstruction (docs/cypress.md, "Leaf library").

Exactness: sums and products are formed in float64 (int64) and rounded once to
float32 (wrapped to int32); `exp` is float64's, rounded once. On the integer-valued
data of the examples every result is exact, so a compiled kernel must match it bit for
bit whatever its summation order.

`mma_fma(C, A, B)` (ours, errata "Extension: fused mma") is the one leaf whose order is
its meaning: for each element of C, for k ascending, c = fma(a[m, k], b[k, n], c), each
step rounded ONCE to float32 (IEEE fusedMultiplyAdd, calculus/fma32.py), so that a
compiled kernel may issue FFMA and still be checked bit for bit on any data. On the
integer-valued data of the examples it equals `mma` (every partial sum exact).

Operand conventions: the first operand is written, the rest are read (`copy(S, D)`
writes its second, as Fig. 8b's `copy(src, dst)`). In `add/sub/mul/div/maximum(D, X,
Y)` a rank-1 Y of D's row count is broadcast along the rows (FlashAttention's
`S - rowmax`, `O / rowsum`).
"""

from __future__ import annotations

import numpy as np

from gpusem.calculus.errors import Trap
from gpusem.calculus.fma32 import mma_fused
from gpusem.calculus.span import Span
from gpusem.interpreter.cypress.views import View

# For each operation, which of its operands it writes (the rest it reads).
WRITES = {"clear": (0,), "copy": (1,), "mma": (0,), "mma_nt": (0,), "mma_fma": (0,),
          "add": (0,),
          "sub": (0,), "mul": (0,), "div": (0,), "maximum": (0,), "exp": (0,),
          "rowmax": (0,), "rowsum": (0,)}


def _need(cond: bool, op: str, span: Span, why: str) -> None:
    if not cond:
        raise Trap(f"leaf {op}: {why}", rule=f"Leaf-{op}", span=span)


def _wide(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64 if a.dtype.kind == "f" else np.int64)


def _narrow(a: np.ndarray, like: View) -> np.ndarray:
    return a.astype(like.base.dtype)


def apply(op: str, views: tuple[View, ...], span: Span) -> None:
    """Perform one leaf operation on its operands."""
    kinds = {v.base.dtype.kind for v in views}
    _need(len(kinds) == 1, op, span, "operands mix float32 and int32 tensors")
    match op:
        case "clear":
            (c,) = views
            c.write(np.zeros(c.shape, c.base.dtype))
        case "copy":
            s, d = views
            _need(s.shape == d.shape, op, span, f"shapes {s.shape} and {d.shape}")
            d.write(s.read())
        case "mma" | "mma_nt":
            c, a, b = views
            bb = _wide(b.read())
            bb = bb.T if op == "mma_nt" else bb
            ok = (len(c.shape) == len(a.shape) == 2 and bb.ndim == 2
                  and a.shape[1] == bb.shape[0]
                  and c.shape == (a.shape[0], bb.shape[1]))
            _need(ok, op, span, f"shapes C{c.shape} A{a.shape} B{b.shape}")
            c.write(_narrow(_wide(c.read()) + _wide(a.read()) @ bb, c))
        case "mma_fma":
            c, a, b = views
            _need(c.base.dtype.kind == "f", op, span, "fused mma of int32 tensors")
            ok = (len(c.shape) == len(a.shape) == len(b.shape) == 2
                  and a.shape[1] == b.shape[0] and c.shape == (a.shape[0], b.shape[1]))
            _need(ok, op, span, f"shapes C{c.shape} A{a.shape} B{b.shape}")
            c.write(mma_fused(c.read(), a.read(), b.read()))
        case "add" | "sub" | "mul" | "div" | "maximum":
            d, x, y = views
            yy = _wide(y.read())
            if len(d.shape) == 2 and y.shape == (d.shape[0],):
                yy = yy[:, None]
            else:
                _need(y.shape == d.shape, op, span, f"shapes {d.shape} and {y.shape}")
            _need(x.shape == d.shape, op, span, f"shapes {d.shape} and {x.shape}")
            _need(op != "div" or d.base.dtype.kind == "f", op, span,
                  "div of int32 tensors")
            with np.errstate(all="ignore"):
                fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                      "div": np.divide, "maximum": np.maximum}[op]
                d.write(_narrow(fn(_wide(x.read()), yy), d))
        case "exp":
            d, x = views
            _need(d.base.dtype.kind == "f", op, span, "exp of int32 tensors")
            _need(d.shape == x.shape, op, span, f"shapes {d.shape} and {x.shape}")
            with np.errstate(all="ignore"):
                d.write(_narrow(np.exp(_wide(x.read())), d))
        case "rowmax" | "rowsum":
            r, x = views
            _need(len(x.shape) == 2 and r.shape == (x.shape[0],), op, span,
                  f"shapes r{r.shape} X{x.shape}")
            _need(op == "rowsum" or x.shape[1] > 0, op, span, "max of an empty row")
            wide = _wide(x.read())
            rows = wide.max(axis=1) if op == "rowmax" else wide.sum(axis=1)
            r.write(_narrow(rows, r))
        case _:
            raise Trap(f"leaf {op}: unknown operation", rule="Leaf", span=span)
