"""Generated Cypress programs with their mappings (seed 001), by construction.

One logical description, a tiled GEMM after Fig. 5 with partition_by_blocks
(C = A @ B over clear, gemm and copy trees: the shape of Fig. 8a) and, independent of
it, a copy X = A (so that tensors of unrelated trees can share shared memory only
through allocation's write-after-read edges), on small integer matrices, and a drawn
mapping: the processor levels the trees descend through
(BLOCK, then some of WARPGROUP, WARP, THREAD), the pieces at each level, the K tile,
the memory of every argument of every instance, and optionally a shared-memory bound
that forces the allocation pass to alias. Every draw is a small integer or a choice
from a short list, so hypothesis shrinks a finding to fewer levels, fewer pieces and
the first memories in each list; the block's schedule: warp specialisation on or
off and a pipeline depth 1-4 (Sec. 4.2.5). Some mappings are illegal (a memory a level cannot
see, a NONE leaf): the legality checker says which, and the target counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

LEVELS = ("WARPGROUP", "WARP", "THREAD")
TASKS = ("clear", "gemm", "copy")
PARAMS = {"clear": ("C",), "gemm": ("C", "A", "B"), "copy": ("S", "D")}
# what each level's instance may map a tensor to, the first the likeliest legal
MEMS = {"BLOCK": ("NONE", "SHARED", "GLOBAL"),
        "WARPGROUP": ("NONE", "SHARED", "GLOBAL"),
        "WARP": ("NONE", "SHARED", "GLOBAL"),
        "THREAD": ("REGISTER", "SHARED", "GLOBAL")}
# a leaf reads its data (l.180): NONE there is illegal (Mapping-None), drawn rarely
LEAF_MEMS = {"BLOCK": ("SHARED", "GLOBAL"), "WARPGROUP": ("SHARED", "GLOBAL"),
             "WARP": ("SHARED", "GLOBAL"), "THREAD": ("REGISTER", "SHARED", "GLOBAL")}

VARIANTS = '''
@task("main", Inner, reads=["A", "B"], writes=["C", "X"])
def gemm_top(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32],
             X: tensor[2, f32]):
    W = tunable(int)
    M, N, K = C.shape[0], C.shape[1], A.shape[1]
    Ap = partition_by_blocks(A, (M, W))
    Bp = partition_by_blocks(B, (W, N))
    Cacc: tensor[2, f32] = make_tensor(M, N)
    launch("clear", Cacc)
    for k in srange(cdiv(K, W)):
        launch("gemm", Cacc, Ap[0, k], Bp[k, 0])
    launch("copy", Cacc, C)
    launch("copy", A, X)


@task("clear", Inner, writes=["C"])
def clear_rows(C: tensor[2, f32]):
    T = tunable(int)
    Cp = partition_by_blocks(C, (C.shape[0] // T, C.shape[1]))
    for i in prange(T):
        launch("clear", Cp[i, 0])


@task("clear", Leaf, writes=["C"])
def clear_leaf(C: tensor[2, f32]):
    clear(C)


@task("gemm", Inner, reads=["A", "B", "C"], writes=["C"])
def gemm_rows(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32]):
    T = tunable(int)
    Cp = partition_by_blocks(C, (C.shape[0] // T, C.shape[1]))
    Ap = partition_by_blocks(A, (A.shape[0] // T, A.shape[1]))
    for i in prange(T):
        launch("gemm", Cp[i, 0], Ap[i, 0], B)


@task("gemm", Leaf, reads=["A", "B", "C"], writes=["C"])
def gemm_leaf(C: tensor[2, f32], A: tensor[2, f32], B: tensor[2, f32]):
    mma(C, A, B)


@task("copy", Inner, reads=["S"], writes=["D"])
def copy_rows(S: tensor[2, f32], D: tensor[2, f32]):
    T = tunable(int)
    Sp = partition_by_blocks(S, (S.shape[0] // T, S.shape[1]))
    Dp = partition_by_blocks(D, (D.shape[0] // T, D.shape[1]))
    for i in prange(T):
        launch("copy", Sp[i, 0], Dp[i, 0])


@task("copy", Leaf, reads=["S"], writes=["D"])
def copy_leaf(S: tensor[2, f32], D: tensor[2, f32]):
    copy(S, D)
'''


@dataclass(frozen=True)
class Level:
    proc: str
    pieces: dict[str, int]               # per task: the prange extent (T)
    mems: dict[str, tuple[str, ...]]     # per task: one memory per parameter


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int
    w: int
    levels: tuple[Level, ...]            # below the BLOCK, outermost first
    leaf_mems: dict[str, tuple[str, ...]]
    smem: int | None                     # a shared-memory bound in bytes, or none
    warpspecialize: bool = False         # the block's schedule (Fig. 5b l.21-22)
    pipeline: int = 1

    def text(self) -> str:
        return render(self)


def _instance(task: str, depth: int, levels: tuple[Level, ...]) -> str:
    return f"{task}_{depth}" if depth < len(levels) else f"{task}_leaf"


def render(c: Case) -> str:
    head = [f"# inputs: C=float32[{c.m},{c.n}] A=float32[{c.m},{c.k}] "
            f"B=float32[{c.k},{c.n}] X=float32[{c.m},{c.k}]"]
    if c.smem is not None:
        head.append(f"# smem: {c.smem}")
    top_calls = ", ".join(f'"{_instance(t, 0, c.levels)}"' for t in TASKS)
    maps = ['TaskMapping(instance="gemm_top", variant="gemm_top", proc=BLOCK, '
            'mems=[GLOBAL, GLOBAL, GLOBAL, GLOBAL], '
            f'tunables={{"W": {c.w}}}, entrypoint=True, calls=[{top_calls}]'
            f'{_schedule(c)})']
    for depth, lv in enumerate(c.levels):
        for t in TASKS:
            name = _instance(t, depth, c.levels)
            child = _instance(t, depth + 1, c.levels)
            mems = ", ".join(lv.mems[t])
            maps.append(f'TaskMapping(instance="{name}", variant="{t}_rows", '
                        f'proc={_proc(depth, c)}, mems=[{mems}], '
                        f'tunables={{"T": {lv.pieces[t]}}}, calls=["{child}"])')
    for t in TASKS:
        mems = ", ".join(c.leaf_mems[t])
        maps.append(f'TaskMapping(instance="{t}_leaf", variant="{t}_leaf", '
                    f'proc={c.levels[-1].proc if c.levels else "BLOCK"}, '
                    f'mems=[{mems}])')
    return "\n".join(head) + "\n" + VARIANTS + "\n\nMAPPING = [\n    " + \
        ",\n    ".join(maps) + ",\n]\n"


def _schedule(c: Case) -> str:
    ws = ", warpspecialize=True" if c.warpspecialize else ""
    return ws + (f", pipeline={c.pipeline}" if c.pipeline > 1 else "")


def _proc(depth: int, c: Case) -> str:
    """Instance at depth d runs on the level above its launches' level: the block
    for depth 0, then each drawn level in turn."""
    return "BLOCK" if depth == 0 else c.levels[depth - 1].proc


@st.composite
def cases(draw: st.DrawFn) -> Case:
    m = draw(st.sampled_from((4, 8, 16)))
    n = draw(st.sampled_from((4, 8)))
    k = draw(st.sampled_from((4, 8)))
    w = draw(st.sampled_from([d for d in (4, 2, 8, 1) if k % d == 0]))
    chosen = [lv for lv in LEVELS if draw(st.booleans())]
    rows = m
    levels: list[Level] = []
    for depth, proc in enumerate(chosen):
        pieces: dict[str, int] = {}
        mems: dict[str, tuple[str, ...]] = {}
        above = "BLOCK" if depth == 0 else chosen[depth - 1]
        for t in TASKS:
            pieces[t] = draw(st.sampled_from([d for d in (2, 1, 4) if rows % d == 0]))
            # NONE (never materialised, l.395) for the accumulator, as Fig. 5b
            mems[t] = tuple(draw(st.sampled_from(
                MEMS[above] if name in ("C", "S") else MEMS[above][1:]))
                for name in PARAMS[t])
        # all three trees split rows alike (the clear's pieces are the gemm's)
        pieces = {t: pieces["gemm"] for t in TASKS}
        rows //= pieces["gemm"]
        levels.append(Level(proc, pieces, mems))
    leaf_level = chosen[-1] if chosen else "BLOCK"
    leaf_mems = {t: tuple(draw(st.sampled_from(LEAF_MEMS[leaf_level]))
                          for _ in PARAMS[t]) for t in TASKS}
    if draw(st.integers(0, 15)) == 15:  # an illegal mapping now and then
        leaf_mems["gemm"] = ("NONE", *leaf_mems["gemm"][1:])
    smem = draw(st.one_of(st.none(), st.sampled_from((1024, 2048, 4096))))
    # drawn last, so that the shrinker drops the schedule before anything else
    ws = draw(st.booleans())
    pipe = draw(st.integers(1, 4))
    return Case(m, n, k, w, tuple(levels), leaf_mems, smem, ws, pipe)


def programs() -> st.SearchStrategy[str]:
    return cases().map(render)
