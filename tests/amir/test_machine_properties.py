"""Properties of the machine on generated straight-line AMIR over 4 threads, 4 cells and
2 barriers. They pin that the representation choices (one record shared by a window,
one family for t = false records, family splits, dominance, dead-record skipping) are
exact, and that synchronisation is monotone:

  - test_window_records_are_pointwise: RecordRead/RecordMutate of x[lo:hi] gives the
    verdict of hi - lo single-cell statements (ρ is updated pointwise, Figure 22);
  - test_families_are_per_thread_records: a t = false record over threads G gives the
    verdict of |G| one-thread statements (R makes one record per g ∈ G, Def. B.1);
  - test_more_sync_never_rejects: adding a fence that makes everything fully visible
    to everyone never turns an accepted program into a rejected one.
"""

from __future__ import annotations

from gpusem.calculus.amir import ast as A
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir.timelines import VL, QualTL
from gpusem.interpreter.amir.machine import check_amir
from hypothesis import example, given, settings
from hypothesis import strategies as st

Q = (QualTL.CUDA_IN_ORDER_RAM, QualTL.SM80_CP_ASYNC)
QSETS = st.frozensets(st.sampled_from(Q))
NT, NX = 4, 4


def _threads(start: int, count: int) -> A.ThreadMap:
    return A.ThreadMap((A.ThreadRange(G.CInt(start), count),))


@st.composite
def thread_boxes(draw):
    start = draw(st.integers(0, NT - 1))
    return start, draw(st.integers(1, NT - start))


@st.composite
def windows(draw):
    lo = draw(st.integers(0, NX - 1))
    if draw(st.booleans()):
        return A.Access("x", (G.WPoint(G.CInt(lo)),))
    hi = draw(st.integers(lo + 1, NX))
    return A.Access("x", (G.WInterval(G.CInt(lo), G.CInt(hi)),))


def _bar(i: int) -> A.Access:
    return A.Access("z", (G.WPoint(G.CInt(i)),), barrier=True)


@st.composite
def statements(draw):
    kind = draw(st.sampled_from(["rr", "rr", "rm", "rm", "fence", "fence", "arrive",
                                 "await", "cr", "cm", "clr", "clm"]))
    th = _threads(*draw(thread_boxes()))
    t = draw(st.booleans())
    if kind in ("rr", "rm"):
        cls = A.RecordRead if kind == "rr" else A.RecordMutate
        vl = draw(st.sampled_from([VL.FULLY_ORDERED, VL.UNORDERED]))
        atomic = draw(st.sampled_from([frozenset(), frozenset({Q[0]})]))
        bars = draw(st.sampled_from([(), (_bar(0),), (_bar(1),)]))
        return cls(vl, t, draw(windows()), draw(st.sampled_from(Q)), atomic, bars, th)
    if kind == "fence":
        return A.Fence(t, draw(QSETS), draw(QSETS), draw(QSETS), th)
    if kind == "arrive":
        return A.Arrive(t, draw(QSETS), (_bar(draw(st.integers(0, 1))),), th)
    if kind == "await":
        return A.Await(_bar(draw(st.integers(0, 1))), draw(QSETS), draw(QSETS),
                       draw(st.integers(-1, 1)), th)
    if kind in ("cr", "cm"):
        cls = A.CheckReads if kind == "cr" else A.CheckMutates
        vl = draw(st.sampled_from([VL.ATOMIC_ONLY, VL.TEMPORALLY_ORDERED,
                                   VL.FULLY_ORDERED]))
        return cls(vl, t, draw(windows()), draw(QSETS), th)
    cls = A.ClearReads if kind == "clr" else A.ClearMutates
    return cls(draw(windows()))


PRELUDE = (A.Alloc("x", (G.CInt(NX),)), A.Alloc("z", (G.CInt(2),), barrier=True))
WHOLE = A.Access("x", (G.WInterval(G.CInt(0), G.CInt(NX)),))


@st.composite
def final_checks(draw):
    """A closing check of every cell by some threads: what the program made visible
    to whom is then observable."""
    cls = draw(st.sampled_from([A.CheckReads, A.CheckMutates]))
    vl = draw(st.sampled_from([VL.TEMPORALLY_ORDERED, VL.FULLY_ORDERED]))
    qs = draw(st.frozensets(st.sampled_from(Q), min_size=1))
    return (cls(vl, False, WHOLE, qs, _threads(*draw(thread_boxes()))),)


programs = st.builds(lambda body, end: body + end,
                     st.lists(statements(), min_size=1, max_size=10).map(tuple),
                     final_checks())


def verdict(body) -> tuple:
    v = check_amir(A.AProc("p", (), PRELUDE + body), {}).violation
    return None if v is None else (v.check, v.variable, v.index)


_X0 = A.Access("x", (G.WPoint(G.CInt(0)),))
_Q0 = frozenset({Q[0]})
# a family fenced by half of its threads, then observed by one of them
SPLIT = (A.RecordRead(VL.FULLY_ORDERED, False, _X0, Q[0], frozenset(), (),
                      _threads(0, 4)),
         A.Fence(True, _Q0, _Q0, _Q0, _threads(0, 2)),
         A.CheckReads(VL.TEMPORALLY_ORDERED, False, WHOLE, _Q0, _threads(1, 1)))
# a window written, half of it re-registered with a barrier, awaited by another thread
PARTIAL = (A.RecordMutate(VL.FULLY_ORDERED, True, WHOLE, Q[0], frozenset(), (),
                          _threads(0, 1)),
           A.Arrive(True, _Q0, (_bar(0),), _threads(0, 1)),
           A.RecordMutate(VL.FULLY_ORDERED, True, A.Access("x", (G.WInterval(
               G.CInt(1), G.CInt(3)),)), Q[0], frozenset(), (_bar(0),), _threads(0, 1)),
           A.Await(_bar(0), _Q0, _Q0, -1, _threads(3, 1)),
           A.CheckMutates(VL.FULLY_ORDERED, False, WHOLE, _Q0, _threads(3, 1)))


def _per_cell(s):
    if isinstance(s, (A.RecordRead, A.RecordMutate)) and \
            isinstance(s.access.coords[0], G.WInterval):
        w = s.access.coords[0]
        return [type(s)(s.vl, s.t, A.Access("x", (G.WPoint(G.CInt(i)),)), s.qual,
                        s.atomic, s.barriers, s.threads)
                for i in range(w.lo.value, w.hi.value)]
    return [s]


def _per_thread(s):
    if isinstance(s, (A.RecordRead, A.RecordMutate)) and not s.t:
        r = s.threads.dims[0]
        return [type(s)(s.vl, s.t, s.access, s.qual, s.atomic, s.barriers,
                        _threads(r.start.value + i, 1)) for i in range(r.count)]
    return [s]


@settings(max_examples=100, deadline=None)
@given(programs)
@example(SPLIT)
@example(PARTIAL)
def test_window_records_are_pointwise(body):
    expanded = tuple(x for s in body for x in _per_cell(s))
    assert verdict(expanded) == verdict(body)


@settings(max_examples=100, deadline=None)
@given(programs)
@example(SPLIT)
@example(PARTIAL)
def test_families_are_per_thread_records(body):
    expanded = tuple(x for s in body for x in _per_thread(s))
    assert verdict(expanded) == verdict(body)


ALLQ = frozenset(QualTL)
EVERYTHING = A.Fence(True, ALLQ, ALLQ, ALLQ, _threads(0, NT))


@settings(max_examples=100, deadline=None)
@given(programs, st.data())
def test_more_sync_never_rejects(body, data):
    if verdict(body) is not None:
        return
    at = data.draw(st.integers(0, len(body)))
    assert verdict(body[:at] + (EVERYTHING,) + body[at:]) is None


def test_properties_have_teeth():
    """The generator reaches rejections the expansions must reproduce."""
    body = (A.RecordMutate(VL.FULLY_ORDERED, False, A.Access(
        "x", (G.WInterval(G.CInt(0), G.CInt(4)),)), Q[0], frozenset(), (),
        _threads(0, 4)),
        A.CheckMutates(VL.FULLY_ORDERED, False, A.Access(
            "x", (G.WInterval(G.CInt(0), G.CInt(4)),)), frozenset({Q[0]}),
            _threads(2, 1)))
    assert verdict(body) == ("CheckMutates", "x", (0,))
    assert verdict(tuple(x for s in body for x in _per_thread(s))) == \
        ("CheckMutates", "x", (0,))
