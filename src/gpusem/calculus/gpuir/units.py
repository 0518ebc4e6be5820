"""Collective units of Exo-GPU (Figure 11) and the launch configuration of a
`CudaDeviceFunction` (Section 3.4, Figure 3).

A collective unit τ_u is a collective type δ = (domain, box): the domain is how the
threads of one cluster are laid out (a d-level hierarchy; natural thread index
`cluster_ctarank * blockDim + threadIdx.x`, Definition 4.1), the box how many of them
on each level one collective takes. The table below is Figure 11 row by row, as
functions of the launch's `blockDim` and `clusterDim` and the unit's own numbers.

Conventions (paper -> Python):
  τ_u                     -> `UnitExpr` (syntax) / `UnitDef` (this table)
  δ = (domain, box)       -> `CollType(domain, box)`
  n_1 * unit              -> `UnitExpr.count`; n_2, n_3 -> `UnitExpr.args`
  e_w = (r, n, dec, inc)  -> `ast.WarpConfig`
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable

from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir.ast import CudaDeviceFunction, UnitExpr, WarpConfig

WARP = 32
WARPGROUP = 128


@dataclass(frozen=True, slots=True)
class Launch:
    """The thread geometry of one CudaDeviceFunction: blockDim and clusterDim, and the
    warp ranges named by its warp_config (warp indices within a CTA)."""

    block_dim: int
    cluster_dim: int
    warps: tuple[tuple[str, int, int], ...] = ()  # (name, first warp, warp count)

    @property
    def cluster_threads(self) -> int:
        return self.block_dim * self.cluster_dim

    def warp_range(self, name: str) -> tuple[int, int]:
        """[first, first + count) warps of CTA named `name`."""
        for n, first, count in self.warps:
            if n == name:
                return first, count
        raise KeyError(name)


def launch_of(dev: CudaDeviceFunction) -> Launch:
    """blockDim is given, or 32 x the warps named (Section 3.4)."""
    warps, first = [], 0
    for w in dev.warp_config:
        warps.append((w.name, first, w.nwarps))
        first += w.nwarps
    block = dev.block_dim if dev.block_dim is not None else WARP * first
    return Launch(block, dev.cluster_dim, tuple(warps))


def validate_launch(dev: CudaDeviceFunction) -> list[str]:
    """Problems with a launch configuration (empty when it is well formed)."""
    out = []
    names = [w.name for w in dev.warp_config]
    if len(set(names)) != len(names):
        out.append("duplicate warp name in warp_config")
    for w in dev.warp_config:
        out += _warp_problems(w)
    launch = launch_of(dev)
    if launch.block_dim <= 0 or launch.block_dim > 1024:
        out.append(f"blockDim {launch.block_dim} not in 1..1024")
    elif dev.block_dim is not None and launch.block_dim % WARP:
        out.append(f"blockDim {launch.block_dim} is not a multiple of 32")
    if launch.cluster_dim not in range(1, 17):
        out.append(f"clusterDim {launch.cluster_dim} not in 1..16")
    if any(w.setmaxnreg_dec or w.setmaxnreg_inc for w in dev.warp_config):
        out += _setmaxnreg_problems(dev.warp_config, launch.block_dim)
    return out


def _setmaxnreg_problems(config: tuple[WarpConfig, ...], block: int) -> list[str]:
    """PTX's setmaxnreg is executed by all warps of a warpgroup (128 threads) with one
    register count: the block is whole warpgroups and the count changes only at a
    warpgroup boundary. (Found by the Exo differential: Exo-GPU's CudaDeviceFunction
    rejects the rest; errata "setmaxnreg is per warpgroup".)"""
    out = []
    if block % WARPGROUP:
        out.append(f"setmaxnreg needs whole warpgroups: blockDim {block} is not a "
                   f"multiple of {WARPGROUP}")
    first, prev = 0, None
    for w in config:
        reg = (w.setmaxnreg_inc, w.setmaxnreg_dec)
        if prev is not None and reg != prev and first % (WARPGROUP // WARP):
            out.append(f"warp config {w.name}: setmaxnreg must be uniform within a "
                       f"warpgroup (it starts at warp {first}, inside one)")
        prev, first = reg, first + w.nwarps
    return out


def _warp_problems(w: WarpConfig) -> list[str]:
    out = []
    if w.nwarps <= 0:
        out.append(f"warp config {w.name}: warp count must be positive")
    for reg in (w.setmaxnreg_dec, w.setmaxnreg_inc):
        if reg and not (24 <= reg <= 256 and reg % 8 == 0):
            out.append(f"warp config {w.name}: setmaxnreg {reg} not a multiple of 8 "
                       "in 24..256")
    if w.setmaxnreg_dec and w.setmaxnreg_inc:
        out.append(f"warp config {w.name}: both setmaxnreg.dec and .inc given")
    return out


# -------------------------------------------------------------------- Figure 11


@dataclass(frozen=True, slots=True)
class CollType:
    """δ = (domain, box); a `None` box coordinate is Figure 11's wildcard `_` (the
    agnostic units: any extent on that dimension)."""

    domain: tuple[int, ...]
    box: tuple[int | None, ...]

    @property
    def size(self) -> int:
        if any(b is None for b in self.box):
            raise ValueError("an agnostic unit has no fixed size")
        return prod(b for b in self.box if b is not None)


Geometry = Callable[[int, int, int, tuple[int, ...]], CollType]  # (B, C, n1, args)


@dataclass(frozen=True, slots=True)
class UnitDef:
    """One row of Figure 11. `nargs` is how many parenthesised numbers it takes,
    `counted` whether it takes the `n_1 *` prefix; `within_cta` whether its domain is
    one CTA (collectives tile inside each CTA) rather than the whole cluster."""

    name: str
    nargs: int
    counted: bool
    within_cta: bool
    geometry: Geometry


def _u(name: str, nargs: int, counted: bool, within_cta: bool,
       geometry: Geometry) -> UnitDef:
    return UnitDef(name, nargs, counted, within_cta, geometry)


UNITS: dict[str, UnitDef] = {u.name: u for u in (
    _u("standalone_thread", 0, False, True, lambda B, C, n, a: CollType((1,), (1,))),
    _u("cuda_thread", 0, True, True, lambda B, C, n, a: CollType((B,), (n,))),
    _u("cuda_quadpair", 0, False, True,
       lambda B, C, n, a: CollType((B // 16, 16), (2, 4))),
    _u("cuda_warp", 0, True, True, lambda B, C, n, a: CollType((B,), (n * WARP,))),
    _u("cuda_warpgroup", 0, True, True,
       lambda B, C, n, a: CollType((B,), (n * WARPGROUP,))),
    _u("cuda_threads_strided", 2, True, True,
       lambda B, C, n, a: CollType((B // a[1], a[1]), (n, a[0]))),
    _u("cuda_warp_in_cluster", 0, True, False,
       lambda B, C, n, a: CollType((C, B), (n, WARP))),
    _u("cuda_cta_in_cluster", 0, True, False,
       lambda B, C, n, a: CollType((C * B,), (n * B,))),
    _u("cuda_cluster", 0, False, False,
       lambda B, C, n, a: CollType((C * B,), (C * B,))),
    _u("cuda_cta_in_cluster_strided", 1, True, False,
       lambda B, C, n, a: CollType((C // a[0], a[0], B), (n, 1, B))),
    _u("cuda_warp_in_cluster_strided", 1, True, False,
       lambda B, C, n, a: CollType((C // a[0], a[0], B), (n, 1, WARP))),
    # Note: the agnostic units have a wildcard box (`_`): they describe what an
    # instruction accepts (any collective inside one CTA; any number of whole
    # CTAs), not a loop tiling (errata "Collective tilings").
    _u("cuda_agnostic_sub_cta", 0, False, False,
       lambda B, C, n, a: CollType((C, B), (1, None))),
    _u("cuda_agnostic_intact_cta", 0, False, False,
       lambda B, C, n, a: CollType((C, B), (None, B))),
)}


def unit_def(u: UnitExpr) -> UnitDef:
    d = UNITS.get(u.name)
    if d is None:
        raise BadInput(f"unknown collective unit: {u.name} (known: "
                       f"{', '.join(UNITS)})", span=u.span)
    if len(u.args) != d.nargs:
        raise BadInput(f"bad unit: {u.name} takes {d.nargs} argument(s)", span=u.span)
    if u.count != 1 and not d.counted:
        raise BadInput(f"bad unit: {u.name} takes no n * prefix", span=u.span)
    if u.count <= 0 or any(a <= 0 for a in u.args):
        raise BadInput("bad unit: counts must be positive", span=u.span)
    return d


def coll_type(u: UnitExpr, launch: Launch) -> CollType:
    """δ of unit `u` under `launch` (Figure 11)."""
    return unit_def(u).geometry(launch.block_dim, launch.cluster_dim, u.count, u.args)

