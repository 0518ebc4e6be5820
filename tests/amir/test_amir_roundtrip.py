"""Printing then parsing an AMIR procedure is the identity (calculus/amir/printer.py,
parser.py), on hand-written programs and on generated trees."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.amir import ast as A
from gpusem.calculus.amir.parser import parse_file, parse_proc
from gpusem.calculus.amir.printer import print_proc
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir.timelines import VL, QualTL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .gemm_amir import gemm_amir

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.amir"))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_programs_roundtrip(path):
    proc = parse_file(str(path))
    assert parse_proc(print_proc(proc)) == proc


def test_gemm_roundtrip_and_origins():
    proc = parse_proc(gemm_amir(), "gemm.amir")
    again = parse_proc(print_proc(proc))
    assert again == proc
    # hand-written AMIR: each statement's provenance is its own line
    first = proc.body[0]
    assert first.origin.file == "gemm.amir" and first.origin.line == 2


# ------------------------------------------------------------------ generators

DATA = ("x", "buf", "acc")
BARRIERS = ("z", "cg")
CTRL = ("N", "i", "k")


def cexprs(names):
    leaves = st.one_of(st.integers(-9, 300).map(G.CInt),
                       st.sampled_from(names).map(G.CVar))
    return st.recursive(
        leaves,
        lambda sub: st.builds(G.CBin, st.sampled_from(G.CONTROL_OPS), sub, sub),
        max_leaves=5)


def bexprs(names):
    rel = st.builds(G.BRel, st.sampled_from(G.RELATION_OPS), cexprs(names),
                    cexprs(names))
    leaves = st.one_of(st.booleans().map(G.BConst), rel)
    return st.recursive(
        leaves,
        lambda sub: st.one_of(st.builds(G.BLog, st.sampled_from(["and", "or"]), sub,
                                        sub), st.builds(G.BNot, sub)),
        max_leaves=4)


def wcoords(names):
    opt = st.one_of(st.none(), cexprs(names))
    return st.lists(st.one_of(st.builds(G.WPoint, cexprs(names)),
                              st.builds(G.WInterval, opt, opt)), max_size=3)


def accesses(names, barrier=None):
    if barrier is None:
        return st.one_of(accesses(names, False), accesses(names, True))
    pool = BARRIERS if barrier else DATA
    return st.builds(A.Access, st.sampled_from(pool), wcoords(names).map(tuple),
                     st.just(barrier))


def thread_maps(names):
    rng = st.builds(A.ThreadRange, cexprs(names), st.integers(1, 256),
                    st.integers(1, 64))
    return st.one_of(st.just(A.CPU),
                     st.lists(rng, min_size=1, max_size=2).map(
                         lambda ds: A.ThreadMap(tuple(ds))))


QUALSETS = st.frozensets(st.sampled_from(list(QualTL)), max_size=4)


def simple_stmts(names):
    a, z, th = accesses(names), accesses(names, True), thread_maps(names)
    vl, q = st.sampled_from(list(VL)), st.sampled_from(list(QualTL))
    zs = st.lists(z, max_size=2).map(tuple)
    return st.one_of(
        st.just(A.IncTaskID()),
        st.builds(A.Alloc, st.sampled_from(DATA), st.lists(cexprs(names),
                                                            max_size=2).map(tuple)),
        st.builds(A.Free, st.sampled_from(DATA + BARRIERS)),
        st.builds(A.RecordRead, vl, st.booleans(), a, q, QUALSETS, zs, th),
        st.builds(A.RecordMutate, vl, st.booleans(), a, q, QUALSETS, zs, th),
        st.builds(A.ClearReads, a), st.builds(A.ClearMutates, a),
        st.builds(A.Fence, st.booleans(), QUALSETS, QUALSETS, QUALSETS, th),
        st.builds(A.Arrive, st.booleans(), QUALSETS, zs, th),
        st.builds(A.Await, z, QUALSETS, QUALSETS, st.integers(-3, 3), th),
        st.builds(A.CheckReads, vl, st.booleans(), a, QUALSETS, th),
        st.builds(A.CheckMutates, vl, st.booleans(), a, QUALSETS, th),
        st.builds(A.CheckBarrier, z),
    )


def bodies(names, depth=2):
    stmt = simple_stmts(names)
    if depth > 0:
        inner = bodies(names, depth - 1)
        stmt = st.one_of(
            stmt,
            st.builds(A.Loop, st.sampled_from(CTRL), cexprs(names), cexprs(names),
                      inner),
            st.builds(A.Guard, bexprs(names), inner))
    return st.lists(stmt, max_size=4).map(tuple)


PREFIX = (A.Alloc("z", (), True), A.Alloc("cg", (G.CInt(2),), True))
procs = st.builds(lambda body: A.AProc("p", ("N",), PREFIX + body), bodies(CTRL))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(procs)
def test_print_parse_identity(proc):
    text = print_proc(proc)
    assert parse_proc(text) == proc, text


@pytest.mark.parametrize("text,prefix", [
    ("proc p():\n    Fence(true, {cuda2})\n", "arity"),
    ("proc p():\n    Bogus(x)\n", "unknown AMIR statement"),
    ("proc p():\n    CheckReads(mostly, false, x, {})\n", "unknown visibility"),
    ("proc p():\n    CheckReads(fully_ordered, maybe, x, {})\n", "expected true"),
    ("proc p():\n    Fence(true, {cuda9}, {}, {})\n", "unknown qualitative"),
    ("proc p():\n    ClearReads(x) @ threads(0)\n", "thread mapping"),
    ("proc p():\n    Alloc(x[0:4])\n", "alloc"),
    ("proc p(:\n", "syntax error"),
])
def test_malformed_amir_is_bad_input(text, prefix):
    with pytest.raises(BadInput) as err:
        parse_proc(text, "bad.amir")
    assert prefix in err.value.message and err.value.message.startswith("bad.amir:")
