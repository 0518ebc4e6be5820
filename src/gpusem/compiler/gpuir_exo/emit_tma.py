"""GPU IR's TMA instructions in Exo-GPU's form (issue 26, item 2): the subset where a
GPU IR TMA load, store or reduction means what an Exo instruction means, on pldi26.

GPU IR's `Sm90_tma_load_2d_f32(dst, src) >> z`, `Sm90_tma_store_2d_f32(dst, src)` and
`Sm90_tma_reduce_add_2d_f32(dst, src)` copy (or add) a 2-D box between a global tensor
and a shared tile, issued by one thread. Exo-GPU's counterparts (pldi26
`platforms/Sm90.py`) are `Sm90_copy_tensor_to_smem_{linear,swizzled}_2f32`,
`Sm90_copy_tensor_to_gmem_{linear,swizzled}_2f32` and
`Sm90_reduce_tensor_to_gmem_{linear,swizzled}_2f32(dst, src, size0=, size1=)`, whose
behaviour is the same element-wise loop over the box. They differ in form only where
the emitter can rewrite exactly, and everything else stays `Unexpressible`:

  - the global side is a window of an `Sm90_tensorMap(swizzle, box0, box1)` special
    window, made on the host (a CUtensorMap); the emitter hoists one
    `P_tmaI = P[:, :] @ Sm90_tensorMap(swizzle, m, n)` per (parameter, swizzle, box)
    to the top of the proc and indexes it as GPU IR indexes the parameter. A GPU IR
    tensor-map window statement `w = P[..] @ Sm90_tensorMap(..)` is folded into the
    calls that use it whole; a window of such a window is not mapped;
  - the shared side must be a dense `m x n` tile (a box is copied into consecutive
    rows, Exo asserts `stride(dst, 0) == size1`), in `CudaSmemLinear` (swizzle 0) or
    `Sm90_SmemSwizzled(sw)`; Exo's swizzled TMA needs the box's row to be exactly
    the swizzle width (`n * 4 == sw`) and `m % 8 == 0`, and the tensor map's swizzle
    to be the tile's (a map of another swizzle writes another layout: the meaning
    would differ, so it is refused, not emitted). Scalar code reads a swizzled tile
    through Exo's `swizzle_get`, so both sides index the tile logically;
  - Exo's TMA is a warp instruction (`coll_unit = cuda_warp`, one lane elected),
    GPU IR's a thread one: a `for t in cuda_threads(0, 1, unit=cuda_thread)` loop at
    CTA level whose body is TMA calls and commit-group Arrive/Await only (no other
    effect that 32 threads would repeat, no use of `t`) is emitted as
    `with CudaWarps(0, 1):`. The memory effects are the same (one copy); the
    synchronisation each side checks on its own terms;
  - a reduction adds each source cell into its destination cell once; where several
    reductions hit one cell their float order is the hardware's, not the sequential
    reading's (the generator's reductions hit disjoint tiles).

endgame's TMA (`Sm90_tma_load_2d` ..., ring-buffered mbarriers, its own tensor maps)
is not mapped: on that dialect every TMA call and tensor-map window stays
`Unexpressible`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import affine
from gpusem.calculus.gpuir.printer import print_dexpr, print_stmt, print_unit
from gpusem.calculus.gpuir.walk import walk

# GPU IR instruction -> (Exo instruction stem, index of the global-memory argument).
TMA_INSTRS: dict[str, tuple[str, int]] = {
    "Sm90_tma_load_2d_f32": ("Sm90_copy_tensor_to_smem_{}_2f32", 1),
    "Sm90_tma_store_2d_f32": ("Sm90_copy_tensor_to_gmem_{}_2f32", 0),
    "Sm90_tma_reduce_add_2d_f32": ("Sm90_reduce_tensor_to_gmem_{}_2f32", 0),
}
# What a one-thread TMA loop may hold besides TMA calls (see the module docstring).
_WARP_SAFE = (A.Arrive, A.Await)


class TmaRefused(Exception):
    """Why one TMA construct has no exact Exo counterpart (the emitter turns it into
    `Unexpressible` with the statement's span)."""


@dataclass(frozen=True)
class TensorMap:
    """One hoisted `name = param[:, :] @ Sm90_tensorMap(swizzle, *box)`."""

    name: str
    param: str
    swizzle: int
    box: tuple[int, int]

    def line(self) -> str:
        return (f"{self.name} = {self.param}[:, :] @ Sm90_tensorMap({self.swizzle}, "
                f"{self.box[0]}, {self.box[1]})")


class TmaPlan:
    """The tensor maps a proc's TMA calls need and each call's Exo text."""

    def __init__(self, proc: A.Proc):
        self.params = {p.name: p for p in proc.data_params}
        self.allocs = {s.name: s for s in walk(proc.body) if isinstance(s, A.Alloc)}
        self.windows = {s.name: s for s in walk(proc.body)
                        if isinstance(s, A.WindowStmt) and s.mem.name == "Sm90_tensorMap"}
        self.maps: dict[tuple[str, int, tuple[int, int]], TensorMap] = {}
        self.calls: dict[int, str] = {}  # id(InstrCall) -> its Exo text
        self.errors: dict[int, str] = {}  # id(stmt) -> why it is refused
        for s in walk(proc.body):
            if isinstance(s, A.InstrCall) and s.instr in TMA_INSTRS:
                try:
                    self.calls[id(s)] = self._call(s)
                except TmaRefused as e:
                    self.errors[id(s)] = str(e)

    def hoisted(self) -> list[str]:
        return [m.line() for m in self.maps.values()]

    # ------------------------------------------------------------------- calls
    def _call(self, s: A.InstrCall) -> str:
        stem, gi = TMA_INSTRS[s.instr]
        g, sm = s.args[gi], s.args[1 - gi]
        if not isinstance(g, A.DRead) or not isinstance(sm, A.DRead):
            raise TmaRefused("a TMA argument that is not a window")
        tile_sw, box = self._smem(sm)
        param, coords, map_sw = self._gmem(g, box)
        if map_sw is not None and map_sw != tile_sw:
            raise TmaRefused(f"a Sm90_tensorMap of swizzle {map_sw} on a tile of "
                             f"swizzle {tile_sw} (another SMEM layout)")
        if tile_sw and (box[1] * 4 != tile_sw or box[0] % 8):
            raise TmaRefused(f"a swizzled TMA box {box[0]} x {box[1]} (Exo needs "
                             f"rows of exactly {tile_sw} bytes and a multiple of 8 rows)")
        tmap = self._map(param, tile_sw, box)
        gexo = print_dexpr(A.DRead(tmap.name, coords))
        sexo = print_dexpr(sm)
        dst, src = (sexo, gexo) if gi == 1 else (gexo, sexo)
        kind = "swizzled" if tile_sw else "linear"
        return (f"{stem.format(kind)}({dst}, {src}, size0={box[0]}, "
                f"size1={box[1]})")

    def _map(self, param: str, sw: int, box: tuple[int, int]) -> TensorMap:
        key = (param, sw, box)
        if key not in self.maps:
            self.maps[key] = TensorMap(f"{param}_tma{len(self.maps)}", param, sw, box)
        return self.maps[key]

    def _smem(self, w: A.DRead) -> tuple[int, tuple[int, int]]:
        """The shared tile's swizzle and its (dense) box."""
        a = self.allocs.get(w.name)
        if a is None:
            raise TmaRefused(f"a TMA tile {w.name} that is not a local allocation")
        m = a.mem
        if m.name == "CudaSmemLinear":
            sw = 0
        elif m.name == "Sm90_SmemSwizzled":
            sw = m.args[0]
        else:
            raise TmaRefused(f"a TMA tile in {m.name}")
        dims = [_const(c) for c in a.shape]
        coords = w.coords or tuple(A.WInterval(None, None) for _ in dims)
        if len(dims) < 2 or len(coords) != len(dims) or None in dims[-2:]:
            raise TmaRefused("a TMA tile that is not a dense 2-D box of constant size")
        if not all(isinstance(c, A.WPoint) for c in coords[:-2]) or not all(
                _whole(c, d) for c, d in zip(coords[-2:], dims[-2:], strict=True)):
            raise TmaRefused("a TMA tile window that is not a dense box (Exo copies "
                             "a box into consecutive rows)")
        return sw, (int(dims[-2]), int(dims[-1]))  # type: ignore[arg-type]

    def _gmem(self, w: A.DRead, box: tuple[int, int]
              ) -> tuple[str, tuple[A.WCoord, ...], int | None]:
        """The global tensor, the box's coordinates in it, and the swizzle of the
        GPU IR tensor map it goes through (None: the call names the tensor)."""
        sw = None
        if w.name in self.windows:
            ws = self.windows[w.name]
            if tuple(ws.mem.args[1:]) != box:
                raise TmaRefused(f"a Sm90_tensorMap box {ws.mem.args[1:]} that is not "
                                 f"the tile's {box}")
            whole = all(isinstance(c, A.WInterval) and c.lo is None and c.hi is None
                        for c in ws.source.coords)
            if w.coords and not whole:  # offsets would compose: not written
                raise TmaRefused("a window of a Sm90_tensorMap window of a part of "
                                 "a tensor")
            sw = ws.mem.args[0]
            w = A.DRead(ws.source.name, w.coords or ws.source.coords)
        p = self.params.get(w.name)
        if p is None or p.mem.name != "CudaGmemLinear" or len(p.shape) != 2:
            raise TmaRefused(f"a TMA on {w.name}, not a 2-D CudaGmemLinear parameter")
        coords = w.coords or (A.WInterval(None, None), A.WInterval(None, None))
        if len(coords) != 2 or not all(isinstance(c, A.WInterval) for c in coords):
            raise TmaRefused("a TMA box with a point coordinate")
        return w.name, coords, sw


def _one_thread(s: A.For) -> bool:
    return (s.mode is A.LoopMode.CUDA_THREADS and s.unit is not None
            and print_unit(s.unit) == "cuda_thread" and _const(s.lo) == 0
            and _const(s.hi) == 1)


def _issues_tma(s: A.For) -> bool:
    return _one_thread(s) and any(isinstance(x, A.InstrCall) and x.instr in TMA_INSTRS
                                  for x in s.body)


def warp_barriers(proc: A.Proc) -> frozenset[str]:
    """The barriers the TMA-issuing one-thread loops arrive on or await: a later
    one-thread loop that only waits on them (a store's commit group) must be the
    same warp in Exo, whose Arrive and Await need one collective tiling."""
    out: set[str] = set()
    for s in walk(proc.body):
        if isinstance(s, A.For) and _issues_tma(s):
            for x in s.body:
                if isinstance(x, A.Arrive):
                    out.update(z.name for z in x.barriers)
                elif isinstance(x, A.Await):
                    out.add(x.barrier.name)
    return frozenset(out)


def warp_issued(s: A.For, barriers: frozenset[str]) -> bool:
    """A one-thread loop emitted as `with CudaWarps(0, 1):`: it issues TMA, or it
    only arrives on and awaits barriers of loops that do (`barriers`)."""
    if _issues_tma(s):
        return True
    return _one_thread(s) and bool(s.body) and all(
        (isinstance(x, A.Await) and x.barrier.name in barriers)
        or (isinstance(x, A.Arrive) and {z.name for z in x.barriers} <= barriers)
        for x in s.body)


def warp_body_refusal(s: A.For) -> str | None:
    """Why the body of a TMA-issuing one-thread loop cannot run as a warp (None: it
    can)."""
    for x in s.body:
        if isinstance(x, A.WindowStmt) and x.mem.name == "Sm90_tensorMap":
            continue  # folded into the calls: emits nothing
        if not (isinstance(x, _WARP_SAFE) or (isinstance(x, A.InstrCall)
                                             and x.instr in TMA_INSTRS)):
            return ("a one-thread TMA loop with other statements (a warp would "
                    "repeat them)")
    if _uses(s.body, s.var):
        return "a one-thread TMA loop that uses its thread index"
    return None


def _uses(body: tuple[A.Stmt, ...], var: str) -> bool:
    text = "\n".join(print_stmt(x) for x in body)
    return re.search(rf"\b{re.escape(var)}\b", text) is not None


def _const(c: A.CExpr | None) -> int | None:
    if c is None:
        return None
    a = affine(c)
    return a.const if a is not None and not a.coeffs else None


def _whole(c: A.WCoord, dim: int | None) -> bool:
    if not isinstance(c, A.WInterval):
        return False
    lo = 0 if c.lo is None else _const(c.lo)
    hi = dim if c.hi is None else _const(c.hi)
    return lo == 0 and hi == dim
