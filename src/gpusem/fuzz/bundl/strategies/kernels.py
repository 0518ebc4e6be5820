"""Kernel-shaped Bundl programs for the compiler properties (race-free by construction).

The general generator (`bundl/strategies/programs`) covers every statement form, but most of its
programs observe little in global memory. A compiler bug shows when threads write
distinct, data-dependent values that a wrong index, offset, guard or barrier would
change. These programs have the shape of real kernels:

    lower out into ob { destruct {                       grid[1] -> block[B]
      partition ob into opiece by B { group B {          one piece of out per block
        [stage: alloc s in Shared (or Global: one per block); threads fill s; barrier]
        lower opiece into ot { destruct {               block[1] -> thread[T]
          let t : int @ thread[1] = partition_id;
          [let r : int @ thread[1] = x[partition_id + d]]  an index at a narrower target
          partition ot into o by T { group T {          one cell range per thread
            <thread body: reads of inputs / staged shared data, splits, claims,
             loops, ifs; writes o[0 .. k)>
    }}}}}}}}

Every thread writes only its own piece of `out`; shared data staged by other threads is
read only after the barrier that ends the partition which wrote it. So a correct
compiler gives one answer under every schedule, and any difference is a finding.

One kernel in five exchanges data among a part of the block only (thread[6] of 12,
thread[48] of 96, thread[64] of 128, thread[32] of 64): the named-barrier, mbarrier,
split-barrier and whole-warp (__syncwarp()) lowerings, built mostly by
`strategies/barriers.barrier_exchange`.
"""

from __future__ import annotations

from functools import lru_cache

from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.calculus.bundl.walk import child_stmts
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.strategies.barriers import SHAPES, barrier_exchange
from gpusem.fuzz.bundl.strategies.draws import (
    BOOLS,
    composite,
    ints,
    node_fields,
    pick,
)
from hypothesis import strategies as st

INT, FLOAT, BOOL = A.BaseType.INT, A.BaseType.FLOAT, A.BaseType.BOOL
THREAD1 = Perspective(Level.THREAD, 1)
BLOCK1 = Perspective(Level.BLOCK, 1)
# The most output cells one thread's code writes, each loop around the writes counted
# as many times as it runs (NVVM unrolls them): the bound on a kernel's size, by
# construction (issue 31.3; `thread_tree`'s claim and loop forms keep it). At least
# MIN_CELLS: the exchanges' loops write their k <= 2 cells twice.
MAX_CELLS = 8
MIN_CELLS = 4


def v(name: str) -> A.Var:
    return A.Var(name)


def i(n: int) -> A.IntLit:
    return A.IntLit(n)


def mod(e: A.Expr, n: int) -> A.Expr:
    """((e % n) + n) % n: an index in [0, n) whatever e is (C remainder may be < 0)."""
    return A.BinOp("%", A.BinOp("+", A.BinOp("%", e, i(n)), i(n)), i(n))


@lru_cache(maxsize=4096)
def _leaves(names: tuple[str, ...]) -> st.SearchStrategy[A.Expr]:
    """int_expr's leaves: a small literal or a thread scalar (made once per scalars)."""
    leaves = [st.builds(i, ints(-9, 9))]
    if names:
        leaves.append(st.sampled_from([v(x) for x in names]))
    return st.one_of(*leaves)


@composite
def int_expr(draw, env: dict, depth: int = 2) -> A.Expr:
    """An int expression over the thread's scalars and the input arrays (in bounds)."""
    leaves = _leaves(tuple(env["ints"]))
    if depth <= 0:
        return draw(leaves)
    choice = draw(ints(0, 4))
    if choice == 0:
        return draw(leaves)
    if choice == 1 and env["inputs"]:
        name, length = pick(draw, env["inputs"])
        return A.Index(v(name), mod(draw(int_expr(env, depth - 1)), length))
    if choice == 2 and env.get("staged"):
        name, length = env["staged"]
        return A.Index(v(name), mod(draw(int_expr(env, depth - 1)), length))
    op = pick(draw, ["+", "-", "*", "/", "%"])
    left = draw(int_expr(env, depth - 1))
    if op in "/%":  # a nonzero literal divisor: no trap, C rounding still exercised
        return A.BinOp(op, left, i(pick(draw, [-7, -3, 2, 3, 5])))
    return A.BinOp(op, left, draw(int_expr(env, depth - 1)))


def _f32(x: float) -> float:
    import numpy as np

    return float(np.float32(x))


FLOAT_LEAF = st.floats(-1e6, 1e6, allow_nan=False, width=32).map(
    lambda x: A.FloatLit(_f32(x)))


@composite
def float_expr(draw, depth: int = 2) -> A.Expr:
    """Float32 arithmetic where each operation rounds: `a * b + c` shapes (an FMA would
    round once), divisions and sums of values of different magnitudes."""
    if depth <= 0:
        return draw(FLOAT_LEAF)
    op = pick(draw, ["fma", "cancel", "+", "-", "*", "/"])
    if op == "cancel":  # x*y - x*y: exactly 0 when each op rounds; an FMA keeps the
        # rounding error of the product (the classic test of contraction)
        x, y = draw(float_expr(depth - 1)), draw(float_expr(depth - 1))
        return A.BinOp("+", A.BinOp("*", x, y), A.UnOp("-", A.BinOp("*", x, y)))
    if op == "fma":  # a * b + c, or the explicit fma(a, b, c) (extension: one rounding)
        a, b, c = (draw(float_expr(depth - 1)) for _ in range(3))
        if draw(BOOLS):
            return A.Fma(a, b, c)
        return A.BinOp("+", A.BinOp("*", a, b), c)
    if op == "/":  # a divisor far from zero
        return A.BinOp("/", draw(float_expr(depth - 1)),
                       A.FloatLit(_f32(pick(draw, [3.0, -7.0, 0.1]))))
    return A.BinOp(op, draw(float_expr(depth - 1)), draw(float_expr(depth - 1)))


@composite
def cond_expr(draw, env: dict) -> A.Expr:
    op = pick(draw, ["<", "<=", "==", "!=", ">"])
    return A.BinOp(op, draw(int_expr(env, 1)), draw(int_expr(env, 1)))


@composite
def writes(draw, env: dict, k: int) -> A.Stmt:
    """At thread[1]: write every cell o[0 .. k), each through a plain store, an if /
    else on thread data, or a bounded loop accumulating into a local."""
    stmts: list[A.Stmt] = []
    for j in range(k):
        value = draw(int_expr(env))
        write: A.Stmt = A.ArrAssign(v("o"), i(j), value)
        form = draw(ints(0, 3))
        if form == 1:
            other = A.ArrAssign(v("o"), i(j), draw(int_expr(env)))
            write = A.If(draw(cond_expr(env)), write, other)
        elif form == 2:
            acc, ctr = _fresh(env, "acc"), _fresh(env, "n")
            inner = {**env, "ints": env["ints"] + [acc, ctr]}
            body = A.seq(A.Assign(acc, A.BinOp("+", v(acc), draw(int_expr(inner)))),
                         A.Assign(ctr, A.BinOp("+", v(ctr), i(1))))
            write = A.seq(A.Decl(acc, INT, THREAD1, value, A.Skip()),
                          A.Decl(ctr, INT, THREAD1, i(0), A.Skip()),
                          A.While(A.BinOp("<", v(ctr), i(draw(ints(0, 3)))), body),
                          A.ArrAssign(v("o"), i(j), v(acc)))
        stmts.append(write)
    return A.seq(*stmts)


def _fresh(env: dict, base: str) -> str:
    env["names"][0] += 1
    return f"{base}{env['names'][0]}"


@composite
def leaf(draw, env: dict, m: int, k: int, S: str | None, O: str) -> A.Stmt:
    """At thread[m]: fill the staging view S (one slot per thread), barrier (the end of
    its partition), then each thread writes its k output cells, reading S's slots of
    the other threads of this thread[m] instance."""
    u = _fresh(env, "u")
    env_u = {**env, "ints": env["ints"] + [u]}
    stmts: list[A.Stmt] = [A.Decl(u, INT, THREAD1, A.PartitionId(), A.Skip())]
    r: str | None = None
    if env["inputs"] and draw(BOOLS):
        # An input read at the index of this thread's thread[1] unit: E-Arr-Access
        # evaluates `partition_id` in the index against the target thread[1], not
        # the code's thread[m] (where it would be 0). Added into o[0] below.
        r = _fresh(env, "r")
        name, length = pick(draw, env["inputs"])
        index = mod(A.BinOp("+", A.PartitionId(), i(draw(ints(0, 9)))), length)
        stmts.append(A.Decl(r, INT, THREAD1, A.Index(v(name), index), A.Skip()))
        env_u = {**env_u, "ints": env_u["ints"] + [r]}
    if S is not None:
        s1 = _fresh(env, "s")
        fill = A.ArrAssign(v(s1), i(0), draw(int_expr({**env_u, "staged": None})))
        stmts.append(A.Partition(None, S, s1, m, A.Group(m, fill)))
        top = S == "st"  # the whole (padded) staging array, not a group's piece
        env_u = {**env_u, "staged": (S, m + (env.get("pad", 0) if top else 0))}
        if env["inputs"] and (env.get("force_w") or draw(BOOLS)):
            # Independent work between the fill and its readers: a read of an input
            # that nobody writes, so the barrier's wait can move below it (split).
            w = _fresh(env, "w")
            name, length = pick(draw, env["inputs"])
            read = A.Index(v(name), mod(A.BinOp("+", v("b"), i(draw(ints(0, 9)))),
                                        length))
            stmts.append(A.Decl(w, INT, THREAD1, read, A.Skip()))
            env_u = {**env_u, "ints": env_u["ints"] + [w]}
    cells = draw(writes({**env_u, "ints": env_u["ints"]}, k))
    if r is not None:
        cells = A.seq(cells, A.ArrAssign(v("o"), i(0), A.BinOp(
            "+", A.Index(v("o"), i(0)), v(r))))
    stmts.append(A.Partition(None, O, "o", m, A.Group(m, cells)))
    return A.seq(*stmts)


@composite
def thread_tree(draw, env: dict, m: int, k: int, S: str | None, O: str,
                depth: int) -> A.Stmt:
    """Code at thread[m] owning views S (staging, m slots) and O (output, m·k cells)."""
    options = ["leaf"]
    if depth > 0:
        options += [q for q in ("group", "claim", "split", "loop")
                    if _possible(q, m, k, env.get("max_cells", MAX_CELLS))]
    form = pick(draw, options)
    if form == "group":  # partition both views by q, then group q: thread[m/q]
        q = pick(draw, [d for d in range(2, m + 1) if m % d == 0])
        S2 = _fresh(env, "sg") if S else None
        O2 = _fresh(env, "og")
        inner = A.Group(q, draw(thread_tree(env, m // q, k, S2, O2, depth - 1)))
        node = A.Partition(None, O, O2, q, inner)
        if not S:
            return node
        assert S2 is not None  # the staging view's piece
        return A.Partition(None, S, S2, q, node)
    if form == "claim":  # the first n threads get all of O (T-Claim at n, n | m)
        n = pick(draw, [d for d in range(1, m) if m % d == 0])
        Oc = _fresh(env, "oc")
        # each of the n threads owns k·m/n cells: 256 for claim at 1 of thread[128]
        # with k = 2, a kernel NVRTC spends ~0.3 s on (issue 31.3). It writes the first
        # `max_cells` of them (the others stay as the launch set them, as `pad`'s do).
        cells = min(k * (m // n), env.get("max_cells", MAX_CELLS))
        body: A.Stmt = A.Partition(None, Oc, "o", n,
                                   A.Group(n, draw(writes(env, cells))))
        return A.Claim(None, O, Oc, n, body)
    if form == "split":  # each arm computes a local from its own partition_id
        n1 = pick(draw, [d for d in range(1, m) if m % d == 0])
        n2 = pick(draw, [d for d in range(1, m - n1 + 1)
                                   if m % d == 0 and n1 % d == 0])
        r = _fresh(env, "r")
        arm_env = {**env, "ints": ["b"], "staged": None}  # read up only: no thread data
        arm = lambda: A.Assign(r, A.BinOp("+", A.BinOp("*", A.PartitionId(), i(
            pick(draw, [1, 3, 10]))), draw(int_expr(arm_env, 1))))
        split = A.Split(n1, n2, arm(), arm())
        env_r = {**env, "ints": env["ints"] + [r]}
        rest = draw(thread_tree(env_r, m, k, S, O, depth - 1))
        return A.seq(A.Decl(r, INT, THREAD1, i(-1), A.Skip()), split, rest)
    if form == "loop":  # the same barriers twice: reuse (phases, generations)
        c = _fresh(env, "c")
        persp = Perspective(Level.THREAD, m)
        env_c = {**env, "ints": env["ints"] + [c],
                 "max_cells": env.get("max_cells", MAX_CELLS) // 2}
        body = A.seq(draw(thread_tree(env_c, m, k, S, O, depth - 1)),
                     A.Assign(c, A.BinOp("+", v(c), i(1))))
        return A.seq(A.Decl(c, INT, persp, i(0), A.Skip()),
                     A.While(A.BinOp("<", v(c), i(2)), body))
    return draw(leaf(env, m, k, S, O))


@composite
def sub_block_exchange(draw, env: dict, m: int, k: int) -> A.Stmt:
    """The barrier shapes a whole-block or single-warp program never has: each half of
    the block (thread[m/2]: 48 or 64 threads, several warps) exchanges staged values, in
    a loop (the same barriers reused: phases, generations), with independent work
    between the fill and its readers (split barriers: arrive, then wait)."""
    c = _fresh(env, "c")
    env_c = {**env, "ints": env["ints"] + [c], "force_w": draw(BOOLS)}
    S2, O2 = _fresh(env, "sg"), _fresh(env, "og")
    inner = A.Group(2, draw(leaf(env_c, m // 2, k, S2, O2)))
    step = A.Assign(c, A.BinOp("+", v(c), i(1)))
    body = A.seq(A.Partition(None, "st", S2, 2, A.Partition(None, "ot", O2, 2, inner)),
                 step)
    return A.seq(A.Decl(c, INT, Perspective(Level.THREAD, m), i(0), A.Skip()),
                 A.While(A.BinOp("<", v(c), i(2)), body))


def _possible(form: str, m: int, k: int, cells: int) -> bool:
    """Whether `form` fits at thread[m]: a loop runs its body twice, which NVVM
    unrolls (the body's code twice over), so it takes two of its body's k cells."""
    return m > 1 and (form != "loop" or 2 * k <= cells)


@composite
def kernels(draw, max_blocks: int = 2, max_threads: int = 128,
            exchange: tuple | None = None, max_cells: int = MAX_CELLS) -> A.Program:
    """`exchange` = (threads choices, loop, between) pins the barrier template's shape
    (tests); None: the campaign's mix."""
    return draw(_kernels(max_blocks, max_threads, exchange, max_cells))


@composite
def generated_kernels(draw, max_blocks: int = 2, max_threads: int = 128,
                      exchange: tuple | None = None,
                      max_cells: int = MAX_CELLS) -> Generated:
    """`kernels()` as the compiler properties draw them: race-free by construction
    (the module docstring says why), so the oracle need not ask the (conservative) z3
    race analysis to prove it."""
    return Generated(draw(_kernels(max_blocks, max_threads, exchange, max_cells)),
                     race_free_by_construction=True)


@composite
def _kernels(draw, max_blocks: int = 2, max_threads: int = 128,
             exchange: tuple | None = None, max_cells: int = MAX_CELLS) -> A.Program:
    assert max_cells >= MIN_CELLS, max_cells
    blocks = pick(draw, [b for b in (1, 2, 4) if b <= max_blocks])
    sub_block = exchange is not None or (max_threads >= 96
                                         and draw(ints(0, 4)) == 4)
    # Half the barrier shapes' template (strategies/barriers: mbarriers, split ones),
    # half the older exchange (the named barriers: bar.sync over whole warps).
    template = exchange is not None or (sub_block and draw(BOOLS))
    shapes = exchange[0] if exchange else [t for t, _ in SHAPES]
    threads = pick(draw, shapes if template else
                                   [96, 128, 64] if sub_block else
                                   [t for t in (2, 4, 8, 32, 64, 96, 128)
                                    if t <= max_threads])
    k = draw(ints(1, 2))
    globals_: list[A.GlobalDecl] = []
    inputs = []
    for j in range(draw(ints(1, 2))):
        length = pick(draw, [threads, blocks * threads, 7])
        values = tuple(map(A.IntLit, draw(_values(length))))
        globals_.append(A.GlobalDecl(f"x{j}", INT, length, values))
        inputs.append((f"x{j}", length))
    globals_.append(A.GlobalDecl("out", INT, blocks * threads * k, None))
    env = {"ints": ["t", "b"], "inputs": inputs, "staged": None, "names": [0],
           "max_cells": max_cells}
    if not sub_block and not draw(BOOLS):  # False: what shrinking tends to
        # Flat: every thread writes the same values at grid[1] (uniform writes, read
        # up only): enough to expose arithmetic miscompilations in a few statements.
        flat = {**env, "ints": []}
        main = A.seq(*(A.ArrAssign(v("out"), i(j), draw(int_expr(flat)))
                       for j in range(k)))
        if draw(BOOLS):  # float32 arithmetic: rounding of every operation
            globals_.append(A.GlobalDecl("outf", FLOAT, k, None))
            main = A.seq(main, *(A.ArrAssign(v("outf"), i(j), draw(float_expr()))
                                 for j in range(k)))
        return A.Program(A.Machine(blocks, threads), tuple(globals_), (), main)
    staged = sub_block or draw(BOOLS)
    pad = pick(draw, [0, 4]) if staged and not sub_block else 0
    env["pad"] = pad  # slots past the threads' own: never written, read as zero
    if template:
        pinned = exchange[1:] if exchange else (None, None)
        tree = draw(barrier_exchange(env, threads, k, int_expr, *pinned))
    elif sub_block:
        tree = draw(sub_block_exchange(env, threads, k))
    else:
        tree = draw(thread_tree(env, threads, k, "st" if staged else None, "ot",
                                draw(ints(0, 2))))
    threads_code = A.Destruct(A.seq(A.Decl("t", INT, THREAD1, A.PartitionId(), A.Skip()),
                                    tree))
    piece = "opiece" if blocks > 1 else "ob"
    block_code: A.Stmt = A.Lower(None, piece, "ot", threads_code)
    if staged:  # in shared memory, or a Global array per block (S-Alloc-Global)
        mem = pick(draw, [A.MemKind.SHARED, A.MemKind.GLOBAL])
        block_code = A.seq(A.Alloc("s", INT, threads + pad, mem, A.Skip()),
                           A.Lower(None, "s", "st", block_code))
    if blocks > 1:  # one piece of `out` per block
        block_code = A.Partition(None, "ob", "opiece", blocks, A.Group(blocks, block_code))
    grid = A.Lower(None, "out", "ob", A.Destruct(A.seq(
        A.Decl("b", INT, BLOCK1, A.PartitionId(), A.Skip()), block_code)))
    return A.Program(A.Machine(blocks, threads), tuple(globals_), (), drop_dead_lets(grid))


@lru_cache(maxsize=64)
def _values(length: int) -> st.SearchStrategy[list[int]]:
    """An input array's values (made once per length: `|` and lists are not cached)."""
    return st.lists(st.integers(-2**31, 2**31 - 1) | st.integers(-50, 50),
                    min_size=length, max_size=length)


def drop_dead_lets(s: A.Stmt) -> A.Stmt:
    """Remove `let x ... in body` where body never mentions x (the skeleton declares
    `b`, `t`, `u` for the expressions that may use them): shrunk counterexamples then
    show only what matters. The initialisers have no effects (partition_id, reads)."""
    return _drop(s)[0]


def _drop(s: A.Stmt) -> tuple[A.Stmt, frozenset[str]]:
    """`drop_dead_lets(s)` and the names it mentions, built bottom-up: one walk, not
    one walk of each let's body per enclosing let (issue 31.3)."""
    match s:
        case A.Decl(name, ty, persp, init, body, span):
            body, names = _drop(body)
            if name not in names:
                return body, names
            return (A.Decl(name, ty, persp, init, body, span),
                    names | _mentioned(init) | _mentioned(persp))
        case A.Seq(stmts):
            parts = [_drop(x) for x in stmts]
            # seq only regroups the parts (and drops skips): the same mentions
            return (A.seq(*(p for p, _ in parts)),
                    frozenset().union(*(n for _, n in parts)))
    children = child_stmts(s)
    if not children:
        return s, _mentioned(s)
    parts = [_drop(c) for c in children]
    out = _rebuild(s, tuple(p for p, _ in parts))
    inner = {id(p): n for p, n in parts}
    names = frozenset().union(*(inner[id(v)] if id(v) in inner else _mentioned(v)
                                for f in node_fields(out) or ()
                                for v in (getattr(out, f),)))
    return out, names


def _mentioned(s: object) -> frozenset[str]:
    """The names `s` mentions: its variables and assigned names, in every field but
    spans (a let's name itself is no mention; shadowing is not looked at). One loop
    over a stack, each class's shape looked up once (issue 31.3: ~40,000 nodes a
    round of 100 programs, a frozenset union at each when it recursed)."""
    names: set[str] = set()
    stack = [s]
    while stack:
        x = stack.pop()
        shape = _SHAPES.get(type(x))
        if shape is None:
            shape = _SHAPES[type(x)] = _shape(x)
        if shape is _VAR:
            names.add(x.name)  # type: ignore[attr-defined]
        elif shape is _TUPLE:
            stack.extend(x)  # type: ignore[arg-type]
        else:
            if shape is _ASSIGN:
                names.add(x.name)  # type: ignore[attr-defined]
            stack.extend(getattr(x, f) for f in node_fields(x) or ())
    return frozenset(names)


# a class's part in `_mentioned`: a variable, a tuple, an assignment, anything else
_VAR, _TUPLE, _ASSIGN, _OTHER = object(), object(), object(), object()
_SHAPES: dict[type, object] = {}


def _shape(x: object) -> object:
    return _VAR if isinstance(x, A.Var) else _TUPLE if isinstance(x, tuple) else \
        _ASSIGN if isinstance(x, A.Assign) else _OTHER


def _rebuild(s: A.Stmt, children: tuple) -> A.Stmt:
    from dataclasses import replace

    match s:
        case A.If():
            return replace(s, then=children[0], orelse=children[1])
        case A.Split():
            return replace(s, left=children[0], right=children[1])
        case _:
            return replace(s, body=children[0])
