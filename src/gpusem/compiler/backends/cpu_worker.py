"""The cpu backend's worker process: load a batch library, launch, send the memory back.

Runs in a forked child (cpu.py's `_WorkerHandle`), so that a kernel that segfaults or
spins forever takes only this process down. Protocol over a multiprocessing pipe:
request `(library, symbol, cfg, params, arrays, scalars)`, reply
`(status, message, outputs, elapsed_seconds)` with `status` a `gs::Status` code.
"""

from __future__ import annotations

import ctypes
import mmap
import time
from typing import Any

import numpy as np

PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


class _Guarded:
    """A buffer flush against a PROT_NONE page, another page before it: an access past
    the end (or far before the start) of a kernel's global array faults, and the
    launch ends as a "crash" instead of silently corrupting the worker's heap."""

    def __init__(self, array: np.ndarray) -> None:
        nbytes = max(array.nbytes, 1)
        data_pages = -(-nbytes // PAGE)
        self.map = mmap.mmap(-1, (data_pages + 2) * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        end = base + (data_pages + 1) * PAGE
        # Flush against the guard: aligned to the element size only, so that element n
        # already faults (the harness's vector types need no more alignment than that).
        start = (end - nbytes) & ~(array.dtype.itemsize - 1)
        self.offset = start - base
        self.array = np.frombuffer(
            self.map, dtype=array.dtype, count=array.size, offset=self.offset
        )
        self.array[...] = array
        _libc.mprotect(base, PAGE, 0)
        _libc.mprotect(end, PAGE, 0)
        self.address = start


class _LaunchCfg(ctypes.Structure):
    """Mirror of `gs::LaunchCfg` in simt_harness.h (keep the two in step)."""

    _fields_ = [
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("dyn_smem", ctypes.c_uint),
        ("seed", ctypes.c_ulonglong),
        ("max_switches", ctypes.c_ulonglong),
        ("time_budget_s", ctypes.c_double),
        ("stack_bytes", ctypes.c_uint),
        ("poison", ctypes.c_uint),
        ("cluster", ctypes.c_uint * 3),
    ]


_CTYPES: dict[str, type[ctypes._SimpleCData[Any]]] = {
    "int8": ctypes.c_int8,
    "uint8": ctypes.c_uint8,
    "int16": ctypes.c_int16,
    "uint16": ctypes.c_uint16,
    "int32": ctypes.c_int32,
    "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}

_LAUNCHER = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(_LaunchCfg),
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_char_p,
    ctypes.c_int,
)


def _launcher(cache: dict, library: str, symbol: str):
    if library not in cache:
        cache[library] = ctypes.CDLL(library)
    return _LAUNCHER((symbol, cache[library]))


def launch(cache: dict, request) -> tuple[int, str, dict[str, np.ndarray], float]:
    library, symbol, cfg_tuple, params, arrays, scalars = request
    grid, block, dyn, seed, max_switches, budget, stack, poison, cluster = cfg_tuple
    cfg = _LaunchCfg(
        (ctypes.c_uint * 3)(*grid),
        (ctypes.c_uint * 3)(*block),
        dyn,
        seed,
        max_switches,
        budget,
        stack,
        poison,
        (ctypes.c_uint * 3)(*cluster),
    )
    keep = []  # the ctypes cells the argument vector points into
    guarded = {name: _Guarded(a) for name, a in arrays.items()}
    argv = (ctypes.c_void_p * max(1, len(params)))()
    for k, (name, dtype, pointer) in enumerate(params):
        cell: ctypes._SimpleCData[Any]
        if pointer:
            cell = ctypes.c_void_p(guarded[name].address)
        else:
            cell = _CTYPES[dtype](scalars[name].item())
        keep.append(cell)
        argv[k] = ctypes.addressof(cell)
    msg = ctypes.create_string_buffer(1024)
    fn = _launcher(cache, library, symbol)
    start = time.perf_counter()
    status = fn(ctypes.byref(cfg), argv, msg, len(msg))
    elapsed = time.perf_counter() - start
    outputs = {name: g.array.copy() for name, g in guarded.items()}
    return status, msg.value.decode(errors="replace"), outputs, elapsed


def serve(conn, parent_pid: int | None = None, pdeathsig: bool = False) -> None:
    import faulthandler

    if parent_pid is not None:  # a SIGKILLed campaign leaves no worker behind
        from gpusem.compiler.backends.lifetime import die_with_parent

        die_with_parent(parent_pid, pdeathsig)
    faulthandler.disable()  # a crashing kernel is an expected outcome, not a bug here
    cache: dict = {}
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        try:
            reply = launch(cache, request)
        except Exception as err:  # noqa: BLE001  (a harness bug: report it, keep serving)
            reply = (
                -1,
                f"crash: harness worker error: {type(err).__name__}: {err}",
                {},
                0.0,
            )
        conn.send(reply)
