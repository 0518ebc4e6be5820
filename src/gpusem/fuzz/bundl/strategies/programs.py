"""Hypothesis strategies for WELL-TYPED Bundl programs, by construction (Appendix A.2).

Type-directed generation (STYLE 17): at each point the generator knows Γ (every name's
perspective, type, and for arrays the static length), the code perspective π and the
machine (B, T), and chooses only statement forms whose rule's premises it can meet:

  let       T-Decl            π' ≤ π (write down), init typed at π
  alloc     T-Alloc(-Shared)  Shared only at block[1] (fixed)
  x = e     T-Assn            x :^π' b with π' ≤ π
  a[i] = e  T-Arr-Assn(-Sh.)  a at π' ≤ π (and π ≤ block[1] for Shared); i in bounds;
                              i and e read no a where π spans several threads
  if/while  T-If, T-While     bool conditions at π; loops count a π counter to ≤ 3
  split     T-Split           n1, n2 align to n
  group     T-Group           q | n
  destruct  T-Destruct        π ∈ {grid[1], block[1]}
  partition T-Partition       x at π, c | n and c | len(x) (pieces of len(x)/c)
  claim     T-Claim           x at π, n' | n (fixed); body at (h, n')
  lower     T-Lower           x at π ∈ {grid[1], block[1]}; y at ↓π
  async     T-Async-*         at thread[1]: async_partition x into y {async_memcpy(y, z)}
  memcpy    T-Memcpy          two arrays at π, same element type and length; where π
                              spans several threads, x out into a fresh twin, neither
                              written after (`_shared_copy`, `Gen.frozen`)
  f(...)    T-Function-Call   f at π; pointers at exactly the parameter's perspective;
                              parameters narrower, equal or broader (functions.py)
  free 0    T-Free            the only `free` a source program may write
  barrier   T-Sync-*          `init ψ; dec ψ; wait ψ;` by hand, within one block
  stage     T-Async-*         at block[1]: a shared array filled by async copies from
                              per-thread global arrays (cp.async's shape)

Programs terminate (loops are bounded, calls go only to earlier functions) and index in
bounds (an index is a literal below the length or `((e % n) + n) % n`). Divisions are by
positive literals. Names are unique in a program (`v3`, `g0`, `f1`), so no binder
shadows another (the checker's `no_rebinding`).

Shrinking: every choice is a small local draw, leaves first (`skip`, literals, variables
come first in each `sampled_from`/`one_of`), so hypothesis shrinks toward short, flat
programs.

Conventions (paper -> Python): Γ -> `Env.vars`, π -> `Env.persp`, (B, T) ->
`Gen.shape`, m -> `memory_need` (the synthesised bound a function declares in `uses`).
"""

from __future__ import annotations

from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.ast import ArrayType, AsyncType, BaseType, MemKind
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    THREAD1,
    MachineShape,
    Perspective,
    align_to,
    destruct,
    size,
)
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.strategies.draws import BOOLS, composite, ints, pick
from gpusem.fuzz.bundl.strategies.expressions import (  # noqa: F401  (re-exported: the public strategy API)
    BASES,
    BOOL,
    INT,
    Env,
    FnInfo,
    Gen,
    VarInfo,
    array_operand,
    arrays,
    divisors,
    expressions,
    gen_expr,
    gen_index,
    literal,
    narrower_or_equal,
    writable,
)
from gpusem.fuzz.bundl.strategies.functions import (  # noqa: F401  (re-exported)
    calls,
    gen_fn,
    memory_need,
    reachable_persps,
    s_call,
)

# --------------------------------------------------------------------- statements


def gen_block(draw, g: Gen, env: Env, depth: int) -> ast.Stmt:
    """A statement list; a binder's scope is the rest of the list (ast.seq)."""
    n = draw(ints(1, g.max_stmts))
    stmts: list[ast.Stmt] = []
    for _ in range(n):
        s, env = gen_stmt(draw, g, env, depth)
        stmts.append(s)
    return ast.seq(*stmts)


def applicable(g: Gen, env: Env, depth: int) -> list[str]:
    """The statement forms whose premises can be met here, leaves first."""
    p = env.persp
    forms = ["skip", "let", "alloc", "free"]
    if any(isinstance(v.type, BaseType) and writable(g, env, v) for v in env.visible()):
        forms.append("assign")
    if arrays(env, lambda v: writable(g, env, v) and v.length > 0):
        forms.append("arr_assign")
    if arrays(env, lambda v: v.persp == p):
        forms.append("memcpy")
    if calls(g, env):
        forms.append("call")
    if _barrier_fits(g, p):
        forms.append("barrier")
    if depth <= 0:
        return forms
    forms += ["if", "while"]
    if _split_sizes(p.n):
        forms.append("split")
    if p.n > 1:
        forms.append("group")
    if p in (GRID1, BLOCK1):
        forms.append("destruct")
    if _partitionable(env):
        forms.append("partition")
    if arrays(env, lambda v: v.persp == p and v.array.mem is not MemKind.LOCAL):
        forms.append("claim")
        if p in (GRID1, BLOCK1):
            forms.append("lower")
    if p == THREAD1 and _async_sources(env, g):
        forms.append("async")
    if p == BLOCK1:
        forms.append("stage")
    if _descend_steps(g, p):
        forms.append("descend")
    return forms


# Forms whose premises are rarely met get extra weight, so that a few hundred programs
# cover every statement form (tests/bundl/test_syntax_generator.py checks it).
WEIGHT = {"async": 5, "split": 3, "call": 3, "descend": 2, "memcpy": 2, "claim": 2}


def gen_stmt(draw, g: Gen, env: Env, depth: int) -> tuple[ast.Stmt, Env]:
    """One statement and the environment after it (extended by a binder)."""
    forms = [f for f in applicable(g, env, depth) for _ in range(WEIGHT.get(f, 1))]
    if "claim" in forms and env.persp.n > 1:  # where some threads skip the body
        forms += ["claim"] * 3
    form = pick(draw, forms)
    return RULES[form](draw, g, env, depth)


def s_skip(draw, g, env, depth):  # T-Skip
    return ast.Skip(), env


def _one_thread(g: Gen, persp: Perspective) -> bool:
    """Whether data at `persp` belongs to one thread (racy reads cannot split it)."""
    return size(persp, g.shape) == 1


def s_free(draw, g, env, depth):  # T-Free: in a source program only `free 0`
    return ast.Free(0), env


def _barrier_fits(g: Gen, p: Perspective) -> bool:
    """A hand-written barrier over a unit the compiler can synchronise (within one
    block; a barrier among blocks is `unsupported` before the kernel's end)."""
    return size(p, g.shape) <= g.shape.threads


def s_barrier(draw, g, env, depth):  # T-Sync-Init; T-Sync-Dec; T-Sync-Wait
    """The barrier S-Partition wraps around its body, written by hand: in a source
    program init / dec / wait only appear as this consecutive triple (errata "runtime
    forms in source programs")."""
    label = g.fresh("psi")
    return ast.seq(ast.SyncInit(label), ast.SyncDec(label), ast.SyncWait(label)), env


def s_let(draw, g, env, depth):  # T-Decl
    ty = pick(draw, BASES)
    persp = pick(draw, narrower_or_equal(g, env.persp))
    name = g.fresh()
    init = gen_expr(draw, g, env, ty, reads=_one_thread(g, persp))
    decl = ast.Decl(name, ty, persp, init, ast.Skip())
    return decl, env.bind(VarInfo(name, persp, ty))


def s_alloc(draw, g, env, depth):  # T-Alloc, T-Alloc-Shared
    mems = [MemKind.LOCAL, MemKind.GLOBAL] + ([MemKind.SHARED] * 2 if env.persp == BLOCK1
                                              else [])
    mem = pick(draw, mems)
    elem = pick(draw, BASES)
    n = pick(draw, [1, 2, 4, 8])
    persp = BLOCK1 if mem is MemKind.SHARED else env.persp
    name = g.fresh()
    alloc = ast.Alloc(name, elem, n, mem, ast.Skip())
    return alloc, env.bind(VarInfo(name, persp, ArrayType(elem, mem), n))


def s_assign(draw, g, env, depth):  # T-Assn
    targets = [v for v in env.visible() if isinstance(v.type, BaseType)
               and writable(g, env, v)]
    v = pick(draw, targets)
    value = gen_expr(draw, g, env, v.type, reads=_one_thread(g, v.persp))
    return ast.Assign(v.name, value), env


def s_arr_assign(draw, g, env, depth):  # T-Arr-Assn, T-Arr-Assn-Shared
    a = pick(draw, arrays(env, lambda v: writable(g, env, v) and v.length > 0))
    array, length = array_operand(draw, a)
    # several threads make the store: one whose index or value reads the array it
    # writes races with itself (another thread reads the cell after this one's write)
    see = env if _one_thread(g, env.persp) else env.hide(a.name)
    index = gen_index(draw, g, see, length, 1)
    value = gen_expr(draw, g, see, a.array.elem)
    return ast.ArrAssign(array, index, value), env


def s_if(draw, g, env, depth):  # T-If
    cond = gen_expr(draw, g, env, BOOL, reads=False)  # see gen_expr: racy reads
    then = gen_block(draw, g, env, depth - 1)
    orelse = gen_block(draw, g, env, depth - 1) if draw(BOOLS) else ast.Skip()
    return ast.If(cond, then, orelse), env


def s_while(draw, g, env, depth):  # T-While, bounded: a read-only counter at π
    i = g.fresh("i")
    trips = draw(ints(0, 3))
    inner = env.bind(VarInfo(i, env.persp, INT, readonly=True))
    body = gen_block(draw, g, inner, depth - 1)
    step = ast.Assign(i, ast.BinOp("+", ast.Var(i), ast.IntLit(1)))
    loop = ast.While(ast.BinOp("<", ast.Var(i), ast.IntLit(trips)), ast.seq(body, step))
    return ast.Decl(i, INT, env.persp, ast.IntLit(0), loop), env


def _split_sizes(n: int) -> list[tuple[int, int]]:
    return [(n1, n2) for n1 in divisors(n) for n2 in divisors(n1)
            if align_to(n1, n2, n)]


def s_split(draw, g, env, depth):  # T-Split
    n1, n2 = pick(draw, _split_sizes(env.persp.n))
    h = env.persp.level
    left = gen_block(draw, g, env.at(Perspective(h, n1)), depth - 1)
    right = gen_block(draw, g, env.at(Perspective(h, n2)), depth - 1)
    return ast.Split(n1, n2, left, right), env


def s_group(draw, g, env, depth):  # T-Group
    q = pick(draw, divisors(env.persp.n)[1:])
    inner = Perspective(env.persp.level, env.persp.n // q)
    return ast.Group(q, gen_block(draw, g, env.at(inner), depth - 1)), env


def s_destruct(draw, g, env, depth):  # T-Destruct
    inner = destruct(env.persp, g.shape)
    return ast.Destruct(gen_block(draw, g, env.at(inner), depth - 1)), env


def _descend_steps(g: Gen, p: Perspective) -> list[tuple[str, int]]:
    """The code-narrowing moves available at π: destruct, or group q (q > 1)."""
    if p in (GRID1, BLOCK1):
        return [("destruct", 0)] + [("group", q) for q in divisors(p.n)[1:]]
    return [("group", q) for q in divisors(p.n)[1:]]


def s_descend(draw, g, env, depth):
    """A chain of destruct / group (T-Destruct, T-Group) down to a narrower π, each
    step optionally carrying one array along (T-Lower before a destruct, T-Partition
    by q before a group q), as kernels narrow grid[1] code and data to thread[1]."""
    return _descend(draw, g, env, depth, draw(ints(1, 4))), env


def _descend(draw, g: Gen, env: Env, depth: int, steps: int) -> ast.Stmt:
    moves = _descend_steps(g, env.persp)
    if steps == 0 or not moves:
        return gen_block(draw, g, env, depth - 1)
    move, q = pick(draw, moves)
    p = env.persp
    inner = destruct(p, g.shape) if move == "destruct" else Perspective(p.level, p.n // q)
    carry = arrays(env, lambda v: v.persp == p and v.array.mem is not MemKind.LOCAL
                   and (move == "destruct" or v.length % q == 0))
    x = pick(draw, carry) if carry and draw(BOOLS) else None
    body_env = env.at(inner)
    if x is not None:
        y = VarInfo(g.fresh(), inner, x.type, x.length if move == "destruct"
                    else x.length // q)
        body_env = body_env.hide(x.name).bind(y)
        _view(g, x, y.name)
    body = _descend(draw, g, body_env, depth, steps - 1)
    s = ast.Destruct(body) if move == "destruct" else ast.Group(q, body)
    if x is None:
        return s
    if move == "destruct":
        return ast.Lower(_label(draw, g), x.name, y.name, s)
    return ast.Partition(_label(draw, g), x.name, y.name, q, s)


def _view(g: Gen, x: VarInfo, y: str) -> None:
    """A view y of a frozen array is frozen too (the same cells, `Gen.frozen`)."""
    if x.name in g.frozen:
        g.frozen.add(y)


def _label(draw, g: Gen) -> str | None:
    return g.fresh("psi") if draw(BOOLS) else None


def _partitionable(env: Env) -> list[tuple[VarInfo, int]]:
    p = env.persp
    return [(v, c) for v in arrays(env, lambda v: v.persp == p
                                   and v.array.mem is not MemKind.LOCAL)
            for c in divisors(p.n) if v.length % c == 0]


def s_partition(draw, g, env, depth):  # T-Partition: y at (h, n/c), pieces len/c
    x, c = pick(draw, _partitionable(env))
    y = g.fresh()
    yp = Perspective(env.persp.level, env.persp.n // c)
    inner = env.hide(x.name).bind(VarInfo(y, yp, x.type, x.length // c))
    _view(g, x, y)
    body = gen_block(draw, g, inner, depth - 1)
    return ast.Partition(_label(draw, g), x.name, y, c, body), env


def s_claim(draw, g, env, depth):  # T-Claim (fixed: n' | n)
    p = env.persp
    x = pick(draw, arrays(env, lambda v: v.persp == p
                                    and v.type.mem is not MemKind.LOCAL))
    at = pick(draw, divisors(p.n))
    y, sub = g.fresh(), Perspective(p.level, at)
    inner = env.hide(x.name).bind(VarInfo(y, sub, x.type, x.length)).at(sub)
    _view(g, x, y)
    body = gen_block(draw, g, inner, depth - 1)
    return ast.Claim(_label(draw, g), x.name, y, at, body), env


def s_lower(draw, g, env, depth):  # T-Lower: y at ↓π
    p = env.persp
    x = pick(draw, arrays(env, lambda v: v.persp == p
                                    and v.type.mem is not MemKind.LOCAL))
    y = g.fresh()
    inner = env.hide(x.name).bind(VarInfo(y, destruct(p, g.shape), x.type, x.length))
    _view(g, x, y)
    body = gen_block(draw, g, inner, depth - 1)
    return ast.Lower(_label(draw, g), x.name, y, body), env


def _async_sources(env: Env, g: Gen | None = None) -> list[VarInfo]:
    """Arrays at thread[1] an async copy may fill (with `g`: none frozen, it writes
    them) or read (without)."""
    return arrays(env, lambda v: v.persp == THREAD1 and v.length > 0
                  and (g is None or v.name not in g.frozen))


def _twin(draw, g: Gen, env: Env, like: VarInfo) -> tuple[ast.Alloc, VarInfo]:
    """A fresh Local or Global array at π shaped like `like` (for the copy forms)."""
    mem = pick(draw, [MemKind.LOCAL, MemKind.GLOBAL])
    z = VarInfo(g.fresh(), env.persp, ArrayType(like.array.elem, mem), like.length)
    return ast.Alloc(z.name, like.array.elem, like.length, mem, ast.Skip()), z


def s_async(draw, g, env, depth):  # T-Async-Partition + T-Async-Memcpy
    x = pick(draw, _async_sources(env, g))
    same = [z for z in _async_sources(env) if z.name != x.name
            and z.type.elem == x.type.elem and z.length == x.length]
    alloc = None
    # a shared destination filled from global memory is the copy the compiler issues
    # as cp.async (lower_async): drawn first where the arrays allow it
    staged = [z for z in same if x.array.mem is MemKind.SHARED
              and z.array.mem is MemKind.GLOBAL]
    if staged and draw(BOOLS):
        z = pick(draw, staged)
    elif same and draw(BOOLS):
        z = pick(draw, same)
    else:  # stage through a fresh array: alloc z in async_partition x into y {...}
        alloc, z = _twin(draw, g, env, x)
        env = env.bind(z)
    y = g.fresh()
    inner = env.hide(x.name).bind(VarInfo(y, THREAD1, AsyncType(x.type), x.length))
    copy = ast.AsyncMemcpy(y, z.name)
    # keep z stable while the copy is deferred: the rest of the body may not touch z
    rest = gen_block(draw, g, inner.hide(z.name), depth - 1) if draw(BOOLS) \
        else ast.Skip()
    s = ast.AsyncPartition(_label(draw, g), x.name, y, ast.seq(copy, rest))
    return (s if alloc is None else ast.seq(alloc, s)), env


def s_stage(draw, g, env, depth):
    """At block[1]: a shared array each thread fills through an asynchronous copy of
    its own global staging array (T-Alloc-Shared, T-Lower, T-Destruct, T-Partition,
    T-Group, T-Alloc, T-Async-Partition, T-Async-Memcpy): the copy a compiler issues
    as cp.async (shared destination, global source). The lower's barrier orders the
    copies before the rest of the block reads the array."""
    T = g.shape.threads
    elem = pick(draw, BASES)
    chunk = pick(draw, [1, 2])
    s, st_, s1, sa, z = (g.fresh() for _ in range(5))
    fill = ast.ArrAssign(ast.Var(z), ast.IntLit(0),
                         gen_expr(draw, g, env.at(THREAD1), elem))
    copy = ast.AsyncPartition(_label(draw, g), s1, sa, ast.AsyncMemcpy(sa, z))
    body = ast.seq(ast.Alloc(z, elem, chunk, MemKind.GLOBAL, ast.Skip()), fill, copy)
    stage = ast.Lower(_label(draw, g), s, st_, ast.Destruct(
        ast.Partition(_label(draw, g), st_, s1, T, ast.Group(T, body))))
    staged = ast.seq(ast.Alloc(s, elem, T * chunk, MemKind.SHARED, ast.Skip()), stage)
    return staged, env.bind(VarInfo(s, BLOCK1, ArrayType(elem, MemKind.SHARED),
                                    T * chunk))


def s_memcpy(draw, g, env, depth):  # T-Memcpy: both arrays at exactly π
    here = arrays(env, lambda v: v.persp == env.persp)
    if not _one_thread(g, env.persp):
        return _shared_copy(draw, g, env, here)
    x = pick(draw, here)
    same = [y for y in here if y.name != x.name and y.type.elem == x.type.elem
            and y.length == x.length]
    if same and draw(BOOLS):
        return ast.Memcpy(x.name, pick(draw, same).name), env
    alloc, z = _twin(draw, g, env, x)
    copy = ast.Memcpy(z.name, x.name) if draw(BOOLS) else ast.Memcpy(x.name, z.name)
    return ast.seq(alloc, copy), env.bind(z)


def _shared_copy(draw, g: Gen, env: Env, here: list[VarInfo]) -> tuple[ast.Stmt, Env]:
    """T-Memcpy where π spans several threads: every thread of the unit makes the whole
    copy (S-Memcpy), so another thread's copy may land after this thread's next
    statements, no barrier between. Race-free by construction: copy x out into a fresh
    twin z (Local where x is: per thread, its contents may differ between threads) and
    write neither afterwards (`Gen.frozen`): every copy then reads the same cells and
    stores the same values (issue 24: copies into written arrays, and writes after a
    copy, made 61 of the 70 real races the oracle declined)."""
    x = pick(draw, here)
    mem = MemKind.LOCAL if x.array.mem is MemKind.LOCAL else \
        pick(draw, [MemKind.LOCAL, MemKind.GLOBAL])
    z = VarInfo(g.fresh(), env.persp, ArrayType(x.array.elem, mem), x.length)
    alloc = ast.Alloc(z.name, x.array.elem, x.length, mem, ast.Skip())
    g.frozen.update((x.name, z.name))
    return ast.seq(alloc, ast.Memcpy(z.name, x.name)), env.bind(z)


RULES = {
    "skip": s_skip, "let": s_let, "alloc": s_alloc, "assign": s_assign,
    "arr_assign": s_arr_assign, "if": s_if, "while": s_while, "split": s_split,
    "group": s_group, "destruct": s_destruct, "partition": s_partition,
    "claim": s_claim, "lower": s_lower, "async": s_async, "memcpy": s_memcpy,
    "call": s_call, "descend": s_descend, "free": s_free, "barrier": s_barrier,
    "stage": s_stage,
}

# ------------------------------------------------------------ functions, programs


def gen_global(draw, g: Gen) -> ast.GlobalDecl:
    elem = pick(draw, BASES)
    n = size(GRID1, g.shape) * pick(draw, [1, 2])
    kind = pick(draw, ["none", "iota", "list"])
    init: ast.GlobalInit = {"none": None, "iota": ast.Iota()}.get(kind)
    if kind == "list":
        init = tuple(literal(draw, elem) for _ in range(n))
    return ast.GlobalDecl(g.fresh("g"), elem, n, init)


@composite
def programs(draw, max_blocks: int = 2, max_threads: int = 4, max_depth: int = 3,
             max_stmts: int = 3, max_fns: int = 2) -> ast.Program:
    """Well-typed Bundl programs: `gen_program`."""
    return gen_program(draw, max_blocks, max_threads, max_depth, max_stmts, max_fns)


@composite
def generated_programs(draw, max_blocks: int = 2, max_threads: int = 4,
                       max_depth: int = 3, max_stmts: int = 3,
                       max_fns: int = 2) -> Generated:
    """`programs()` as the compiler properties draw them: not race-free by
    construction (the oracle has the z3 analysis prove it first)."""
    return Generated(gen_program(draw, max_blocks, max_threads, max_depth, max_stmts,
                                 max_fns), race_free_by_construction=False)


def gen_program(draw, max_blocks: int = 2, max_threads: int = 4, max_depth: int = 3,
                max_stmts: int = 3, max_fns: int = 2) -> ast.Program:
    """Well-typed (rules="fixed") Bundl programs that terminate, index in bounds and do
    not deadlock under any schedule (see `gen_expr`'s note on racy reads).

    The machine is B | max_blocks by T | max_threads (divisors, so they shrink to 1);
    `max_depth` bounds statement nesting (a `descend` chain of destruct/group counts
    once), `max_stmts` the statements per block, `max_fns` the functions. Global arrays
    have B·T or 2·B·T elements, so they partition evenly down to thread[1]. Defaults
    give ~20 statements on average; a soundness run wanting more programs per second
    can pass max_depth=2, max_stmts=2.
    """
    shape = MachineShape(pick(draw, divisors(max_blocks)),
                         pick(draw, divisors(max_threads)))
    g = Gen(shape, max_depth=max_depth, max_stmts=max_stmts)
    globals_ = tuple(gen_global(draw, g) for _ in range(draw(ints(0, 2))))
    env = Env(GRID1, tuple(VarInfo(x.name, GRID1, ArrayType(x.elem, MemKind.GLOBAL),
                                   x.size) for x in globals_))
    for _ in range(draw(ints(0, max_fns))):
        g.fns.append(gen_fn(draw, g, env, gen_block))
    main = gen_block(draw, g, env, max_depth)
    fns = tuple(f.fn for f in g.fns)
    return ast.Program(ast.Machine(shape.blocks, shape.threads), globals_, fns, main)
