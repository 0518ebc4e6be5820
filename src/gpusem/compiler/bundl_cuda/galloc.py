"""Pass `place_global_allocations`: `alloc ... in Global` -> slots of scratch arrays.

S-Alloc-Global (fixed reading, errata "S-Alloc-Shared and S-Alloc-Global allocate in
η"): `x := alloc Global τ n` at code perspective π allocates ONE fresh, zeroed array
in Σ per unit of π, which the unit's threads share (T-Alloc binds x :^π τ[]^Global:
data at π is seen alike by every thread of a π unit, so a `lower`/`partition` of x
lets them write pieces that all of them read later). CUDA has no allocation inside a
kernel that would give that cheaply, so the kernel takes, per element type, one extra
zero-filled array parameter `gs_gscratch_<type>` (launch.py fills it), and every
allocation site gets a slot of it with room for one array per unit of π:

    x = gs_gscratch_<type> + slot + unit(π) · n
    unit((Thread, n)) = (blockIdx.x · T + threadIdx.x) div n   (units are aligned)
    unit((Block, n))  = blockIdx.x div n        unit((Grid, 1)) = 0

A site met at most once per unit and launch (not under a `while`, and in the kernel or
a function called from one such call site) finds its slot zeroed by the launch. A site
met again (a loop, a function called twice) must give every dynamic instance a fresh
zeroed array, like the interpreter's: the unit's threads synchronise (every earlier
use is over), zero the slot together, and synchronise again before the body; among
blocks there is no such barrier, so that case is `unsupported`.
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.calculus.bundl.ast import BaseType
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.errors import CompileError
from gpusem.compiler.bundl_cuda.paths import note
from gpusem.compiler.bundl_cuda.traverse import bodies, map_bodies, walk

TRAILING_PARAMS = 3  # gs_p, gs_block, gs_smem_off (from_bundl._lower_fn / _lower_call)


def scratch_name(elem: BaseType) -> str:
    return f"gs_gscratch_{elem.value}"


def units(persp: Perspective, blocks: int, threads: int) -> int:
    """How many units of `persp` the grid holds (one array each)."""
    match persp.level:
        case Level.THREAD:
            return blocks * threads // persp.n
        case Level.BLOCK:
            return blocks // persp.n
    return 1


def unit_index(persp: Perspective, threads: int) -> str:
    """C text: which unit of `persp` this thread is in (units are aligned: every code
    perspective reachable from grid[1] is, by `align to` and `group`'s divisibility)."""
    match persp.level:
        case Level.THREAD:
            return f"((int)blockIdx.x * {threads} + (int)threadIdx.x) / {persp.n}"
        case Level.BLOCK:
            return f"(int)blockIdx.x / {persp.n}"
    return "0"


def _calls(prog: K.KProgram) -> dict[str, list[tuple[str, bool]]]:
    """callee -> [(caller, whether the call is under a `while`)]."""
    found: dict[str, list[tuple[str, bool]]] = {}

    def visit(body: tuple, caller: str, in_loop: bool) -> None:
        for s in body:
            if isinstance(s, K.KCall):
                found.setdefault(s.fn, []).append((caller, in_loop))
            for inner in bodies(s):
                visit(inner, caller, in_loop or isinstance(s, K.KWhile))

    for f in prog.functions:
        visit(f.body, f.name, False)
    return found


def once_per_launch(prog: K.KProgram) -> set[str]:
    """The functions each unit runs at most once per launch: the kernel, and a function
    whose only call site is outside any loop of such a function."""
    calls = _calls(prog)
    kernel = next(f.name for f in prog.functions if f.is_kernel)
    once: set[str] = {kernel}

    def is_once(name: str, seen: frozenset[str]) -> bool:
        if name in once:
            return True
        sites = calls.get(name, [])
        if name in seen or len(sites) != 1 or sites[0][1]:
            return False
        if is_once(sites[0][0], seen | {name}):
            once.add(name)
            return True
        return False

    for f in prog.functions:
        is_once(f.name, frozenset())
    return once


class _Placer:
    def __init__(self, prog: K.KProgram) -> None:
        self.blocks, self.threads = prog.blocks, prog.threads
        self.sizes: dict[BaseType, int] = {}

    def stmts(self, body: tuple, repeats: bool) -> tuple:
        return tuple(self.stmt(s, repeats) for s in body)

    def stmt(self, s: K.KStmt, repeats: bool) -> K.KStmt:
        if isinstance(s, K.KGlobalAlloc):
            return self.alloc(s, repeats)
        inner = repeats or isinstance(s, K.KWhile)
        return map_bodies(s, lambda b: self.stmts(b, inner))

    def alloc(self, s: K.KGlobalAlloc, repeats: bool) -> K.KStmt:
        n, persp, scratch = s.size, s.persp, scratch_name(s.elem)
        slot = self.sizes.get(s.elem, 0)
        self.sizes[s.elem] = slot + n * units(persp, self.blocks, self.threads)
        unit = unit_index(persp, self.threads)
        at = K.KRaw(str(slot) if unit == "0" else f"{slot} + {unit} * {n}")
        out: list[K.KStmt] = [
            K.KComment(f"alloc Global {K.CTYPE[s.elem]}[{n}] at {persp}: one per unit, "
                       f"{scratch}[{slot} ..] (S-Alloc-Global)", s.span),
            K.KDecl(s.name + "_len", "const int", K.KConst(n, BaseType.INT), s.span),
            K.KDecl(s.name, K.CTYPE[s.elem] + "*", K.KPtrAdd(K.KVar(scratch), at),
                    s.span)]
        if repeats:
            out += self._fresh(s)
        note("compile:galloc:zeroed between barriers" if repeats
             else "compile:galloc:zeroed by the launch")
        return K.KBlock((*out, *self.stmts(s.body, repeats)), s.span)

    def _fresh(self, s: K.KGlobalAlloc) -> list[K.KStmt]:
        """Zero this dynamic instance's array: every earlier use by the unit is over
        (barrier), the unit zeroes it, and the zeros are seen (barrier)."""
        persp, n = s.persp, s.size
        if persp.level == Level.THREAD:
            start, stride = f"(int)threadIdx.x % {persp.n}", persp.n
        elif persp.n == 1 and (persp.level == Level.BLOCK or self.blocks == 1):
            start, stride = "(int)threadIdx.x", self.threads
        else:
            raise CompileError(f"unsupported: an `alloc in Global` at {persp} met more "
                               "than once needs a barrier among blocks", span=s.span)
        return [K.KBarrier(persp, K.KPerspId(), f"alloc Global {s.name} (pinned)",
                           s.span),
                K.KPrim(f"for (int gs_i = {start}; gs_i < {n}; gs_i += {stride}) "
                        f"{s.name}[gs_i] = 0;", s.span),
                K.KBarrier(persp, K.KPerspId(), f"alloc Global {s.name} zeroed (pinned)",
                           s.span)]


def place_global_allocations(prog: K.KProgram) -> K.KProgram:
    found: list[K.KGlobalAlloc] = []
    for f in prog.functions:
        walk(f.body, lambda s: found.append(s) if isinstance(s, K.KGlobalAlloc) else None)
    if not found:
        return prog
    once = once_per_launch(prog)
    placer = _Placer(prog)
    placed = {f.name: placer.stmts(f.body, f.name not in once) for f in prog.functions}
    scratch = tuple((scratch_name(t), t, n) for t, n in sorted(
        placer.sizes.items(), key=lambda kv: kv[0].value))
    params = tuple(K.KParam(name, K.CTYPE[t] + "*") for name, t, _ in scratch)
    args = tuple(K.KVar(name) for name, _, _ in scratch)
    functions = []
    for f in prog.functions:
        body = _pass_scratch(placed[f.name], args)
        if f.is_kernel:
            functions.append(replace(f, params=f.params + params, body=body))
        else:
            cut = len(f.params) - TRAILING_PARAMS
            functions.append(replace(f, params=f.params[:cut] + params
                                     + f.params[cut:], body=body))
    return replace(prog, functions=tuple(functions), scratch=scratch)


def _pass_scratch(body: tuple, args: tuple[K.KExpr, ...]) -> tuple:
    """Every call passes the scratch arrays on, before the trailing (p, block, smem)."""
    out = []
    for s in body:
        if isinstance(s, K.KCall):
            cut = len(s.args) - TRAILING_PARAMS
            s = replace(s, args=s.args[:cut] + args + s.args[cut:])
        out.append(map_bodies(s, lambda b: _pass_scratch(b, args)))
    return tuple(out)
