"""Signatures by cause (issue 17): what a failing kernel's finding is *about*.

A signature names a cause, not the directive path of the bad store: two programs that
fail because appyc mishandles `#pragma atomic` are one class wherever the atomic sits,
and a wrong result inside `parallel for simd` is not one class just because of the
directive above it. Three sources, in this order:

1. The catalogue below: causes found and confirmed by hand (results/appy/issue7/README.md,
   causes A-L, and those found since), each with its *trigger* (the constructs of
   `coverage.py` whose presence makes appyc fail that way) and the outcomes it
   produces. A failing kernel whose constructs include a trigger and whose outcome is
   one of the cause's is that cause: `cause:<id>`.
2. An error text: appyc's or Triton's exception, normalised (numbers, types and the
   quoted user line removed), is already a cause: `<kind>:<message>`.
3. Otherwise (a wrong result or an out-of-bounds write of no known cause), the
   constructs of the failing kernel that can change code generation (not its dtype,
   nor which math function it calls): `<kind>:unknown:<constructs>`; hunting shrinks
   the kernel, and its constructs become the trigger to steer away from.

The trigger of each cause is what the generator avoids once the cause has been seen
(`strategies.programs(avoid=...)`), so that a known bug does not hide unknown ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpusem.fuzz.appy.evidence import atomic_dropped


@dataclass(frozen=True)
class Cause:
    id: str
    title: str  # what appyc (or the stand-in) does
    trigger: frozenset[str]
    kinds: tuple[str, ...]
    detail: str = ""  # a regex the outcome's detail must match ("" = any)
    blame: str = "appyc"  # appyc | triton-interpreter


_ANY_FAIL = ("wrong", "oob", "triton", "host", "runtime", "generation", "crash")

CATALOGUE: tuple[Cause, ...] = (
    Cause("sequential-for", "`#pragma sequential for` (Section 3.1) is rejected: "
          "'Unrecognized pragma clause: sequential'", frozenset({"sequential_for"}),
          ("generation",), r"sequential"),
    Cause("tensor-top-parallel", "a top-level tensor statement with a `parallel` "
          "dimension (Listing 7) is rejected: 'Unrecognized pragma clause: parallel'",
          frozenset({"tensor_top", "tensor_parallel_dim"}), ("generation",),
          r"parallel"),
    Cause("mvl-missing", "`appy.MVL` (Section 3.2) does not exist in appyc 0.2.0",
          frozenset({"mvl"}), ("host", "generation", "triton"), r"MVL"),
    Cause("atomic-linked-to-loop", "`#pragma atomic` on an update whose index names "
          "no loop variable (Listing 5's `s[0] += A[i]`, or `H[l] += 1` through a "
          "private label) is linked as a loop pragma (to the next `for`) and the "
          "update is hoisted out of the kernel: lost (int), a Triton type error "
          "(float) or a host NameError (the label); `H[I[i]]` and Listing 2's row "
          "update `G[l, :N]` compile right", frozenset({"atomic_invariant_index"}),
          _ANY_FAIL),
    Cause("vidx-bound-dropped", "the bound of `appy.vidx(i, w, N)` is dropped: loads "
          "and stores of a named vidx vector have no mask", frozenset({"vidx"}),
          ("oob", "wrong", "triton", "host", "runtime")),
    Cause("simd-step-ignored", "a `simd` loop ignores its step: range(0, N, 2) "
          "computes every cell of each block", frozenset({"simd_step"}),
          ("wrong", "oob", "triton")),
    Cause("simd-augassign-as-reduction", "`C[i] += e` in a `simd` loop is read as a "
          "reduction (BlockLoop wraps the RHS in appy.sum): C[i] gets the block's sum "
          "(`*=`, `-=` and `C[i] = C[i] + e` compile right)",
          frozenset({"simd_add_augassign"}), ("wrong", "triton", "oob")),
    Cause("simd-if-on-block", "an `if` inside a `simd` loop is emitted as a Python "
          "`if` on a block (compile error on a GPU, garbage in the interpreter)",
          frozenset({"simd_if"}), ("wrong", "triton", "oob", "runtime")),
    Cause("negative-index", "Python's negative index A[-k] is not wrapped: the "
          "kernel reads before the array", frozenset({"negative_index"}),
          ("wrong", "oob", "triton")),
    Cause("floor-div-mod", "integer `//` and `%` truncate (C) instead of flooring "
          "(Python)", frozenset({"int_floordiv_mod"}), ("wrong",)),
    # Issue 24: one cause, one signature. Each was a family of `wrong:unknown:<shape>`
    # or error-text signatures, one per program shape, in the cpu_2h and h100
    # campaigns (results/appy/); confirmed by hand from their smallest programs.
    Cause("reduction-invariant-once", "a `reduction(+:acc)` update adding a "
          "loop-invariant value (`acc += 1.5`, `acc += np.maximum(2, 3)`) adds it once "
          "per block, not once per iteration (acc = init + 1.5 for any N); an int "
          "value fails in Triton ('int' has no dtype) or on the host instead",
          frozenset({"reduction_invariant_rhs"}), ("wrong", "triton", "host")),
    Cause("reduction-masked-lanes", "a `reduction(+:acc)` update whose value has a "
          "constant branch (`acc += where(A[i] <= 0, 2, A[i])`, `3 if c else A[i]`) "
          "sums the block's masked-off lanes too: each adds the constant (3 x 1024 "
          "for 64 iterations); so does `acc += np.maximum(3, A[i])` (3 on a masked "
          "lane)", frozenset({"reduction_const_branch"}), ("wrong",)),
    Cause("nested-conditional", "a conditional expression nested in another "
          "(`(a if c else b) if d else e`, in any branch or the condition) is "
          "translated wrongly: wrong values in Triton's interpreter, 'Ternary "
          "expression with dynamic condition has inconsistent types' in Triton's "
          "compiler", frozenset({"nested_conditional"}), ("wrong", "triton"),
          r"Ternary|expected .* got"),
    Cause("dot-wrong", "`appy.dot(A[i, :N], X[:N])` in a worker computes a wrong "
          "value", frozenset({"mv_dot"}), ("wrong",)),
    Cause("builtin-reduce-on-slice", "Python's `min`/`max` of a row slice in a "
          "worker reaches Triton untranslated ('int' object is not iterable in the "
          "interpreter, 'min requires at least N values' in the compiler)",
          frozenset({"tensor_reduce", "tensor_in_worker"}), ("triton",),
          r"not iterable|requires at least"),
    # Decided by evidence, not by trigger (kinds=() so `classify` never picks it):
    # `verdicts.sign_kernel` reads the generated module (fuzz/appy/evidence.py).
    Cause("atomic-dropped", "`#pragma atomic` is dropped: the generated Triton module "
          "updates the cell with tl.load + tl.store and no tl.atomic_*, so concurrent "
          "programs lose updates on a GPU (Triton's interpreter runs programs one after "
          "another and hides it)", frozenset({"atomic"}), ()),
)
BY_ID = {c.id: c for c in CATALOGUE}

# Constructs that decide code generation (the fallback signature's vocabulary): loop
# and directive structure, statement forms, indexing; not dtypes, math functions or
# sizes, which rarely are the cause and would split one cause into many classes.
STRUCTURAL = (
    "parallel_for", "parallel_for_simd", "simd_loop", "sequential_for", "loop_step",
    "loop_offset", "nested_parallel", "host_loop_around_parallel",
    "plain_loop_in_worker", "triangular_bounds", "bounds_from_array", "private_scalar",
    "reduction_clause", "atomic", "atomic_fixed_cell", "atomic_invariant_index",
    "atomic_indirect",
    "atomic_tensor", "simd_scalar_sum", "simd_scalar_maxmin",
    "simd_cell_reduction", "simd_augassign", "simd_add_augassign", "simd_if",
    "simd_step", "in_place_update",
    "shifted_self_assign", "if_in_loop", "conditional_expr", "where", "bitwise_logic",
    "indirect_read", "negative_index", "vidx", "tensor_top", "tensor_in_worker",
    "tensor_parallel_dim", "tensor_simd_dim", "tensor_reduce_dim", "le_prop",
    "tensor_reduce", "broadcast", "stencil_slices", "mv_dot", "data_clause_to",
    "return_stmt", "rank3")


def normalise(text: str) -> str:
    """An error text without what varies between programs of one cause."""
    text = text.split(" | at ")[0]  # the user's source line is context, not the class
    text = unwrap(text)
    text = re.sub(r"\b(fp|float|int|i|u|bf)(16|32|64|8|1)\b", "<ty>", text)
    text = re.sub(r"'[^']*'", "'…'", text) if len(text) > 160 else text
    text = re.sub(r"\d+", "N", text)
    text = re.sub(r"\b[A-Z]\d+\b|\b(acc|t|l|col|m|s|v|alpha)N\b", "X", text)
    return text[:160]


_WRAPPER = re.compile(r"^(?:InterpreterError|CompilationError): (.*)$", re.DOTALL)
_CALL_FORM = re.compile(r"""^(\w+)\((['"])(.*)\2\)$""", re.DOTALL)


def unwrap(text: str) -> str:
    """The error inside the wrappers of Triton's two front ends (issue 24: one cause
    read through the interpreter and through the compiler was two signatures). The
    interpreter writes `InterpreterError: ValueError("msg")`, sometimes nested twice
    (`InterpreterError('AttributeError("msg")')`), the compiler `CompilationError:
    ValueError: msg`; both become `ValueError: msg`."""
    while True:
        if m := _WRAPPER.match(text):
            text = m[1]
        elif m := _CALL_FORM.match(text):
            text = f"{m[1]}: {m[3]}".replace("\\'", "'").replace('\\"', '"')
        else:
            return text


def cause_signature(kind: str, detail: str, feats: set[str], module: str = ""
                    ) -> tuple[str, Cause | None, str]:
    """(signature, cause, evidence) of one failing kernel: the catalogue, then the
    evidence in the generated module (an atomic pragma the module dropped), then
    `classify`'s error text or constructs. What `verdicts.sign_kernel` signs with, and
    what tests/appy/test_cause_clustering.py recomputes for committed campaigns."""
    sig, cause = classify(kind, detail, feats)
    if cause is None and kind in ("wrong", "oob"):
        dropped = atomic_dropped(feats, module)
        if dropped:
            return "cause:atomic-dropped", BY_ID["atomic-dropped"], dropped
    return sig, cause, ""


def classify(kind: str, detail: str, feats: set[str]) -> tuple[str, Cause | None]:
    """(signature, the catalogued cause or None) of one failing kernel."""
    for c in CATALOGUE:
        if c.trigger <= feats and kind in c.kinds and (
                not c.detail or re.search(c.detail, detail)):
            return f"cause:{c.id}", c
    if kind in ("wrong", "oob"):
        core = sorted(f for f in feats if f in STRUCTURAL)
        return f"{kind}:unknown:{'+'.join(core) or 'plain'}", None
    return f"{kind}:{normalise(detail)}", None


def trigger_of(signature: str) -> frozenset[str] | None:
    """The constructs to steer away from once `signature` is known (None: no trigger
    can be read off it, e.g. an error text)."""
    if signature.startswith("cause:"):
        c = BY_ID.get(signature.removeprefix("cause:").split("@")[0])
        return c.trigger if c else None
    m = re.match(r"^(wrong|oob):unknown:(.*?)(@.*)?$", signature)
    if m and m[2] != "plain":
        return frozenset(m[2].split("+"))
    return None
