"""The types of lambda-cu's primitives and reduction operators.

Sec 6.2 omits the primitive rules ("they correspond directly to operators built into
the C++ language"); this table is our reading of them: each primitive and the argument
types it takes, overloaded on int and float where C's operator is. The interpreter
(`interpreter.lambdacu.prims`) gives each its C meaning; the checker
(`typing_rules.lambdacu`) reads only this table. Reduction operators (5.3): the base
type each folds, with its identity.
"""

from __future__ import annotations

from gpusem.calculus.lambdacu.values import (
    BOOL,
    CHAR,
    F32,
    FLOAT,
    I32,
    INT,
    INT32_MAX,
    INT32_MIN,
    Base,
    Bool,
    Scalar,
)

Sig = tuple[tuple[Base, ...], Base]
_II, _FF = (INT, INT), (FLOAT, FLOAT)

PRIMS: dict[str, tuple[Sig, ...]] = {}
for _op in ("add", "sub", "mul", "div", "min", "max"):
    PRIMS[_op] = ((_II, INT), (_FF, FLOAT))
PRIMS["mod"] = ((_II, INT),)
for _op in ("neg", "abs"):
    PRIMS[_op] = (((INT,), INT), ((FLOAT,), FLOAT))
for _op in ("lt", "le", "gt", "ge"):
    PRIMS[_op] = ((_II, BOOL), (_FF, BOOL), ((CHAR, CHAR), BOOL))
for _op in ("eq", "ne"):
    PRIMS[_op] = ((_II, BOOL), (_FF, BOOL), ((CHAR, CHAR), BOOL), ((BOOL, BOOL), BOOL))
for _op in ("and", "or", "xor"):
    PRIMS[_op] = (((BOOL, BOOL), BOOL), (_II, INT))
PRIMS["not"] = (((BOOL,), BOOL), ((INT,), INT))
PRIMS["shl"] = PRIMS["shr"] = ((_II, INT),)
PRIMS["i2f"] = (((INT,), FLOAT),)
PRIMS["f2i"] = (((FLOAT,), INT),)
PRIMS["ord"] = (((CHAR,), INT),)
PRIMS["chr"] = (((INT,), CHAR),)
for _op in ("sqrt", "exp", "log"):
    PRIMS[_op] = (((FLOAT,), FLOAT),)
# `len xs`: the length of any array (the `#xs` of Sec 7), typed apart in the checker.
ARRAY_PRIMS = ("len",)


def prim_result(op: str, args: tuple[Base, ...]) -> Base | None:
    """The result type of `op` on arguments of these types (None: no overload)."""
    for params, result in PRIMS.get(op, ()):
        if params == args:
            return result
    return None


# rop -> (the base type it folds, its identity)
ROP_TYPES: dict[str, tuple[Base, Scalar]] = {
    "iadd": (INT, I32(0)), "imul": (INT, I32(1)), "imax": (INT, I32(INT32_MIN)),
    "imin": (INT, I32(INT32_MAX)), "iand": (INT, I32(-1)), "ior": (INT, I32(0)),
    "ixor": (INT, I32(0)),
    "fadd": (FLOAT, F32(0.0)), "fmul": (FLOAT, F32(1.0)),
    "fmax": (FLOAT, F32(float("-inf"))), "fmin": (FLOAT, F32(float("inf"))),
    "band": (BOOL, Bool(True)), "bor": (BOOL, Bool(False)), "bxor": (BOOL, Bool(False)),
}
