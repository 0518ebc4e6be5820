"""Synchronisation is an annotation (Section 2.3): removing any one Fence, Arrive or
Await from an accepted example leaves the front end's verdict (collective and
distributed memory analyses: they do not look at synchronisation) and the sequential
reading unchanged. Whether the sync checker then rejects is tests/amir's business."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import eval_c
from gpusem.calculus.gpuir.parser import parse_proc
from gpusem.calculus.gpuir.walk import sub_bodies, walk
from gpusem.interpreter.gpuir.sequential import run_sequential
from gpusem.typing_rules.gpuir.frontend import check_proc

EX = Path(__file__).parents[2] / "examples" / "gpuir"
SMALL = {"N": 512, "T": 1, "M": 8, "K": 64}
SYNC = (A.Fence, A.Arrive, A.Await)


def drop(body: tuple[A.Stmt, ...], target: int, counter: list[int]) -> tuple:
    """`body` without the `target`-th sync statement (pre-order)."""
    out = []
    for s in body:
        if isinstance(s, SYNC):
            counter[0] += 1
            if counter[0] - 1 == target:
                continue
        if sub_bodies(s):
            inner = drop(s.body, target, counter)
            if not inner:  # a block that held only the dropped statement goes too
                continue
            s = dataclasses.replace(s, body=inner)
        out.append(s)
    return tuple(out)


def accepted_examples() -> list[Path]:
    return [p for p in sorted(EX.glob("*.gpuir"))
            if "# expect: accepted" in p.read_text()]


@pytest.mark.parametrize("path", accepted_examples(), ids=lambda p: p.stem)
def test_removing_one_sync_statement(path: Path) -> None:
    proc = parse_proc(path.read_text(), str(path))
    defines = {p.name: SMALL[p.name] for p in proc.ctrl_params}
    if path.stem == "gemm_tiled":
        defines["N"] = 128
    if path.stem == "producer_consumer":  # N / 1024 tasks: N = 512 ran none (the
        defines["N"] = 1024               # Limits check now refuses an empty launch)
    rng = np.random.default_rng(0)
    inputs = {p.name: rng.standard_normal([int(eval_c(c, defines)) for c in p.shape])
              .astype(np.float32) for p in proc.data_params}
    base = run_sequential(proc, defines, inputs)
    n = sum(isinstance(s, SYNC) for s in walk(proc.body))
    for i in range(n):
        variant = dataclasses.replace(proc, body=drop(proc.body, i, [0]))
        assert sum(isinstance(s, SYNC) for s in walk(variant.body)) == n - 1
        check_proc(variant, defines)
        out = run_sequential(variant, defines, inputs)
        assert all(np.array_equal(out[k], base[k]) for k in base)
