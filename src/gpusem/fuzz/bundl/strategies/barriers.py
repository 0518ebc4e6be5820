"""Sub-block exchanges: the barrier shapes that only a part of a block synchronises.

`strategies/kernels` builds whole-block or in-warp programs, whose barriers lower to
__syncthreads / __syncwarp. Three lowerings need a perspective instance of several
warps that is not the whole block (compiler/bundl_cuda/barriers.py, sync.py):

  thread[64] of 128, nothing between fill and readers   named barrier bar.sync id, 64
  thread[6] of 12 or [48] of 96, nothing between         mbarrier arrive + wait
  any of them, independent work between                  split mbarrier: arrive where
                                                         the fill ends, wait before
                                                         the readers (arrive motion)

and the mistakes they invite (compiler/bundl_cuda/faults.py) show only when a thread
reads a slot another warp (or a later thread) fills, and the stale value differs:

  named-barrier-count    bar.sync counts n/2: warp 0 runs on before warp 1 fills, so a
                         read crossing the warp boundary (u + d, d >= 1) sees the old slot
  mbarrier-phase         the second wait (a loop) returns at once: the fill must change
                         between iterations (it depends on the loop counter c)
  arrive-above-last-use  the arrive precedes the fill: under the eager schedule thread u
                         reads slot u + d before its owner fills it

    let c : int @ thread[T] = 0; while c < 2 {                 (optional: reuse)
      partition st into sg by q { partition ot into og by q { group q {
        let u : int @ thread[1] = partition_id;
        partition sg into s1 by n { group n { s1[0] = t * a + c * e + f; } }
        let w : int @ thread[1] = <independent work>;          (optional: split)
        partition og into o by n { group n { o[j] = sg[(u + d) mod n] + w + g; } }
      } } }
      c = c + 1; }

Race-free by construction: a thread writes only its slot s1[0] and its cells o[..];
sg is read after the barrier ending the fill's partition, and the next iteration's
fill comes after the barrier ending the readers' partition. Every draw shrinks towards
the first option: no loop, nothing between, d = 1, no extra terms.
"""

from __future__ import annotations

from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.fuzz.bundl.strategies.draws import BOOLS, composite, ints, pick

INT = A.BaseType.INT
THREAD1 = Perspective(Level.THREAD, 1)

# (threads, instance size): mbarrier (6 and 48: neither divides 32 nor is a multiple of
# it), named barrier (64: a multiple of 32, not the block). The 12-thread block is
# cheap to interpret and shrinks well; only the named barrier needs 128 threads.
SHAPES = ((12, 6), (128, 64), (96, 48))


def _v(name: str) -> A.Var:
    return A.Var(name)


def _i(n: int) -> A.IntLit:
    return A.IntLit(n)


def _add(a: A.Expr, b: A.Expr) -> A.Expr:
    return A.BinOp("+", a, b)


def _mod(e: A.Expr, n: int) -> A.Expr:
    """((e % n) + n) % n: in [0, n) whatever the sign of e."""
    return A.BinOp("%", _add(A.BinOp("%", e, _i(n)), _i(n)), _i(n))


@composite
def barrier_exchange(draw, env: dict, threads: int, k: int, int_expr,
                     loop: bool | None = None, between: bool | None = None) -> A.Stmt:
    """The exchange above at thread[threads] over views `st` (threads slots) and `ot`
    (threads * k cells); `int_expr(env, depth)` draws the extra terms f and g. `loop`
    and `between` are drawn unless given (tests pin a shape)."""
    n = dict(SHAPES)[threads]
    loop = draw(BOOLS) if loop is None else loop
    between = draw(BOOLS) if between is None else between
    fill: A.Expr = A.BinOp("*", _v("t"), _i(pick(draw, [1, 3, 10])))
    if loop:  # the fill changes per iteration: a reused phase shows stale data
        fill = _add(fill, A.BinOp("*", _v("c"), _i(pick(draw, [1, 7, 100]))))
    if draw(BOOLS):
        fill = _add(fill, draw(int_expr({**env, "staged": None}, 1)))
    readers = draw(_readers(env, n, k, between, int_expr))
    inner: list[A.Stmt] = [A.Decl("u", INT, THREAD1, A.PartitionId(), A.Skip()),
             A.Partition(None, "sg", "s1", n,
                         A.Group(n, A.ArrAssign(_v("s1"), _i(0), fill)))]
    if between:  # independent of s: the barrier's wait sinks below it (split)
        inner.append(A.Decl("w", INT, THREAD1, draw(_work(env)), A.Skip()))
    inner.append(readers)
    q = threads // n
    body = A.Partition(None, "st", "sg", q, A.Partition(None, "ot", "og", q,
                                                          A.Group(q, A.seq(*inner))))
    if not loop:
        return body
    step = A.Assign("c", _add(_v("c"), _i(1)))
    return A.seq(A.Decl("c", INT, Perspective(Level.THREAD, threads), _i(0), A.Skip()),
                 A.While(A.BinOp("<", _v("c"), _i(2)), A.seq(body, step)))


@composite
def _readers(draw, env: dict, n: int, k: int, between: bool, int_expr) -> A.Stmt:
    """Each thread writes its k cells from a neighbour's slot d ahead (d >= 1: another
    thread, across the warp boundary for the last lanes of a warp)."""
    writes = []
    for j in range(k):
        d = draw(ints(1, n - 1))
        value: A.Expr = A.Index(_v("sg"), _mod(_add(_v("u"), _i(d)), n))
        if between:  # w is used, so `drop_dead_lets` keeps the independent work
            value = _add(value, _v("w"))
        if draw(BOOLS):
            value = _add(value, draw(int_expr({**env, "staged": None}, 1)))
        writes.append(A.ArrAssign(_v("o"), _i(j), value))
    return A.Partition(None, "og", "o", n, A.Group(n, A.seq(*writes)))


@composite
def _work(draw, env: dict) -> A.Expr:
    """Independent work at thread[n] (it may read only data at thread[n] or broader:
    b, inputs): a read of an input nobody writes, or arithmetic on b."""
    if env["inputs"] and draw(BOOLS):
        name, length = pick(draw, env["inputs"])
        return A.Index(_v(name), _mod(_add(_v("b"), _i(draw(ints(0, 9)))),
                                      length))
    return _add(A.BinOp("*", _v("b"), _i(5)), _i(draw(ints(1, 9))))
