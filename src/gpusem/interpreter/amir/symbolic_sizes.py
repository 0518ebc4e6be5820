"""`gpusem synccheck FILE --symbolic N,K`: the sync check of a GPU IR program over
every size its preconditions admit (issue 27, part 1): a search for a *counterexample
size* steered by the program's tiling, with z3 solving the size preconditions, then,
where none is found, a proof for every size (interpreter/amir/symbolic_proof.py).
proofs_notes/symbolic_sizes.md has the argument and its measurements.

Verdicts (the house rule: never "ok" without a proof):
  - `refuted`: a concrete size (every symbolic parameter given a value) at which the
    concrete check `gpusem synccheck FILE -D N=..` rejects (exit 1: a failing AMIR
    check, a trap, or a front-end analysis error). The size is the replay command;
    the concrete result is returned with it, so the diagnostic is the usual one.
  - `proved` (exit 0): no counterexample among the sizes tried, the AMIR program is
    the same at each of them, and `prove` shows the machine accepts at every size.
  - `unproved`: no counterexample among the sizes tried, and the *named reason* the
    proof does not apply (outside-fragment, symbolic-bounds, symbolic-interference,
    symbolic-guard, no-invariant, base-run-rejects, no-admissible-size).

The preconditions of a size are (a) the spec's `size >= 0`, (b) the user's `--assume`
atoms (`N % 256 == 0`, `N >= 512`: Python-syntax affine constraints, `/` the integer
division of GPU IR), and (c) the front end's Limits rule at that size (extents
positive, parallel loops non-empty, values fit int32): a size the Limits rule refuses
(BadInput with rule "Limits") is *excluded*, not a counterexample; it is counted and
its first message reported.

Which sizes are tried: z3 enumerates the smallest models of (a)+(b), within
`0 <= p <= up_to`, in three tiers taken in turn: every parameter a multiple of the
least common multiple L_p of the divisors it meets in the program (`N / 128`,
`N % 256`: whole tiles), then one off a multiple above L_p (p % L_p in {1, L_p - 1}:
a ragged last tile), then any value. They run cheapest first (smallest sum), so the
reported counterexample is the smallest found.
"""

from __future__ import annotations

import ast as pyast
import dataclasses
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import z3
from gpusem.calculus.errors import BadInput, GpusemError
from gpusem.calculus.gpuir import ast as G
from gpusem.interpreter.amir.symbolic_proof import Proof, Unproved, prove

if TYPE_CHECKING:
    from gpusem.interpreter.amir.synccheck import SyncResult

DEFAULT_UP_TO = 4096
DEFAULT_SIZES = 12


@dataclass(frozen=True)
class SymbolicResult:
    """The outcome of `symbolic_synccheck`. `counterexample` and `result` are set
    exactly when the verdict is `refuted`; `reason` exactly when it is `unproved`."""

    file: str
    proc: str
    params: tuple[str, ...]
    fixed: dict[str, int]
    verdict: str                          # "refuted" | "unproved" | "proved"
    tried: tuple[dict[str, int], ...]
    excluded: tuple[dict[str, int], ...]
    seconds: float
    counterexample: dict[str, int] | None = None
    result: SyncResult | None = None
    failure: str | None = None                  # a front-end error's one line
    reason: Unproved | None = None
    first_excluded: str | None = field(default=None)
    proof: Proof | None = None
    assume: tuple[str, ...] = ()

    @property
    def refuted(self) -> bool:
        return self.verdict == "refuted"

    @property
    def proved(self) -> bool:
        return self.verdict == "proved"

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "file": self.file, "proc": self.proc, "symbolic": list(self.params),
            "defines": self.fixed, "verdict": self.verdict,
            "tried": list(self.tried), "excluded": len(self.excluded),
            "seconds": round(self.seconds, 4)}
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
            out["replay"] = self.replay()
            out["concrete"] = (self.result.as_json() if self.result is not None
                               else {"error": self.failure})
        if self.reason is not None:
            out["reason"] = {"name": self.reason.name, "message": self.reason.message}
        if self.first_excluded is not None:
            out["first_excluded"] = self.first_excluded
        if self.proof is not None:
            out["proof"] = {"for_all": self.for_all(), "how": self.proof.text(),
                            "seconds": round(self.proof.seconds, 4)}
        return out

    def for_all(self) -> str:
        """The sizes a proof covers: the preconditions of the module docstring."""
        conds = [f"{p} >= 0" for p in self.params] + list(self.assume)
        return (f"all {', '.join(self.params)} with {', '.join(conds)} that the "
                "Limits rule admits")

    def replay(self) -> str:
        sizes = {**self.fixed, **(self.counterexample or {})}
        return "gpusem synccheck " + " ".join(
            [self.file, *(f"-D {k}={v}" for k, v in sizes.items())])

    def report(self, source: str) -> str:
        shown = _sizes_text(self.params, self.tried)
        head = f"{self.proc}({', '.join(self.params)})"
        if self.refuted:
            assert self.counterexample is not None
            at = ", ".join(f"{k}={v}" for k, v in self.counterexample.items())
            lines = [(f"refuted: {head} fails at {at} (tried {shown} in "
                      f"{self.seconds:.2f} s); replay: {self.replay()}")]
            lines.append(self.result.report(source) if self.result is not None
                         else str(self.failure))
            return "\n".join(lines)
        if self.proof is not None:
            return (f"ok (proved for {self.for_all()}): {head}: "
                    f"{self.proof.text()}; proof {self.proof.seconds:.2f} s, with "
                    f"the search ({shown}) {self.seconds:.2f} s")
        assert self.reason is not None
        lines = [(f"unproved: {head}: no counterexample at {shown} in "
                  f"{self.seconds:.2f} s; not a proof for all sizes: "
                  f"{self.reason.name}: {self.reason.message}")]
        if self.excluded:
            lines.append(f"  excluded {len(self.excluded)} size(s) outside the "
                         f"preconditions, first: {self.first_excluded}")
        return "\n".join(lines)


def symbolic_synccheck(source: str, file: str, params: Sequence[str],
                       fixed: Mapping[str, int], *, assume: Sequence[str] = (),
                       up_to: int = DEFAULT_UP_TO, sizes: int = DEFAULT_SIZES,
                       proc_name: str | None = None, rules: str = "fixed",
                       max_steps: int = 200_000_000) -> SymbolicResult:
    """Search the sizes of `params` (the other control parameters from `fixed`) for
    one where the concrete sync check rejects; see the module docstring."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.interpreter.amir.synccheck import pick_proc, synccheck_proc

    proc = pick_proc(parse_module(source, file).procs, proc_name, file)
    names = tuple(params)
    _check_params(proc, names, fixed, file)
    fixed = {k: v for k, v in fixed.items() if k not in names}
    constraints = [parse_assumption(a, names, i) for i, a in enumerate(assume, 1)]
    start = time.perf_counter()
    tried: list[dict[str, int]] = []
    excluded: list[dict[str, int]] = []
    first_excluded: str | None = None
    last: SyncResult | None = None
    amirs: list[SyncResult] = []
    for size in candidate_sizes(names, constraints, divisors(proc, names), up_to,
                                sizes):
        env = {**fixed, **size}
        try:
            result = synccheck_proc(proc, env, rules=rules, max_steps=max_steps,
                                    file=file)
        except BadInput as e:
            if e.rule != "Limits":
                raise BadInput(f"{e.message} (at {_show(size)})", rule=e.rule,
                               span=e.span) from e
            excluded.append(size)
            first_excluded = first_excluded or f"{_show(size)}: {e.one_line()}"
            continue
        except GpusemError as e:
            if e.exit_code != 1:                 # a budget: the search cannot go on
                raise type(e)(f"{e.message} (at {_show(size)})", rule=e.rule,
                              span=e.span) from e
            tried.append(size)
            return SymbolicResult(file, proc.name, names, fixed, "refuted",
                                  tuple(tried), tuple(excluded),
                                  time.perf_counter() - start, size,
                                  failure=e.one_line(), first_excluded=first_excluded)
        tried.append(size)
        last = result
        amirs.append(result)
        if not result.verdict.accepted:
            return SymbolicResult(file, proc.name, names, fixed, "refuted",
                                  tuple(tried), tuple(excluded),
                                  time.perf_counter() - start, size, result,
                                  first_excluded=first_excluded)
    if last is None:
        reason = Unproved("no-admissible-size",
                          f"no size within 0..{up_to} satisfies the preconditions")
    elif any(r.amir != last.amir for r in amirs):
        reason = Unproved("outside-fragment", "the AMIR program differs between "
                          "the sizes tried (a conversion that depends on a size)")
    else:
        got = prove(last.amir, names, constraints, {**fixed, **tried[-1]}, fixed)
        if isinstance(got, Proof):
            return SymbolicResult(file, proc.name, names, fixed, "proved",
                                  tuple(tried), tuple(excluded),
                                  time.perf_counter() - start,
                                  first_excluded=first_excluded, proof=got,
                                  assume=tuple(assume))
        reason = got
    return SymbolicResult(file, proc.name, names, fixed, "unproved", tuple(tried),
                          tuple(excluded), time.perf_counter() - start,
                          reason=reason, first_excluded=first_excluded,
                          assume=tuple(assume))


def _check_params(proc: G.Proc, names: tuple[str, ...], fixed: Mapping[str, int],
                  file: str) -> None:
    sizes = {p.name for p in proc.ctrl_params if p.kind is G.CtrlKind.SIZE}
    if not names:
        raise BadInput(f"{file}: --symbolic: no parameter named")
    for n in names:
        if n not in sizes:
            raise BadInput(f"{file}: --symbolic: {n} is not a size parameter of "
                           f"{proc.name} (have: {', '.join(sorted(sizes)) or 'none'})")
    if len(set(names)) != len(names):
        raise BadInput(f"{file}: --symbolic: a parameter is named twice")
    missing = [p.name for p in proc.ctrl_params
               if p.name not in names and p.name not in fixed]
    if missing:
        raise BadInput(f"{file}: missing definition: {', '.join(missing)} has no "
                       f"value (pass -D {missing[0]}=... or name it in --symbolic)")


# ------------------------------------------------------------- the preconditions


_OPS: dict[type, Any] = {
    pyast.Add: lambda a, b: a + b, pyast.Sub: lambda a, b: a - b,
    pyast.Mult: lambda a, b: a * b, pyast.Div: lambda a, b: a / b,
    pyast.FloorDiv: lambda a, b: a / b, pyast.Mod: lambda a, b: a % b}
_REL: dict[type, Any] = {
    pyast.Eq: lambda a, b: a == b, pyast.NotEq: lambda a, b: a != b,
    pyast.Lt: lambda a, b: a < b, pyast.LtE: lambda a, b: a <= b,
    pyast.Gt: lambda a, b: a > b, pyast.GtE: lambda a, b: a >= b}


def parse_assumption(text: str, params: Sequence[str], index: int = 1) -> Any:
    """One `--assume` atom as a z3 formula over `params` (integers; `/` and `//` the
    integer division, both operands non-negative in practice). Malformed:
    BadInput `--assume:INDEX:COL: message`."""
    where = f"--assume:{index}"
    try:
        tree = pyast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise BadInput(f"{where}:{e.offset or 1}: malformed assumption: "
                       f"{text!r}") from None
    env = {p: z3.Int(p) for p in params}

    def bad(node: pyast.AST, what: str) -> BadInput:
        return BadInput(f"{where}:{getattr(node, 'col_offset', 0) + 1}: {what}")

    def go(node: pyast.AST) -> Any:
        match node:
            case pyast.Constant(value=bool()):
                raise bad(node, "a boolean constant is not an assumption")
            case pyast.Constant(value=int() as v):
                return z3.IntVal(v)
            case pyast.Name(id=name):
                if name not in env:
                    raise bad(node, f"unknown size {name} (symbolic: "
                                    f"{', '.join(params)})")
                return env[name]
            case pyast.UnaryOp(op=pyast.USub(), operand=x):
                return -go(x)
            case pyast.UnaryOp(op=pyast.Not(), operand=x):
                return z3.Not(go(x))
            case pyast.BinOp(op=op, left=lhs, right=rhs) if type(op) in _OPS:
                return _OPS[type(op)](go(lhs), go(rhs))
            case pyast.BoolOp(op=op, values=vs):
                return (z3.And if isinstance(op, pyast.And) else z3.Or)(
                    *[go(v) for v in vs])
            case pyast.Compare(left=lhs, ops=ops, comparators=rest):
                terms = [go(lhs), *[go(r) for r in rest]]
                if any(type(o) not in _REL for o in ops):
                    raise bad(node, "unsupported comparison")
                return z3.And(*[_REL[type(o)](a, b)
                                for o, a, b in zip(ops, terms, terms[1:])])
        raise bad(node, f"unsupported in an assumption: {type(node).__name__}")

    formula = go(tree.body)
    if not z3.is_bool(formula):
        raise BadInput(f"{where}:1: not a condition: {text!r}")
    return formula


def divisors(proc: G.Proc, params: Sequence[str]) -> dict[str, list[int]]:
    """Per symbolic parameter, the constant divisors of the `/` and `%` it occurs
    under (`N / 128`, `(N - 1) % 256`): the program's tile sizes."""
    out: dict[str, list[int]] = {p: [] for p in params}
    for node in _nodes(proc):
        if isinstance(node, G.CBin) and node.op in "/%" \
                and isinstance(node.rhs, G.CInt) and node.rhs.value > 0:
            for name in _vars(node.lhs):
                if name in out and node.rhs.value not in out[name]:
                    out[name].append(node.rhs.value)
    return out


def candidate_sizes(params: Sequence[str], constraints: Sequence[Any],
                    tiles: Mapping[str, Sequence[int]], up_to: int,
                    count: int) -> list[dict[str, int]]:
    """Up to `count` sizes satisfying `constraints` within 0..up_to, from the three
    tiers of the module docstring taken in turn, sorted cheapest first."""
    xs = {p: z3.Int(p) for p in params}
    base = [c for p in params for c in (xs[p] >= 0, xs[p] <= up_to)]
    lcm = {p: min(math.lcm(*tiles[p]) if tiles.get(p) else 1, max(up_to, 1))
           for p in params}
    tiers = [
        [z3.And(xs[p] >= lcm[p], xs[p] % lcm[p] == 0) for p in params],
        [z3.And(xs[p] > lcm[p], z3.Or(xs[p] % lcm[p] == 1,
                                       xs[p] % lcm[p] == lcm[p] - 1)) for p in params]
        if any(v > 2 for v in lcm.values()) else [z3.BoolVal(False)],
        [z3.BoolVal(True)],
    ]
    found: list[dict[str, int]] = []
    solvers = []
    for tier in tiers:
        opt = z3.Optimize()
        opt.add(*base, *constraints, *tier)
        opt.minimize(z3.Sum(*xs.values()) if len(xs) > 1 else next(iter(xs.values())))
        solvers.append(opt)
    live = list(solvers)
    while live and len(found) < count:
        for opt in list(live):
            if len(found) >= count:
                break
            if opt.check() != z3.sat:
                live.remove(opt)
                continue
            model = opt.model()
            size = {p: model.eval(xs[p], model_completion=True).as_long()
                    for p in params}
            block = z3.Or(*[xs[p] != v for p, v in size.items()])
            for other in solvers:
                other.add(block)
            found.append(size)
    return sorted(found, key=lambda s: (sum(s.values()), tuple(s.values())))


# ------------------------------------------------------------------ helpers


def _nodes(x: object) -> Iterator[object]:
    """Every dataclass node under `x` (tuples followed), `x` first."""
    yield x
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            if f.name in ("span", "origin"):
                continue
            yield from _nodes(getattr(x, f.name))
    elif isinstance(x, (tuple, list)):
        for y in x:
            yield from _nodes(y)


def _vars(x: object) -> set[str]:
    return {n.name for n in _nodes(x) if isinstance(n, G.CVar)}


def _show(size: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in size.items())


def _sizes_text(params: Sequence[str], tried: Sequence[Mapping[str, int]]) -> str:
    if not tried:
        return "no size"
    if len(params) == 1:
        (p,) = params
        return f"{len(tried)} size(s) {p} in {{{', '.join(str(s[p]) for s in tried)}}}"
    return f"{len(tried)} size(s) ({'; '.join(_show(s) for s in tried)})"
