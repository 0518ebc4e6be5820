"""Mutators of well-typed Bundl programs that break exactly ONE typing rule of Appendix
A.2 (Prism, seed 004, Figure 14): the type-system-teeth property of DESIGN.md.

Each mutator is named after the rule whose premise it breaks (`T-Split`, `T-Decl` ...),
finds the sites of a program where that premise can be broken without touching any
other rule (it tracks Γ and the code perspective π like the checker does), and returns
a `Mutant`: the new program, the rule the checker must name, and the small-step rules
(S-/E-) whose dynamic check corresponds to the broken premise (empty where the rule
has no dynamic counterpart: types of values, the memory bound m, hiding).

Conventions (paper -> Python): Γ -> `Site.env` (name -> `Bind`), π -> `Site.persp`,
(B, T) -> `Site.shape`; a site is a statement addressed by `Site.path` (child indices
through `walk.child_stmts`) inside `main` or a function body (`Site.owner`).
Insertions put the new statement *before* the site's statement in the same scope
(`seq(new, s)`), so it sees exactly the site's Γ and π.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import cast

from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    THREAD1,
    MachineShape,
    Perspective,
    destruct,
    leq,
)
from gpusem.calculus.bundl.walk import child_stmts

INT = A.BaseType.INT
# The statements with one child statement, their `body` (`walk.child_stmts`).
Scoped = (A.Decl | A.Alloc | A.While | A.Group | A.Destruct | A.Partition | A.Claim
          | A.Lower | A.AsyncPartition)


@dataclass(frozen=True, slots=True)
class Bind:
    persp: Perspective
    type: object  # BaseType | ArrayType | AsyncType | FunType
    hidden_by: str | None = None  # the T- rule of the partition-like that hid it


@dataclass(frozen=True, slots=True)
class Site:
    owner: str  # "main" or a function name
    path: tuple[int, ...]
    stmt: A.Stmt
    persp: Perspective
    env: dict
    shape: MachineShape
    in_fn: bool


@dataclass(frozen=True, slots=True)
class Mutant:
    program: A.Program
    rules: tuple[str, ...]  # check_program must name one of these (the broken rule)
    mutator: str
    dynamic: tuple[str, ...]  # S-/E- rules that must fire when the site runs
    where: str  # a short description of the site, for reports
    paper_ok: bool = False  # also accepted by --rules paper (a known erratum)
    site: Site | None = None  # where the rule was broken (for `probe`)
    parent: A.Program | None = None  # the well-typed program it came from

    @property
    def rule(self) -> str:
        return self.rules[0]


# ------------------------------------------------------------------------ sites


def sites(prog: A.Program) -> Iterator[Site]:
    """Every statement of the program with its Γ and π (as T-* would see them)."""
    shape = MachineShape(prog.machine.blocks, prog.machine.threads)
    env = {g.name: Bind(GRID1, A.ArrayType(g.elem, A.MemKind.GLOBAL))
           for g in prog.globals}
    for f in prog.fns:
        env_f = dict(env) | {p.name: Bind(p.persp, p.type) for p in f.params}
        yield from _walk(f.name, (), f.body, f.persp, env_f, shape, True)
        env = env | {f.name: Bind(f.persp, f.type)}
    yield from _walk("main", (), prog.main, GRID1, env, shape, False)


def _walk(owner, path, s, persp, env, shape, in_fn) -> Iterator[Site]:
    yield Site(owner, path, s, persp, env, shape, in_fn)
    inside = _inside_barriers(s)
    for i, (child, p2, env2) in enumerate(_children(s, persp, env, shape)):
        if p2 is not None and i not in inside:
            yield from _walk(owner, path + (i,), child, p2, env2, shape, in_fn)


def _inside_barriers(s: A.Stmt) -> set[int]:
    """The positions of a sequence that lie inside a hand-written barrier (after its
    `init ψ`, up to its `wait ψ`): not sites, since a statement inserted there would
    also break T-Sync-Init's whole-barrier premise (errata "Runtime forms in source
    programs"), a second broken rule that hides the mutator's."""
    if not isinstance(s, A.Seq):
        return set()
    inside: set[int] = set()
    open_labels: set[str] = set()
    for i, child in enumerate(s.stmts):
        if open_labels:
            inside.add(i)
        match child:
            case A.SyncInit(label=label):
                open_labels.add(label)
            case A.SyncWait(label=label):
                open_labels.discard(label)
    return inside


def _hide(env: dict, x: str, rule: str) -> dict:
    b = env.get(x)
    return env if b is None else env | {x: replace(b, hidden_by=rule)}


def _children(s, persp: Perspective, env: dict, shape):
    """(child, its π or None when undefined, its Γ) for each child statement."""
    h, n = persp.level, persp.n
    match s:
        case A.Decl(name, ty, dp, _, body):  # T-Decl
            return [(body, persp, env | {name: Bind(dp, ty)})]
        case A.Alloc(name, elem, _, mem, body):  # T-Alloc, T-Alloc-Shared
            dp = BLOCK1 if mem is A.MemKind.SHARED else persp
            return [(body, persp, env | {name: Bind(dp, A.ArrayType(elem, mem))})]
        case A.Split(n1, n2, left, right):  # T-Split
            return [(left, Perspective(h, n1), env), (right, Perspective(h, n2), env)]
        case A.Group(q, body):  # T-Group
            ok = q >= 1 and n % q == 0
            return [(body, Perspective(h, n // q) if ok else None, env)]
        case A.Destruct(body):  # T-Destruct
            ok = persp in (BLOCK1, GRID1)
            return [(body, destruct(persp, shape) if ok else None, env)]
        case A.Partition(_, x, y, c, body) if x in env:  # T-Partition
            yp = Perspective(h, max(n // max(c, 1), 1))
            return [(body, persp, _hide(env, x, "T-Partition") | {
                y: Bind(yp, env[x].type)})]
        case A.Claim(_, x, y, at, body) if x in env:  # T-Claim
            sub = Perspective(h, max(at, 1))
            return [(body, sub, _hide(env, x, "T-Claim") | {y: Bind(sub, env[x].type)})]
        case A.Lower(_, x, y, body) if x in env and persp in (BLOCK1, GRID1):  # T-Lower
            return [(body, persp, _hide(env, x, "T-Lower") | {
                y: Bind(destruct(persp, shape), env[x].type)})]
        case A.AsyncPartition(_, x, y, body) if x in env:  # T-Async-Partition
            return [(body, persp, _hide(env, x, "T-Async-Partition") | {
                y: Bind(persp, A.AsyncType(env[x].type))})]
        case _:
            return [(c, persp, env) for c in child_stmts(s)]


# --------------------------------------------------------------------- rewriting


def with_children(s: A.Stmt, kids: tuple[A.Stmt, ...]) -> A.Stmt:
    """`s` with its child statements (walk.child_stmts order) replaced."""
    match s:
        case A.Seq():
            return A.seq(*kids)
        case A.If():
            then, orelse = kids
            return replace(s, then=then, orelse=orelse)
        case A.Split():
            left, right = kids
            return replace(s, left=left, right=right)
        case _ if child_stmts(s):
            return replace(cast(Scoped, s), body=kids[0])  # child_stmts(s) == (body,)
        case _:
            return s


def rewrite_at(prog: A.Program, site: Site, fn: Callable[[A.Stmt], A.Stmt]) -> A.Program:
    def go(s: A.Stmt, path: tuple[int, ...]) -> A.Stmt:
        if not path:
            return fn(s)
        kids = list(child_stmts(s))
        kids[path[0]] = go(kids[path[0]], path[1:])
        return with_children(s, tuple(kids))

    if site.owner == "main":
        return replace(prog, main=go(prog.main, site.path))
    fns = tuple(replace(f, body=go(f.body, site.path)) if f.name == site.owner else f
                for f in prog.fns)
    return replace(prog, fns=fns)


def insert_before(prog: A.Program, site: Site, new: A.Stmt) -> A.Program:
    return rewrite_at(prog, site, lambda s: A.seq(new, s))


def fresh_name(prog: A.Program, base: str = "mut") -> str:
    from gpusem.calculus.bundl.printer import print_program

    text = print_program(prog)
    k = 0
    while f"{base}{k}" in text:
        k += 1
    return f"{base}{k}"


# ----------------------------------------------------------------- helpers


def _visible(site: Site, pred) -> list[tuple[str, Bind]]:
    return sorted((x, b) for x, b in site.env.items()
                  if b.hidden_by is None and pred(b))


def _is_base(b: Bind) -> bool:
    return isinstance(b.type, A.BaseType)


def _is_array(b: Bind) -> bool:
    return isinstance(b.type, A.ArrayType)


def _literal(ty: A.BaseType) -> A.Expr:
    ones: dict[A.BaseType, A.Expr] = {A.BaseType.INT: A.IntLit(1),
                                      A.BaseType.FLOAT: A.FloatLit(1.0),
                                      A.BaseType.BOOL: A.BoolLit(True)}
    return ones[ty]


def _assigned(s: A.Stmt, name: str) -> bool:
    if isinstance(s, A.Assign) and s.name == name:
        return True
    return any(_assigned(c, name) for c in child_stmts(s))


def _nondivisor(n: int) -> int:
    """A q with q ∤ n and n // q ≥ 1 where one exists (n ≥ 3), else n + 1."""
    return next((q for q in range(2, n) if n % q), n + 1)


Choice = tuple[Site, Callable[[A.Program, Site], A.Program], str]


# --------------------------------------------------------------------- mutators
# Each returns the candidate rewrites; `mutate` picks one. A mutator's name is the
# rule it breaks; `DYNAMIC` names the small-step rule that checks the same premise.


def t_decl(prog, site: Site) -> list:
    """T-Decl: widen a `let`'s perspective past the code's (write down, π' ≤ π)."""
    s = site.stmt
    if not isinstance(s, A.Decl) or site.persp == GRID1 or _assigned(s.body, s.name):
        return []
    return [lambda p: rewrite_at(p, site, lambda d: replace(cast(A.Decl, d),
                                                            persp=GRID1))]


def t_assn(prog, site: Site) -> list:
    """T-Assn: assign a variable broader than the code (write down)."""
    xs = _visible(site, lambda b: _is_base(b) and not leq(b.persp, site.persp))
    return [lambda p, x=x: insert_before(p, site, A.Assign(x, A.Var(x))) for x, _ in xs
            if leq(site.persp, site.env[x].persp)]  # reading x is fine (read up)


def t_var(prog, site: Site) -> list:
    """T-Var: read a scalar narrower than the code (read up, π ≤ π')."""
    xs = _visible(site, lambda b: _is_base(b) and not leq(site.persp, b.persp))
    return [lambda p, x=x, b=b: insert_before(p, site, A.Decl(
        fresh_name(p), b.type, site.persp, A.Var(x), A.Skip())) for x, b in xs]


def t_arr_assn(prog, site: Site) -> list:
    """T-Arr-Assn(-Shared): store into an array broader than the code (write down);
    the stored value reads the same cell (read up holds)."""
    xs = _visible(site, lambda b: _is_array(b) and not leq(b.persp, site.persp)
                  and leq(site.persp, b.persp)
                  and (b.type.mem is not A.MemKind.SHARED or leq(site.persp, BLOCK1)))
    return [lambda p, x=x: insert_before(p, site, A.ArrAssign(
        A.Var(x), A.IntLit(0), A.Index(A.Var(x), A.IntLit(0)))) for x, _ in xs]


def t_arr_access(prog, site: Site) -> list:
    """T-Arr-Access(-Shared): read an array narrower than the code (read up)."""
    xs = _visible(site, lambda b: _is_array(b) and not leq(site.persp, b.persp)
                  and b.type.mem is not A.MemKind.SHARED)
    return [lambda p, x=x, b=b: insert_before(p, site, A.Decl(
        fresh_name(p), b.type.elem, site.persp, A.Index(A.Var(x), A.IntLit(0)),
        A.Skip())) for x, b in xs]


def t_alloc_shared(prog, site: Site) -> list:
    """T-Alloc-Shared: allocate Shared memory below (or above) block[1] (fixed's
    premise π = (Block, 1); the paper's rule has none, errata)."""
    if site.persp == BLOCK1 or site.in_fn:
        return []
    return [lambda p: insert_before(p, site, A.Alloc(
        fresh_name(p), INT, 1, A.MemKind.SHARED, A.Skip()))]


def t_split(prog, site: Site) -> list:
    """T-Split: arms that do not align to n (the left arm takes all n)."""
    s = site.stmt
    if not isinstance(s, A.Split) or isinstance(s.left, A.Skip) and isinstance(
            s.right, A.Skip):
        return []

    def left_takes_all(x: A.Stmt) -> A.Stmt:
        split = cast(A.Split, x)  # the site's statement
        return replace(split, n1=site.persp.n, n2=max(split.n2, 1))
    return [lambda p: rewrite_at(p, site, left_takes_all)]


def t_group(prog, site: Site) -> list:
    """T-Group: group by q ∤ n."""
    s = site.stmt
    if not isinstance(s, A.Group) or isinstance(s.body, A.Skip):
        return []
    return [lambda p: rewrite_at(p, site, lambda g: replace(
        cast(A.Group, g), q=_nondivisor(site.persp.n)))]


def t_destruct(prog, site: Site) -> list:
    """T-Destruct: destruct code that is neither grid[1] nor block[1]."""
    if site.persp in (BLOCK1, GRID1):
        return []
    return [lambda p: insert_before(p, site, A.Destruct(A.Decl(
        fresh_name(p), INT, THREAD1, A.IntLit(0), A.Skip())))]


def _own_arrays(site: Site) -> list[str]:
    """Shared/Global arrays at exactly the code's perspective (partition sources)."""
    return [x for x, _ in _visible(site, lambda b: _is_array(b) and b.persp == site.persp
                                   and b.type.mem is not A.MemKind.LOCAL)]


def t_partition(prog, site: Site) -> list:
    """T-Partition: partition by a c ∤ n (a new partition with an empty body, so no
    other premise depends on the piece's perspective)."""
    return [lambda p, x=x: insert_before(p, site, A.Partition(
        None, x, fresh_name(p), _nondivisor(site.persp.n), A.Skip()))
        for x in _own_arrays(site)]


def t_partition_source(prog, site: Site) -> list:
    """T-Partition: partition an array that lives at another perspective than the code
    (x :^π τ[]^l, π the code's)."""
    xs = _visible(site, lambda b: _is_array(b) and b.persp != site.persp
                  and b.type.mem is not A.MemKind.LOCAL)
    return [lambda p, x=x: insert_before(p, site, A.Partition(
        None, x, fresh_name(p), 1, A.Skip())) for x, _ in xs]


def t_partition_hidden(prog, site: Site) -> list:
    """Hiding (T-Partition's premise context drops x): use x inside its partition."""
    xs = sorted(x for x, b in site.env.items()
                if b.hidden_by == "T-Partition" and _is_array(b))
    return [lambda p, x=x: insert_before(p, site, A.Decl(
        fresh_name(p), site.env[x].type.elem, site.persp,
        A.Index(A.Var(x), A.IntLit(0)), A.Skip())) for x in xs]


def t_claim(prog, site: Site) -> list:
    """T-Claim: claim at n' ∤ n (fixed; the paper's n' ≤ n accepts 1 < n' < n), a new
    claim with an empty body."""
    return [lambda p, x=x: insert_before(p, site, A.Claim(
        None, x, fresh_name(p), _nondivisor(site.persp.n), A.Skip()))
        for x in _own_arrays(site)]


def v_function(prog, site: Site) -> list:
    """V-Function: a function declaring less memory (`uses m`) than its body needs."""
    if site.path or site.owner == "main":
        return []  # one candidate per function: its body's root
    from gpusem.typing_rules.bundl.stmt import check_program

    need = check_program(prog).get(site.owner, 0)
    if need <= 0:
        return []
    fns = lambda p: tuple(replace(f, uses=need - 1) if f.name == site.owner else f
                          for f in p.fns)
    return [lambda p: replace(p, fns=fns(p))]


def t_lower(prog, site: Site) -> list:
    """T-Lower: lower from code that is neither grid[1] nor block[1]."""
    if site.persp in (BLOCK1, GRID1):
        return []
    xs = _visible(site, lambda b: _is_array(b) and b.persp == site.persp
                  and b.type.mem is not A.MemKind.LOCAL)
    return [lambda p, x=x: insert_before(p, site, A.Lower(
        None, x, fresh_name(p), A.Skip())) for x, _ in xs]


def t_function_call(prog, site: Site) -> list:
    """T-Function-Call: call a function from code at another perspective."""
    fs = _visible(site, lambda b: isinstance(b.type, A.FunType)
                  and b.persp != site.persp and not b.type.params)
    return [lambda p, f=f: insert_before(p, site, A.Call(f, ())) for f, _ in fs]


def t_assn_pointer(prog, site: Site) -> list:
    """T-Assn (fixed: base types only): rebind a pointer to itself."""
    xs = _visible(site, lambda b: _is_array(b) and b.persp == site.persp)
    return [lambda p, x=x: insert_before(p, site, A.Assign(x, A.Var(x))) for x, _ in xs]


def t_if(prog, site: Site) -> list:
    """T-If: a condition that is not bool."""
    if not isinstance(site.stmt, A.If):
        return []
    return [lambda p: rewrite_at(p, site, lambda s: replace(cast(A.If, s),
                                                            cond=A.IntLit(1)))]


def t_partition_id(prog, site: Site) -> list:
    """T-Partition-Id: partition_id at grid[1] (π < (Grid, 1) fails)."""
    if site.persp != GRID1:
        return []
    return [lambda p: insert_before(p, site, A.Decl(
        fresh_name(p), INT, GRID1, A.PartitionId(), A.Skip()))]


# name -> (finder, rule(s) the checker may name, dynamic rules, also paper-accepted)
MUTATORS: dict[str, tuple] = {
    "T-Decl": (t_decl, "T-Decl", ("S-Decl",), False),
    "T-Assn": (t_assn, "T-Assn", ("S-Assn",), False),
    "T-Var": (t_var, "T-Var", ("E-Var",), False),
    "T-Arr-Assn": (t_arr_assn, ("T-Arr-Assn", "T-Arr-Assn-Shared"),
                   ("S-Arr-Assn", "S-Arr-Assn-Shared"), False),
    "T-Arr-Access": (t_arr_access, "T-Arr-Access",
                     ("E-Arr-Access", "E-Arr-Access-Shared"), False),
    "T-Alloc-Shared": (t_alloc_shared, "T-Alloc-Shared", ("S-Alloc-Shared",), True),
    "T-Split": (t_split, "T-Split", ("S-Split",), False),
    "T-Group": (t_group, "T-Group", ("S-Group",), False),
    "T-Destruct": (t_destruct, "T-Destruct",
                   ("S-Destruct-Block", "S-Destruct-Grid", "S-Destruct-Done"), False),
    "T-Partition": (t_partition, "T-Partition", ("S-Partition",), False),
    "T-Partition-Source": (t_partition_source, "T-Partition", ("S-Partition",), False),
    "T-Partition-Hidden": (t_partition_hidden, "T-Arr-Access", (), False),
    "T-Claim": (t_claim, "T-Claim", ("S-Claim",), False),
    "V-Function": (v_function, "V-Function", (), False),
    "T-Lower": (t_lower, "T-Lower", ("S-Lower",), False),
    "T-Function-Call": (t_function_call, "T-Function-Call", ("S-Function-Call",), False),
    "T-Assn-Pointer": (t_assn_pointer, "T-Assn", (), True),
    "T-If": (t_if, "T-If", ("S-If",), False),
    "T-Partition-Id": (t_partition_id, "T-Partition-Id", ("E-Partition-Id",), False),
}


def candidates(prog: A.Program, name: str) -> list[tuple[Site, Callable]]:
    finder = MUTATORS[name][0]
    out: list[tuple[Site, Callable]] = []
    for site in sites(prog):
        out.extend((site, make) for make in finder(prog, site))
    return out


def mutate(prog: A.Program, name: str, rng: random.Random | int = 0) -> Mutant | None:
    """One mutant of `prog` breaking the rule of mutator `name`, or None where the
    program has no site for it. `rng` picks the site (deterministic from a seed)."""
    rng = rng if isinstance(rng, random.Random) else random.Random(rng)
    found = candidates(prog, name)
    if not found:
        return None
    site, make = rng.choice(found)
    _, rules, dynamic, paper_ok = MUTATORS[name]
    rules = (rules,) if isinstance(rules, str) else rules
    where = f"{site.owner}:{type(site.stmt).__name__}@{site.persp}"
    return Mutant(make(prog), rules, name, dynamic, where, paper_ok, site, prog)


def probe(prog: A.Program, site: Site) -> A.Program:
    """`prog` with a certain trap (`1 / 0`, rule E-Bop) just before the site's
    statement: running it tells whether (and on which schedules) the site is reached,
    so that a dynamic check that did not fire is told apart from dead code."""
    trap = A.Decl(fresh_name(prog, "probe"), INT, site.persp,
                  A.BinOp("/", A.IntLit(1), A.IntLit(0)), A.Skip())
    return insert_before(prog, site, trap)


def mutants(prog: A.Program, seed: int = 0) -> Iterator[Mutant]:
    """One mutant per mutator that applies to `prog`."""
    for k, name in enumerate(MUTATORS):
        m = mutate(prog, name, random.Random(seed * 1000 + k))
        if m is not None:
            yield m
