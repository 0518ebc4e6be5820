"""GPU IR's wgmma in Exo-GPU's form (issue 26, item 2): the subset where gpusem's
`Sm90_wgmma_*_f32` instructions mean what pldi26's `Sm90_mma_async_tf32`,
`Sm90_zero_scale_d_f32` and `Sm90_mma_store_d_row_major_tf32` mean.

  - `Sm90_wgmma_m64nNk8_f32(d, a, b)`: D[64 x n] += A[64 x 8] . B[n x 8]^T on both
    sides; Exo's operands must be `[M, 8]` / `[N, 8]` windows of a
    `Sm90_SmemSwizzled(128)` tile whose rows are 32 floats (`stride(a, 0) == 32`:
    the 128-byte swizzle atom a TMA box of 32 columns writes), starting at a row that
    is a multiple of 8 (the atom's 8 rows) and a column that is a multiple of 8 (the
    K step inside the atom); anything else is refused, since Exo would build a
    matrix descriptor of another layout. Emitted as
    `Sm90_mma_async_tf32(d, a, b, M=64, N=n)`.
  - `Sm90_wgmma_zero_d_f32(d)`: GPU IR zeroes D at once, Exo's
    `Sm90_zero_scale_d_f32` only tells the *next* mma to ignore D. The two agree when
    that next access is an mma, so a zero maps only where the statements after it
    in its body are Fences and then an mma on the same window, directly or as the
    first access of a seq loop that runs at least once.
  - `Sm90_wgmma_store_d_f32(dst, d)`: Exo's store writes global memory only
    (`CudaDeviceVisibleLinear`), with bounds `M_end`, `N_end` (here the whole tile):
    `Sm90_mma_store_d_row_major_tf32(64, n, dst, d, M=64, N=n)` for a 2-D
    `CudaGmemLinear` parameter; a shared-memory destination is refused.

Values: Exo's wgmma rounds A and B to tf32 and accumulates in the tensor core's
order, gpusem's reading in float32 one k at a time; the two agree bit for bit only
on operands whose products and partial sums are exact in both (small integers), so
the compile property draws such inputs for programs that use wgmma
(`fuzz/exo/compile_property.exact_mma_inputs`). endgame's MMAs (`Sm90_tk_mma_*`,
ThunderKittens tiles) are not mapped.
"""

from __future__ import annotations

from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import affine
from gpusem.calculus.gpuir.printer import print_dexpr

WGMMA_INSTRS = frozenset({"Sm90_wgmma_m64nNk8_f32", "Sm90_wgmma_zero_d_f32",
                          "Sm90_wgmma_store_d_f32"})
MMA = "Sm90_wgmma_m64nNk8_f32"


class WgmmaRefused(Exception):
    """Why one wgmma call has no exact Exo counterpart."""


def wgmma_text(s: A.InstrCall, allocs: dict[str, A.Alloc],
               params: dict[str, A.DataParam]) -> str:
    """The Exo call for `s` (WgmmaRefused when its form has no exact counterpart;
    the zero's context is checked by `zero_feeds_mma`)."""
    if not all(isinstance(x, A.DRead) for x in s.args):
        raise WgmmaRefused("a wgmma argument that is not a window")
    args: list[A.DRead] = [x for x in s.args if isinstance(x, A.DRead)]
    d = args[0] if s.instr != "Sm90_wgmma_store_d_f32" else args[1]
    n = _accumulator(d, allocs)
    sizes = f"M=64, N={n}"
    if s.instr == "Sm90_wgmma_zero_d_f32":
        return f"Sm90_zero_scale_d_f32({print_dexpr(d)}, {sizes})"
    if s.instr == MMA:
        for w, rows in ((args[1], 64), (args[2], n)):
            _operand(w, rows, allocs)
        return (f"Sm90_mma_async_tf32({print_dexpr(d)}, {print_dexpr(args[1])}, "
                f"{print_dexpr(args[2])}, {sizes})")
    dst = args[0]
    p = params.get(dst.name)
    if p is None or p.mem.name != "CudaGmemLinear" or len(p.shape) != 2:
        raise WgmmaRefused("a wgmma store not into a 2-D CudaGmemLinear parameter "
                           "(Exo's Sm90_mma_store_d_* write global memory only)")
    return (f"Sm90_mma_store_d_row_major_tf32(64, {n}, {print_dexpr(dst)}, "
            f"{print_dexpr(d)}, {sizes})")


def zero_feeds_mma(body: tuple[A.Stmt, ...], i: int) -> bool:
    """The zero `body[i]` is followed, before anything else touches its window, by
    an mma on that window (see the module docstring)."""
    zero = body[i]
    assert isinstance(zero, A.InstrCall) and isinstance(zero.args[0], A.DRead)
    window = print_dexpr(zero.args[0])
    return _first_is_mma(body[i + 1:], window)


def _first_is_mma(body: tuple[A.Stmt, ...], window: str) -> bool:
    for s in body:
        match s:
            case A.Fence():
                continue
            case A.InstrCall(instr=g, args=args):
                return (g == MMA and isinstance(args[0], A.DRead)
                        and print_dexpr(args[0]) == window)
            case A.For(mode=A.LoopMode.SEQ, lo=lo, hi=hi, body=b):
                lo_c, hi_c = _const(lo), _const(hi)
                return (lo_c is not None and hi_c is not None and hi_c > lo_c
                        and _first_is_mma(b, window))
            case _:
                return False
    return False


def _accumulator(d: A.DRead, allocs: dict[str, A.Alloc]) -> int:
    a = allocs.get(d.name)
    if a is None or a.mem.name != "Sm90_RmemMatrixD" or a.mem.args[0] != 64:
        raise WgmmaRefused(f"a wgmma accumulator {d.name} not allocated in "
                           "Sm90_RmemMatrixD(64, n)")
    n = a.mem.args[1]
    _dense(d, a, (64, n))
    return n


def _operand(w: A.DRead, rows: int, allocs: dict[str, A.Alloc]) -> None:
    a = allocs.get(w.name)
    if (a is None or a.mem.name != "Sm90_SmemSwizzled" or a.mem.args != (128,)
            or _const(a.shape[-1]) != 32):
        raise WgmmaRefused(f"a wgmma operand {w.name} not in a Sm90_SmemSwizzled(128) "
                           "tile of rows of 32 floats (Exo's stride(a, 0) == 32)")
    cs = w.coords
    if (len(cs) != len(a.shape) or not all(isinstance(c, A.WPoint) for c in cs[:-2])
            or not all(isinstance(c, A.WInterval) for c in cs[-2:])):
        raise WgmmaRefused("a wgmma operand window that is not a 2-D box")
    for c, extent, dim in ((cs[-2], rows, a.shape[-2]), (cs[-1], 8, a.shape[-1])):
        assert isinstance(c, A.WInterval)
        lo = affine(c.lo) if c.lo is not None else affine(A.CInt(0))
        hi = affine(c.hi) if c.hi is not None else affine(dim)
        if lo is None or hi is None or lo.coeffs != hi.coeffs or (
                hi.const - lo.const != extent):
            raise WgmmaRefused(f"a wgmma operand box that is not {rows} x 8")
        if lo.const % 8 or any(k % 8 for _, k in lo.coeffs):
            raise WgmmaRefused("a wgmma operand box not aligned to the swizzle "
                               "atom (rows and columns in steps of 8)")


def _dense(w: A.DRead, a: A.Alloc, tile: tuple[int, int]) -> None:
    cs = w.coords
    if not cs and len(a.shape) == 2:
        return
    ok = (len(cs) == len(a.shape) and all(isinstance(c, A.WPoint) for c in cs[:-2])
          and all(isinstance(c, A.WInterval) and c.lo is None and c.hi is None
                  for c in cs[-2:]))
    if not ok or tuple(_const(x) for x in a.shape[-2:]) != tile:
        raise WgmmaRefused(f"a wgmma accumulator window that is not a whole {tile} "
                           "tile")


def _const(c: A.CExpr) -> int | None:
    a = affine(c)
    return a.const if a is not None and not a.coeffs else None
