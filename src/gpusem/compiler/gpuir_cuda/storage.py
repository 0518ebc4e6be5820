"""Where each GPU IR variable lives in the generated CUDA (Exo-GPU Section 4.1's
distributed memories, made concrete).

A variable allocated by a collective larger than its owner (δ_{π_d}: a thread for
CudaRmem, a warpgroup for Sm90_RmemMatrixD, a CTA for shared memory and mbarriers) is
distributed: its leading `ndist` dimensions select the owner, and the distributed
memory analysis has checked that every access indexes them with the owner's own
iterators. Each owner therefore stores only the remaining dimensions, and an access
drops its leading `ndist` coordinates.

Note: the analysis does not export the number of distributed dimensions; we take the
shortest prefix of the shape whose extents multiply to the number of owners in the
allocating collective (4 x 32 lanes of `part: f32[4, 32]` in a 128-thread CTA).
When no prefix fits, a CudaRmem array is replicated whole in every thread (each thread
uses only its own cells, so this is still correct, only larger).

Conventions: π_d -> `Storage.space` ("global" | "shared" | "local"); δ_{π_d} ->
`owner_threads`.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir import memtypes
from gpusem.compiler.gpuir_cuda.errors import unsupported
from gpusem.typing_rules.gpuir.collective import ThreadMapping

OWNER_THREADS = {"thread": 1, "warp": 32, "warpgroup": 128}


@dataclass(frozen=True, slots=True)
class Storage:
    name: str
    space: str                   # "global" | "shared" | "local"
    dtype: A.DataType
    shape: tuple[int, ...]       # the GPU IR shape
    ndist: int                   # leading dimensions selecting the owner
    tile: tuple[int, ...] | None = None  # matrix-register tile (trailing dims)
    tile_share: int = 1          # tile elements each owner thread holds
    pad: int = 0                 # elements after each innermost row (`row_pad`)

    @property
    def local_shape(self) -> tuple[int, ...]:
        inner = self.shape[self.ndist:]
        return inner[: len(inner) - len(self.tile)] if self.tile else inner

    @property
    def padded_shape(self) -> tuple[int, ...]:
        shape = self.local_shape
        return (*shape[:-1], shape[-1] + self.pad) if self.pad else shape

    @property
    def count(self) -> int:
        """Elements of storage per owner (per thread, per CTA, or the whole array)."""
        return prod(self.padded_shape) * (self.tile_share if self.tile else 1)

    def strides(self) -> tuple[int, ...]:
        out, acc = [], self.tile_share if self.tile else 1
        for n in reversed(self.padded_shape):
            out.append(acc)
            acc *= n
        return tuple(reversed(out))


# Shared memory has 32 banks of 4 bytes: rows of a multiple of 128 bytes start in the
# same bank, so threads reading one column of different rows conflict (the exact
# wgmma lowering's B operand: 4 rows 2 apart in each warp, a 4-way conflict). A
# swizzled layout is what real wgmma and TMA use against it; the exact lowerings
# (instr.py) move rows with bulk copies, which cannot permute 16-byte pieces inside
# a row, so a swizzled tile is stored with its rows padded by 16 bytes instead:
# row r starts r 16-byte bank groups further. Only where the kernel still fits the
# shared memory a block can have (pipeline.lower); the layout of shared memory is
# the compiler's, never the program's, so the results are the same bits.
ROW_PAD_BYTES = 16


def row_pad(dtype: A.DataType, shape: tuple[int, ...], mem: A.MemExpr) -> int:
    """Elements to pad each innermost row of a shared tile with (0: none)."""
    if memtypes.data_memory(mem).name != "Sm90_SmemSwizzled" or not shape \
            or dtype not in (A.DataType.F32, A.DataType.I32):
        return 0
    return ROW_PAD_BYTES // 4 if (4 * shape[-1]) % 128 == 0 else 0


@dataclass(frozen=True, slots=True)
class BarrierStorage:
    name: str
    kind: str                    # "mbarrier" | "commit" | "cluster"
    shape: tuple[int, ...]
    ndist: int

    @property
    def cells(self) -> int:
        return prod(self.shape[self.ndist:])

    def strides(self) -> tuple[int, ...]:
        out, acc = [], 1
        for n in reversed(self.shape[self.ndist:]):
            out.append(acc)
            acc *= n
        return tuple(reversed(out))


BARRIER_KINDS = {"CudaMbarrier": "mbarrier", "CudaCommitGroup": "commit",
                 "CudaClusterSync": "cluster"}


def owners_in(mapping: ThreadMapping, owner_threads: int) -> int:
    return max(1, mapping.size // owner_threads)


def leading_dims(shape: tuple[int, ...], owners: int) -> int | None:
    """The shortest prefix of `shape` with `owners` cells (0 for one owner)."""
    if owners == 1:
        return 0
    for k in range(1, len(shape) + 1):
        if prod(shape[:k]) == owners:
            return k
    return None


def data_storage(name: str, dtype: A.DataType, shape: tuple[int, ...],
                 mem: A.MemExpr, mapping: ThreadMapping | None, span,
                 ndist: int | None = None, pad_rows: bool = False) -> Storage:
    """`ndist`: the distributed dimensions the memory analysis found, used when no
    prefix of the shape has as many cells as the allocating collective has owners
    (`D: f32[2, 2, 64, 256]` allocated by a whole cluster of 2 CTAs x 3 warpgroups
    and used by the 2 x 2 consumer warpgroups only). `pad_rows`: a swizzled
    shared tile's rows padded (`row_pad`)."""
    m = memtypes.data_memory(mem)
    if m.physical == "gmem":
        return Storage(name, "global", dtype, shape, 0)
    if mapping is None:
        raise unsupported(f"{name} @ {m.name} outside device code", span)
    block = mapping.launch.block_dim
    if m.physical == "smem":
        k = leading_dims(shape, owners_in(mapping, block))
        if k is None:
            raise unsupported(f"cannot distribute {name}{list(shape)} over the CTAs "
                              "of its allocating collective", span)
        pad = row_pad(dtype, shape[k:], mem) if pad_rows else 0
        return Storage(name, "shared", dtype, shape, k, pad=pad)
    if m.physical == "rmem":
        return _register_storage(name, dtype, shape, mem, mapping, m.owner, span,
                                 ndist)
    raise unsupported(f"{name} @ {m.name} ({m.physical} memory)", span)


def _register_storage(name, dtype, shape, mem: A.MemExpr, mapping, owner: str, span,
                      ndist: int | None):
    g = OWNER_THREADS.get(owner)
    if g is None:
        raise unsupported(f"register memory owned by a {owner}", span)
    k = leading_dims(shape, owners_in(mapping, g))
    tile = memtypes.matrix_tile(mem)
    if tile is not None and ndist is not None and ndist <= len(shape) - len(tile):
        # some owners of the allocating collective never use it (the producer and
        # idle warpgroups of a warp-specialised CTA): each user holds its own
        # tiles. And the analysis's n* over the prefix guess here too: `D: f32[1,
        # 2, 64, 128]` of one consumer warpgroup in a CTA of 2 has a prefix of 2
        # cells by accident, which made its two tiles `D[wg, r]` (r a seq loop)
        # one (results/cypress/gemm_speed.md)
        k = ndist
    if tile is None:
        if ndist is not None:
            # Note: the analysis's n* over the prefix guess: a prefix can have as
            # many cells as there are owners by accident (`acc: f32[2, 16]` of 2
            # threads in a 32-thread CTA, 16 cells each), and lose the cells it
            # takes for owners (errata "Cypress lowering to GPU IR")
            k = ndist
        return Storage(name, "local", dtype, shape, 0 if k is None else k)
    if k is None or tuple(shape[len(shape) - len(tile):]) != tile:
        raise unsupported(f"matrix register {name}{list(shape)} @ {mem.name}", span)
    if prod(tile) % g:
        raise unsupported(f"matrix tile {tile} over {g} threads", span)
    return Storage(name, "local", dtype, shape, k, tile, prod(tile) // g)


def barrier_storage(name: str, shape: tuple[int, ...], mem: A.MemExpr,
                    mapping: ThreadMapping, span) -> BarrierStorage:
    kind = BARRIER_KINDS.get(mem.name)
    if kind is None:
        raise unsupported(f"barrier type {mem.name}", span)
    if kind != "mbarrier":
        return BarrierStorage(name, kind, shape, 0)
    k = leading_dims(shape, owners_in(mapping, mapping.launch.block_dim))
    if k is None:
        raise unsupported(f"cannot distribute mbarriers {name}{list(shape)} over "
                          "CTAs", span)
    return BarrierStorage(name, kind, shape, k)
