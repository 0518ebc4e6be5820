"""Pass `from_gpuir`: an analysed GPU IR proc -> one GKernel per CudaDeviceFunction.

Exo-GPU Section 4.2 (code generation), structurally:
  cuda_tasks nest       -> task indices decoded from blockIdx.x (one cluster a task);
  cuda_threads loop     -> a thread-index guard: each thread computes, from its natural
                           index t = ctarank * blockDim + threadIdx.x (Definition 4.1)
                           and the loop's tiling (collective analysis), the one
                           iteration it runs; collectives of whole warps give
                           warp-uniform branches;
  CudaWarps             -> a guard on the warp range (warp specialisation);
  seq loop / if         -> for / if;
  allocations           -> by memory type (`storage.py`): registers -> zero-filled
                           locals, shared memory -> GShared, mbarriers -> GMbarriers;
  Assign / Reduce       -> one exact C assignment (`cexpr.py`);
  Fence/Arrive/Await    -> GFence/GArrive/GAwait with the collective that runs them;
  instruction calls     -> GInstr with resolved windows.

Host code: tensor maps (`A_map = A[0:N, 0:N] @ Sm90_tensorMap(...)`), lowered as
window aliases of their array (`_is_tensor_map`, `unmap`); host code after the last
kernel is a kernel by then (`host.py`, before this pass); any other statement outside
a CudaDeviceFunction is "unsupported".

Conventions: σ -> C locals of the same names; ω (thread mapping) -> `ThreadMapping`;
`B` blockDim, `C` clusterDim.

Note: allocations start zero-filled in the sequential reading; reading a cell before
writing it is undefined in the parallel program. Registers are zeroed (free); shared
memory is not (the cpu harness poisons it, so a read of unwritten shared memory shows).

Note: the offsets of thread mappings are computed with plain C `+ - *`: they are
below blockDim x clusterDim (< 2^15), so no overflow is possible, and the text stays
readable.
"""

from __future__ import annotations

from math import prod

from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.ctrl import affine, eval_c
from gpusem.calculus.gpuir.walk import walk
from gpusem.compiler.gpuir_cuda import kir as K
from gpusem.compiler.gpuir_cuda.cexpr import NP_DTYPES, c_bool, c_data, c_int, ctype
from gpusem.compiler.gpuir_cuda.errors import unsupported
from gpusem.compiler.gpuir_cuda.faults import active
from gpusem.compiler.gpuir_cuda.storage import (
    BarrierStorage,
    Storage,
    barrier_storage,
    data_storage,
)
from gpusem.typing_rules.gpuir.collective import Analysis, ThreadMapping, derive_warps
from gpusem.typing_rules.gpuir.memory import distributed_dims

C_RESERVED = {"int", "float", "double", "char", "void", "for", "if", "else", "while",
              "do", "return", "const", "static", "auto", "unsigned", "signed", "long",
              "short", "struct", "union", "class", "new", "delete", "this", "switch",
              "case", "default", "break", "continue", "goto", "sizeof", "true", "false",
              "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "bool",
              "template", "typename", "namespace", "operator", "private", "public",
              "register", "volatile", "extern", "inline", "min", "max"}


# The async unit a commit group collects, by the timeline of the Arrives on it.
COMMIT_KINDS = {"Sm80_cp_async": "commit_cp_async", "wgmma_async": "commit_wgmma",
                "tma_to_gmem_async": "commit_bulk"}


def from_gpuir(proc: A.Proc, an: Analysis, pad_rows: bool = False
               ) -> list[K.GKernel]:
    """`pad_rows`: swizzled shared tiles stored with padded rows (storage.row_pad)."""
    devices = [s for s in proc.body if isinstance(s, A.CudaDeviceFunction)]
    maps = {s.name: s.source for s in proc.body
            if isinstance(s, A.WindowStmt) and _is_tensor_map(s)}
    others = [s for s in proc.body
              if not isinstance(s, A.CudaDeviceFunction) and not _is_tensor_map(s)]
    if others:
        raise unsupported("CPU code outside a CudaDeviceFunction", others[0].span)
    names = [proc.name] if len(devices) == 1 else \
        [f"{proc.name}_{i}" for i in range(len(devices))]
    dist = distributed_dims(an)
    return [_Lowerer(proc, an, d, n, maps, dist, pad_rows).kernel()
            for d, n in zip(devices, names)]


def _is_tensor_map(s: A.Stmt) -> bool:
    """Host code the compiler lowers: a tensor map over a global array
    (`A_map = A[0:N, 0:N] @ Sm90_tensorMap(128, 128, 32)`). Note: its TMA copies are
    lowered to bulk row copies (instr.py), which read the array itself, so the map is
    a window alias of the array here: no CUtensorMap is made or passed."""
    return isinstance(s, A.WindowStmt) and s.mem.name == "Sm90_tensorMap"


def _check_name(name: str, span) -> str:
    if name in C_RESERVED or name.startswith(("gs_", "__")):
        raise unsupported(f"the name {name} is reserved in the generated C++", span)
    return name


def offset_c(m: ThreadMapping, env: dict[str, int], upto: int | None = None) -> str:
    """offset(σ) of a thread mapping (its first `upto` terms) as C."""
    terms = m.terms if upto is None else m.terms[:upto]
    parts = [str(m.base)] if m.base or not terms else []
    for y, lo, s in terms:
        lo_v = int(eval_c(lo, env))
        y_text = f"({y} - {lo_v})" if lo_v else y
        parts.append(f"{y_text} * {s}" if s != 1 else y_text)
    return " + ".join(parts)


def membership(m: ThreadMapping, env: dict[str, int]) -> str:
    """`t ∈ f_ω(σ)` as C (t = gs_t)."""
    off, b = offset_c(m, env), m.launch.block_dim
    rel = f"gs_t - ({off})" if off != "0" else "gs_t"
    if m.ctas == 1:
        return f"(unsigned)({rel}) < {m.length}u"
    return (f"(unsigned)({rel}) < {m.ctas * b}u && "
            f"({rel}) % {b} < {m.length}")


def warp_branch(m: ThreadMapping, env: dict[str, int]) -> str:
    """The warp-specialised branch of a CudaWarps block: a test of the warp index
    (uniform in every warp; Section 3.4's warp_config). Its setmaxnreg is emitted
    by `roles.py`, where asked, once the roles' code is split."""
    b = m.launch.block_dim
    if m.terms or m.base % 32 or m.length % 32:
        return membership(m, env)
    first, n = m.base // 32, m.length // 32
    warp = "gs_t / 32" if m.ctas == 1 else f"gs_t % {b} / 32"
    rel = f"{warp} - {first}" if first else warp
    return f"(unsigned)({rel}) < {n}u"


def warp_roles(dev: A.CudaDeviceFunction) -> tuple[K.WarpRole, ...]:
    """The warp config as runs of warps with one register count (Section 3.4's
    setmaxnreg_dec / _inc): consecutive configs with the same counts are one run,
    so a warpgroup of one DMA warp and three idle ones is one run of 4."""
    out: list[K.WarpRole] = []
    first = 0
    for w in dev.warp_config:
        regs = (w.setmaxnreg_dec, w.setmaxnreg_inc)
        if out and (out[-1].dec, out[-1].inc) == regs:
            r = out[-1]
            out[-1] = K.WarpRole((*r.names, w.name), r.first, r.nwarps + w.nwarps,
                                 *regs)
        else:
            out.append(K.WarpRole((w.name,), first, w.nwarps, *regs))
        first += w.nwarps
    return tuple(out)


def mapping_of(an: Analysis, s: A.Stmt) -> ThreadMapping:
    """The collective that runs `s`: the analysis gives one to every statement of the
    device code it accepted."""
    m = an.mapping(s)
    assert m is not None, f"no thread mapping for {type(s).__name__}"
    if not m.simple:
        raise unsupported(f"a strided collective ({m.describe()}): the lowering "
                          "handles runs of contiguous threads", s.span)
    return m


class _Lowerer:
    def __init__(self, proc: A.Proc, an: Analysis, dev: A.CudaDeviceFunction,
                 name: str, maps: dict[str, A.DRead], dist: dict[int, int],
                 pad_rows: bool = False):
        self.proc, self.an, self.dev, self.name = proc, an, dev, name
        self.maps, self.dist, self.pad_rows = maps, dist, pad_rows
        self.env = dict(an.defines)
        self.vars: dict[str, Storage] = {}
        self.bars: dict[str, BarrierStorage] = {}
        self.pending_tx: dict[str, int] = {}
        # instances of the statement being lowered: the product of the extents of
        # the enclosing cuda_threads loops inside one CTA (a copy in `for w in
        # cuda_threads(0, 4, unit=cuda_warp)` is issued by 4 warps, each its own
        # window: 4 windows of bytes complete on the CTA's barrier)
        self.instances = 1
        self.mbar_arrivals, self.commit_kinds = _barrier_usage(dev, an, dist)
        self.ring = _ring_depth(dev, an)

    # ---------------------------------------------------------------- kernel
    def kernel(self) -> K.GKernel:
        params = []
        for p in self.proc.params:
            _check_name(p.name, p.span)
            match p:
                case A.CtrlParam():
                    params.append(K.KParam(p.name, "int32", "int", 0))
                case A.DataParam(dtype=t, shape=sh, mem=m):
                    shape = tuple(int(eval_c(c, self.env)) for c in sh)
                    st = data_storage(p.name, t, shape, m, None, p.span)
                    if st.space != "global" or t not in NP_DTYPES:
                        raise unsupported(f"parameter {p.name} ({t.value} @ {m.name})",
                                          p.span)
                    self.vars[p.name] = st
                    params.append(K.KParam(p.name, NP_DTYPES[t], ctype(t),
                                           max(1, prod(shape))))
        launch = mapping_of(self.an, self.dev.body[0]).launch
        tasks, inner = self.task_nest()
        ntasks = prod(hi - lo for _, lo, hi in tasks)
        if ntasks * launch.cluster_dim >= 2**31:
            raise unsupported(f"{ntasks} tasks: more CTAs than gridDim.x holds",
                              self.dev.span)
        body = self.prologue(tasks, launch.block_dim, launch.cluster_dim)
        body += self.block(inner)
        return K.GKernel(self.name, tuple(params), ntasks * launch.cluster_dim,
                         launch.block_dim, launch.cluster_dim, tuple(body),
                         span=self.dev.span, roles=warp_roles(self.dev))

    def task_nest(self):
        tasks, body = [], self.dev.body
        while len(body) == 1 and isinstance(body[0], A.For) \
                and body[0].mode is A.LoopMode.CUDA_TASKS:
            f = body[0]
            lo, hi = self.const(f.lo, f.span), self.const(f.hi, f.span)
            tasks.append((_check_name(f.var, f.span), lo, max(hi, lo)))
            body = f.body
        return tasks, body

    def prologue(self, tasks, b: int, c: int) -> list[K.GStmt]:
        out: list[K.GStmt] = [
            K.GComment(f"launch: {prod(h - lo for _, lo, h in tasks)} task(s) x "
                       f"{c} CTA(s) of {b} threads"),
            K.GLet("gs_rank", f"(int)(blockIdx.x % {c}u)" if c > 1 else "0"),
            K.GLet("gs_t", f"gs_rank * {b} + (int)threadIdx.x"),
            K.GLet("gs_task", f"(int)(blockIdx.x / {c}u)" if c > 1 else
                   "(int)blockIdx.x"),
        ]
        stride = 1
        for var, lo, hi in reversed(tasks):  # the innermost task varies fastest
            n = hi - lo
            out.append(K.GLet(var, f"{lo} + (gs_task / {stride}) % {n}"
                              if stride > 1 else f"{lo} + gs_task % {n}"))
            stride *= n
        return out

    def const(self, c: A.CExpr, span) -> int:
        a = affine(c, self.env)
        if a is None or not a.is_const:
            raise unsupported("a bound that is not fixed by the -D values", span)
        return a.const

    # ------------------------------------------------------------ statements
    def block(self, body: tuple[A.Stmt, ...]) -> list[K.GStmt]:
        out: list[K.GStmt] = []
        for s in body:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: A.Stmt) -> list[K.GStmt]:
        sp = s.span
        match s:
            case A.For(mode=A.LoopMode.SEQ, var=v, lo=lo, hi=hi, body=b):
                return [K.GFor(_check_name(v, sp), c_int(lo), c_int(hi),
                               tuple(self.block(b)), sp)]
            case A.For(mode=A.LoopMode.CUDA_THREADS):
                return self.thread_loop(s)
            case A.For():
                raise unsupported("cuda_tasks inside a task body", sp)
            case A.CudaWarps(body=b):
                m = derive_warps(mapping_of(self.an, s), s)
                note = f"CudaWarps: warp(s) {m.base // 32} .. " \
                    f"{(m.base + m.length) // 32 - 1} of {s.name or 'the CTA'}"
                whole = not m.terms and m.base % 32 == 0 and m.length % 32 == 0
                warps = (m.base // 32, (m.base + m.length) // 32) if whole else None
                return [K.GIf(warp_branch(m, self.env), tuple(self.block(b)), sp,
                              note, warps)]
            case A.If(cond=c, body=b):
                return [K.GIf(c_bool(c), tuple(self.block(b)), sp)]
            case A.Assign(name=n, idx=idx, rhs=e):
                st = self.vars[n]
                return [K.GPrim(f"{self.element(n, idx, sp)} = "
                                f"{c_data(e, st.dtype, self.read)};", sp)]
            case A.Reduce(name=n, idx=idx, rhs=e):
                st = self.vars[n]
                lhs = self.element(n, idx, sp)
                add = "gs_fadd" if st.dtype is A.DataType.F32 else "gs_add_i32"
                if active("gpuir-fma-contraction") and st.dtype is A.DataType.F32 \
                        and isinstance(e, A.DBin) and e.op == "*":
                    fa, fb = (c_data(x, st.dtype, self.read) for x in (e.lhs, e.rhs))
                    return [K.GPrim(f"{lhs} = gs_ffma({fa}, {fb}, {lhs});", sp)]
                return [K.GPrim(f"{lhs} = {add}({lhs}, "
                                f"{c_data(e, st.dtype, self.read)});", sp)]
            case A.Alloc():
                return self.alloc(s)
            case A.BarrierAlloc():
                return self.barrier_alloc(s)
            case A.WindowStmt():
                raise unsupported("window statements", sp)
            case A.Free():
                return []
            case A.Fence(pre=pre, post=post):
                return [K.GFence(mapping_of(self.an, s), pre, post, sp)]
            case A.Arrive(tl=tl, n=n, barriers=zs):
                refs = tuple(self.bar_ref(z) for z in zs)
                tx = 0
                if tl == "tma_to_smem_async" or any(r.kind == "mbarrier"
                                                    for r in refs):
                    # the copies completing on the barrier since its last arrive: the
                    # next arrive on it expects their bytes, whatever its timeline
                    # (the paper's GEMM arrives with cuda_temporal)
                    tx = sum(self.pending_tx.pop(z.name, 0) for z in zs)
                return [K.GArrive(mapping_of(self.an, s), tl, n, refs, tx, sp)]
            case A.Await(barrier=z, tl=tl, n=n):
                return [K.GAwait(mapping_of(self.an, s), self.bar_ref(z), tl, n, sp)]
            case A.InstrCall():
                return [self.instr(s)]
        raise AssertionError(s)

    def thread_loop(self, f: A.For) -> list[K.GStmt]:
        tiling = self.an.tilings.get(id(f))
        if tiling is None:
            raise unsupported("a cuda_threads loop the collective analysis could not "
                              "tile", f.span)
        if not (tiling.child.simple and tiling.parent.simple):
            raise unsupported(f"a cuda_threads loop over strided collectives "
                              f"({tiling.child.describe()})", f.span)
        var, child, s = _check_name(f.var, f.span), tiling.child, tiling.stride
        n = tiling.hi - tiling.lo
        off = offset_c(child, self.env, len(child.terms) - 1)
        rel = f"gs_t - ({off})" if off != "0" else "gs_t"
        if child.ctas > 1:
            rel = f"({rel}) % {child.launch.block_dim}"
        reshaped = child.ctas != tiling.parent.ctas
        span_len = child.launch.block_dim if reshaped else tiling.parent.length
        r = f"gs_rel_{var}"
        it = f"{r} / {s}" if s != 1 else r
        note = f"cuda_threads({tiling.lo}, {tiling.hi}): {s} thread(s) an iteration"
        # a loop over the CTAs of a cluster is not counted: a multicast copy's
        # window is what each CTA's barrier receives, whichever CTA issued it
        scale = n if tiling.parent.ctas == 1 else 1
        self.instances *= scale
        try:
            body = (K.GLet(var, f"{tiling.lo} + {it}" if tiling.lo else it, f.span),
                    *self.block(f.body))
        finally:
            self.instances //= scale
        if n * s < span_len and not active("gpuir-thread-guard-dropped"):
            # some threads of the parent run no iteration
            body = (K.GIf(f"{r} < {n * s}", body, f.span),)
        return [K.GIf("true", (K.GLet(r, rel, f.span), *body), f.span, note)]

    # ------------------------------------------------------------- storage
    def alloc(self, s: A.Alloc) -> list[K.GStmt]:
        name = _check_name(s.name, s.span)
        shape = tuple(self.const(c, s.span) for c in s.shape)
        st = data_storage(name, s.dtype, shape, s.mem, self.an.mapping(s), s.span,
                          self.dist.get(id(s)), self.pad_rows)
        ct = ctype(s.dtype, s.span)
        self.vars[name] = st
        if st.space == "local":
            return [K.GLocal(name, ct, max(1, st.count), s.span)]
        if st.space == "shared":
            return [K.GShared(name, ct, max(1, st.count), s.span)]
        raise unsupported(f"allocation of {name} in device code", s.span)

    def barrier_alloc(self, s: A.BarrierAlloc) -> list[K.GStmt]:
        name = _check_name(s.name, s.span)
        shape = tuple(self.const(c, s.span) for c in s.shape)
        m = mapping_of(self.an, s)
        bs = barrier_storage(name, shape, s.mem, m, s.span)
        self.bars[name] = bs
        if bs.kind != "mbarrier":
            what = {"commit": "commit group (per-thread hardware state)",
                    "cluster": "cluster barrier (hardware)"}[bs.kind]
            return [K.GComment(f"{name}: {what}", s.span)]
        if m.length % m.launch.block_dim or m.ctas != 1:
            raise unsupported(f"mbarrier {name} allocated below CTA scope", s.span)
        arrivals = self.mbar_arrivals.get(name)
        if arrivals is None:
            return [K.GComment(f"{name}: never arrived on", s.span)]
        return [K.GMbarriers(name, bs.cells, arrivals, m.launch.cluster_dim > 1,
                             s.span, self.ring)]

    def flat(self, coords: list[A.CExpr], strides) -> A.CExpr:
        total: A.CExpr | None = None
        for c, st in zip(coords, strides):
            if c == A.CInt(0):
                continue
            term = c if st == 1 else A.CBin("*", c, A.CInt(st))
            total = term if total is None else A.CBin("+", total, term)
        return total if total is not None else A.CInt(0)

    def element(self, name: str, idx: tuple[A.CExpr, ...], span) -> str:
        st = self.vars[name]
        if st.tile:
            raise unsupported(f"element access to matrix register {name}", span)
        rest = list(idx[st.ndist:])
        return f"{name}[{c_int(self.flat(rest, st.strides()))}]"

    def unmap(self, r: A.DRead) -> A.DRead:
        """A window of a tensor map as the same window of its array (the map's
        window of the array composed with the one taken of the map)."""
        src = self.maps.get(r.name)
        if src is None:
            return r
        st = self.vars[src.name]
        base = src.coords or tuple(A.WInterval(None, None) for _ in st.shape)
        coords = r.coords or tuple(A.WInterval(None, None) for _ in base)
        if len(coords) != len(base) or any(isinstance(b, A.WPoint) for b in base):
            raise unsupported(f"tensor map {r.name} of a window with points", r.span)
        out: list[A.WCoord] = []
        for b, c in zip(base, coords):
            assert isinstance(b, A.WInterval)
            lo = b.lo if b.lo is not None else A.CInt(0)

            def at(x: A.CExpr, lo: A.CExpr = lo) -> A.CExpr:
                return x if lo == A.CInt(0) else A.CBin("+", lo, x)
            if isinstance(c, A.WPoint):
                out.append(A.WPoint(at(c.index)))
            else:
                hi = c.hi if c.hi is not None else A.CBin("-", b.hi, lo) \
                    if b.hi is not None else None
                out.append(A.WInterval(at(c.lo if c.lo is not None else A.CInt(0)),
                                       at(hi) if hi is not None else None))
        return A.DRead(src.name, tuple(out), r.span)

    def read(self, r: A.DRead) -> tuple[str, A.DataType]:
        st = self.vars[r.name]
        idx = tuple(c.index for c in r.coords if isinstance(c, A.WPoint))
        return self.element(r.name, idx, r.span), st.dtype

    def window(self, r: A.DRead, span) -> K.Window:
        r = self.unmap(r)
        st = self.vars[r.name]
        coords = r.coords or tuple(A.WInterval(None, None) for _ in st.shape)
        coords = coords[st.ndist:]
        shape = st.shape[st.ndist:]
        ntile = len(st.tile) if st.tile else 0
        strides = st.strides() + (0,) * ntile
        base, dims = [], []
        for d, (c, stride) in enumerate(zip(coords, strides)):
            in_tile = d >= len(shape) - ntile
            if isinstance(c, A.WPoint):
                if in_tile:
                    raise unsupported(f"a point inside matrix tile {r.name}", span)
                base.append((c.index, stride))
                continue
            lo = c.lo if c.lo is not None else A.CInt(0)
            hi = c.hi if c.hi is not None else A.CInt(shape[d])
            ext = _extent(lo, hi, self.env)
            if ext is None:
                raise unsupported(f"a window of {r.name} with a variable extent", span)
            if in_tile:
                if self.const(lo, span) != 0 or ext != shape[d]:
                    raise unsupported(f"a partial window of matrix tile {r.name}", span)
                dims.append((ext, 0))
                continue
            base.append((lo, stride))
            dims.append((ext, stride))
        flat = self.flat([c for c, _ in base], [s for _, s in base])
        space = st.space
        return K.Window(r.name, space, ctype(st.dtype), c_int(flat), tuple(dims),
                        st.tile, st.tile_share)

    def bar_ref(self, z: A.ZRead) -> K.BarRef:
        bs = self.bars[z.name]
        coords = z.coords[bs.ndist:]
        if bs.kind == "commit":
            tl = self.commit_kinds.get(z.name, "")
            return K.BarRef(z.name, COMMIT_KINDS.get(tl, "commit"), "0")
        if bs.kind != "mbarrier":
            return K.BarRef(z.name, bs.kind, "0")
        multicast = _multicast(z, bs.ndist)
        if multicast and not _whole_cluster(z, bs.ndist, self.env,
                                            self.dev_cluster()):
            raise unsupported(f"an Arrive on {z.name} in some CTAs of the cluster "
                              "(the lowering signals all of them or its own)", z.span)
        if any(isinstance(c, A.WInterval) for c in coords):
            return K.BarRef(z.name, bs.kind, None if bs.cells > 1 else "0", self.ring,
                            multicast)
        pts = [c.index for c in coords if isinstance(c, A.WPoint)]  # all of them
        return K.BarRef(z.name, bs.kind, c_int(self.flat(pts, bs.strides())),
                        self.ring, multicast)

    def dev_cluster(self) -> int:
        return mapping_of(self.an, self.dev.body[0]).launch.cluster_dim

    def instr(self, s: A.InstrCall) -> K.GInstr:
        args: list[K.Arg] = []
        for a in s.args:
            match a:
                case A.DRead():
                    args.append(self.window(a, s.span))
                case A.DConst():
                    raise unsupported(f"literal data argument to {s.instr}", s.span)
                case _:
                    args.append(c_int(a))
        ref = self.bar_ref(s.barrier) if s.barrier is not None else None
        if s.instr.startswith("Sm90_tma_") and s.barrier is not None:
            dst = next(a for a in args if isinstance(a, K.Window))  # dst comes first
            bytes_ = prod(e for e, _ in dst.dims) * 4 * self.instances
            self.pending_tx[s.barrier.name] = \
                self.pending_tx.get(s.barrier.name, 0) + bytes_
        return K.GInstr(mapping_of(self.an, s), s.instr, tuple(args), ref, s.span)


def _extent(lo: A.CExpr, hi: A.CExpr, env) -> int | None:
    """hi - lo when it is a constant: affinely, or syntactically `lo + c` (the usual
    quasi-affine window `x[t % 2 * 4:t % 2 * 4 + 4]`)."""
    a = affine(A.CBin("-", hi, lo), env)
    if a is not None and a.is_const:
        return a.const
    if isinstance(hi, A.CBin) and hi.op == "+" and hi.lhs == lo:
        c = affine(hi.rhs, env)
        if c is not None and c.is_const:
            return c.const
    return None


def _multicast(z: A.ZRead, ndist: int) -> bool:
    """`raw[0:2]`: an interval over the CTA-selecting dimensions of an mbarrier."""
    return any(isinstance(c, A.WInterval) for c in z.coords[:ndist])


def _whole_cluster(z: A.ZRead, ndist: int, env, cluster: int) -> bool:
    if ndist != 1 or not isinstance(z.coords[0], A.WInterval):
        return False
    c = z.coords[0]

    def value(e: A.CExpr | None, default: int) -> int | None:
        a = affine(e, env) if e is not None else None
        return default if e is None else a.const if a is not None and a.is_const \
            else None
    return value(c.lo, 0) == 0 and value(c.hi, cluster) == cluster


def _ring_depth(dev: A.CudaDeviceFunction, an: Analysis) -> int:
    """The mbarriers of one cell (GMbarriers.ring): the deepest lag of an Await on an
    mbarrier (Await(war, tl, -4): 4; the paper's ~3). Note: the depth is the
    kernel's, for every mbarrier: in a pipeline `ring` iterations deep, a producer
    ahead of its consumers completes copies and arrivals on a barrier up to `ring`
    phases ahead of the phase awaited there (the other CTA's TMA multicast into
    raw[cta]); with one mbarrier a cell those would count towards the phase still
    awaited. A ring of `ring` mbarriers keeps the phases apart (phase j on mbarrier
    j % ring, awaited with parity (j / ring) & 1)."""
    depth = 1
    for s in walk(dev.body):
        if isinstance(s, A.Await) and s.n < -1:
            decl = an.decl(s, s.barrier.name)
            if decl.mem is not None and decl.mem.name == "CudaMbarrier":
                depth = max(depth, -s.n)
    return depth


def _barrier_usage(dev: A.CudaDeviceFunction, an: Analysis, dist: dict[int, int]):
    """Per mbarrier: the arrivals one phase expects in each CTA (every thread of an
    arriving collective arrives once; an Arrive that also signals the barrier of
    every CTA of the cluster counts once in each); per commit group: which async
    unit commits to it (by the timeline of its Arrives)."""
    arrivals: dict[str, int] = {}
    commits: dict[str, str] = {}
    for s in walk(dev.body):
        if not isinstance(s, A.Arrive):
            continue
        m = mapping_of(an, s)
        per_cta = m.length if m.ctas > 1 else min(m.length, m.launch.block_dim)
        for z in s.barriers:
            decl = an.decl(s, z.name)
            if decl.mem is None:
                continue
            if decl.mem.name == "CudaMbarrier":
                k = dist.get(id(decl.node), 0)
                count = per_cta
                if m.ctas == 1 and any(_multicast(y, k) for y in s.barriers
                                       if y.name == z.name):
                    count = per_cta * m.launch.cluster_dim
                if arrivals.setdefault(z.name, count) != count:
                    raise unsupported(f"mbarrier {z.name} arrived on by collectives of "
                                      f"different sizes ({arrivals[z.name]} and "
                                      f"{count} threads)", s.span)
            elif decl.mem.name == "CudaCommitGroup" and \
                    commits.setdefault(z.name, s.tl) != s.tl:
                raise unsupported(f"commit group {z.name} used with two timelines",
                                  s.span)
    return arrivals, commits
