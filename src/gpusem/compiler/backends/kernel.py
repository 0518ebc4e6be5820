"""The Python types every backend shares: what to launch, with what, and what came back.

A `KernelSpec` names one `extern "C" __global__` kernel in a `.cu` text that includes
`gpusem_rt.cuh`, its launch shape and its typed parameters. A `Job` is one launch of a
spec on concrete inputs under one schedule seed; a backend turns a list of jobs into a
list of `Result`s, one per job, in order. Backends never raise for a bad kernel: a
kernel that does not build, traps, deadlocks, hangs, crashes or needs PTX the backend
cannot run is a `Result` of that kind, so a fuzzing campaign goes on. Malformed jobs
(unknown parameter, wrong dtype or size) raise `BadInput` before anything runs.

Every pointer parameter is in-out: its input array (zeros when absent) is copied to the
device, and its final contents come back in `Result.outputs[name]` (for "ok"; on the
cpu backend also for "runtime_error", "deadlock" and "timeout", as the memory stood
when the launch stopped; otherwise empty).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
from gpusem.calculus.errors import BadInput

# dtype name -> C type spelled in generated launchers (the same on both backends).
C_TYPES: dict[str, str] = {
    "bool": "bool",  # numpy bool_ and C++ bool are both one byte holding 0 or 1
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short",
    "uint16": "unsigned short",
    "int32": "int",
    "uint32": "unsigned int",
    "int64": "long long",
    "uint64": "unsigned long long",
    "float32": "float",
    "float64": "double",
}

RESULT_KINDS = (
    "ok",
    "build_error",
    "runtime_error",
    "deadlock",
    "timeout",
    "unsupported",
    "crash",
)
ResultKind = Literal[
    "ok", "build_error", "runtime_error", "deadlock", "timeout", "unsupported", "crash"
]

Dim3 = tuple[int, int, int]


def _dim3(value: int | tuple[int, ...], what: str) -> Dim3:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or d < 1 for d in dims):
        raise BadInput(
            f"bad launch shape: {what} {value!r} (expected 1-3 positive ints)"
        )
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Param:
    """A kernel parameter: a pointer to `count` elements of `dtype`, or a scalar."""

    name: str
    dtype: str
    pointer: bool
    count: int = 0

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise BadInput(f"bad parameter name: {self.name!r}")
        if self.dtype not in C_TYPES:
            raise BadInput(
                f"unknown dtype: {self.dtype} (expected one of {list(C_TYPES)})"
            )
        if self.pointer and self.count < 1:
            raise BadInput(f"bad element count: {self.name} has {self.count}")

    @property
    def c_type(self) -> str:
        return C_TYPES[self.dtype] + (" *" if self.pointer else "")


def ptr(name: str, dtype: str, count: int) -> Param:
    """A pointer parameter to `count` elements of `dtype` (in-out global memory)."""
    return Param(name, dtype, True, count)


def scalar(name: str, dtype: str) -> Param:
    """A by-value scalar parameter."""
    return Param(name, dtype, False)


@dataclass(frozen=True, slots=True, init=False)
class KernelSpec:
    """One kernel of a `.cu` text: `name` is its `extern "C"` name in `source`."""

    name: str
    source: str
    grid: Dim3
    block: Dim3
    dynamic_smem: int = 0
    params: tuple[Param, ...] = ()
    cluster: Dim3 = (1, 1, 1)

    def __init__(self, name: str, source: str, grid: int | tuple[int, ...],
                 block: int | tuple[int, ...], dynamic_smem: int = 0,
                 params: Iterable[Param] = (),
                 cluster: int | tuple[int, ...] = 1) -> None:
        """`grid`, `block` and `cluster` (thread-block cluster dimensions, as the
        kernel's `__cluster_dims__`; a launch parameter of the cpu harness, a compiled
        attribute on the GPU): 1 to 3 positive ints, an int n meaning (n, 1, 1)."""
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "block", block)
        object.__setattr__(self, "dynamic_smem", dynamic_smem)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "cluster", cluster)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise BadInput(f"bad kernel name: {self.name!r}")
        object.__setattr__(self, "grid", _dim3(self.grid, "grid"))
        object.__setattr__(self, "block", _dim3(self.block, "block"))
        object.__setattr__(self, "cluster", _dim3(self.cluster, "cluster"))
        if any(g % c for g, c in zip(self.grid, self.cluster, strict=True)):
            raise BadInput(f"cluster {self.cluster} does not divide grid {self.grid}")
        object.__setattr__(self, "params", tuple(self.params))
        if self.dynamic_smem < 0:
            raise BadInput(f"bad dynamic shared memory size: {self.dynamic_smem}")
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise BadInput(f"duplicate parameter names in kernel {self.name}: {names}")

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def signature(self) -> str:
        """The C parameter list, e.g. `const float * in, int n` (used by launchers)."""
        return ", ".join(f"{p.c_type} {p.name}" for p in self.params)

    def code_key(self) -> str:
        """A hash of what a build depends on: source, name and parameter types."""
        text = f"{self.name}\0{self.source}\0{self.signature()}"
        return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Job:
    """One launch: a spec, its input arrays / scalar values, and a schedule seed.

    `schedule_seed` picks the cpu harness's fibre order (0 forward, 1 reverse, >= 2
    seeded random); the cuda backend ignores it. `timeout_s` bounds the launch.
    """

    spec: KernelSpec
    inputs: Mapping[str, object] = field(default_factory=dict)
    schedule_seed: int = 0
    timeout_s: float = 10.0


@dataclass(frozen=True, slots=True)
class Result:
    kind: ResultKind
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    message: str = ""
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


class Backend(Protocol):
    name: str

    def run(self, jobs: list[Job]) -> list[Result]: ...


def prepare_args(job: Job) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """Check a job's inputs against its spec: (pointer arrays, scalar values).

    Arrays are fresh C-contiguous copies with the declared dtype and element count;
    absent pointer inputs are zeros; scalars are numpy scalars of the declared dtype.
    """
    spec = job.spec
    known = {p.name for p in spec.params}
    extra = set(job.inputs) - known
    if extra:
        raise BadInput(f"unknown input: {sorted(extra)} for kernel {spec.name}")
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, object] = {}
    for p in spec.params:
        value = job.inputs.get(p.name)
        if p.pointer:
            arrays[p.name] = _array_arg(p, value, spec.name)
        else:
            if value is None:
                raise BadInput(f"missing scalar input: {p.name} for kernel {spec.name}")
            scalars[p.name] = _scalar_arg(p, value, spec.name)
    return arrays, scalars


def _array_arg(p: Param, value: object, kernel: str) -> np.ndarray:
    if value is None:
        return np.zeros(p.count, dtype=p.dtype)
    arr = np.asarray(value)
    if arr.dtype != np.dtype(p.dtype):
        raise BadInput(
            f"dtype mismatch: {kernel}.{p.name} is {p.dtype}, got {arr.dtype}"
        )
    if arr.size != p.count:
        raise BadInput(
            f"size mismatch: {kernel}.{p.name} has {p.count}, got {arr.size}"
        )
    return np.ascontiguousarray(arr.reshape(-1)).copy()


def _scalar_arg(p: Param, value: object, kernel: str) -> object:
    dtype = np.dtype(p.dtype)
    if isinstance(value, np.generic | np.ndarray) and np.asarray(value).dtype != dtype:
        raise BadInput(f"dtype mismatch: {kernel}.{p.name} is {p.dtype}")
    try:
        scalar_value = dtype.type(value)
    except (TypeError, ValueError, OverflowError) as err:
        raise BadInput(f"bad scalar: {kernel}.{p.name}: {err}") from None
    if dtype.kind in "iu" and int(scalar_value) != int(value):  # type: ignore[call-overload]
        raise BadInput(
            f"bad scalar: {kernel}.{p.name} = {value} out of {p.dtype} range"
        )
    return scalar_value
