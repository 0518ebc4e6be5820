"""The appyc worker: one process serves a batch of cases, one JSON line in, one out.

Run by `driver.py` as `python -m gpusem.compiler.appy_triton.worker BACKEND` in a scratch
directory (appyc writes `.appy_kernels/` where it runs). appyc may call `exit()`, print
to stdout, hang or abort the process; so the protocol runs on a private duplicate of the
original stdout while fd 1 goes to stderr, and the driver owns time limits and restarts.

Each answer names the stage reached: `generation` (appyc raised), `host` (the generated
module or its host code failed), `triton` (Triton rejected a kernel: compile or
interpreter type error), `runtime` (another error while running), `environment` (the
stand-in itself cannot run it: a NumPy/Triton mismatch, not the compiler), `ok` (with
outputs), plus the generated module text and, for `--sm90`, the result of compiling
every kernel for sm_90 without running it.

The cpu stand-in (Triton's interpreter on torch CPU tensors) adapts two things that are
not the compiler's output's meaning, both recorded in every answer's `adapted` list
(errata: "the cpu stand-in"):
  numpy-index   Triton 3.6's interpreter converts a scalar argument held as a 1-element
                array with `int(array)`, which NumPy >= 2.4 refuses; the shim does what
                NumPy < 2.4 did (`int` of the one element), nothing else
  device-cpu    appyc's host code hard-codes `device="cuda"` (reductions, data
                clauses); on the cpu stand-in that device is the CPU
A case may carry the module text (`module`) instead of asking appyc again: the
differential between the H100 and Triton's interpreter runs one generated module on
both.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import io
import json
import os
import re
import sys
import traceback


def encode(a) -> dict:
    import numpy as np

    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "b64": base64.b64encode(a.tobytes()).decode()}


def decode(d: dict):
    import numpy as np

    raw = base64.b64decode(d["b64"])
    return np.frombuffer(raw, dtype=d["dtype"]).reshape(d["shape"]).copy()


def _is_triton_error(err: BaseException) -> bool:
    mod = type(err).__module__ or ""
    if mod.startswith("triton"):
        return True
    tb = err.__traceback__
    frames = traceback.extract_tb(tb) if tb else []
    # The innermost frames decide: an error raised inside triton's compiler/interpreter.
    return any("/triton/" in f.filename for f in frames[-3:])


def _short(err: BaseException) -> str:
    """One line: the first line, and for multi-line compiler errors (Triton quotes the
    source) the last line too, which says what is wrong."""
    if type(err).__name__ == "CompilationError":
        return _compilation_error(err)
    lines = [ln.strip() for ln in f"{type(err).__name__}: {err}".splitlines() if ln.strip()]
    if isinstance(err, AssertionError) and lines:
        # A bare `assert` says nothing: where it failed is the cause (appyc's pass)
        lines[0] += f" at {_innermost(err)}"
    if not lines:
        return type(err).__name__
    tail = [ln for ln in lines[1:] if any(c.isalpha() for c in ln)]
    text = f"{lines[0]} ... {tail[-1]}" if tail else lines[0]
    return text[:400]


def _innermost(err: BaseException) -> str:
    """`module.py:function` of the frame that raised (no line number: it moves between
    versions of a file without changing the cause)."""
    frames = traceback.extract_tb(err.__traceback__) if err.__traceback__ else []
    if not frames:
        return "?"
    f = frames[-1]
    return f"{os.path.basename(f.filename)}:{f.name}"


def _compilation_error(err: BaseException) -> str:
    """Triton's CompilationError quotes the user's source line and chains the real
    error as __cause__ (through one CompilationError per inlined triton.language
    function). The class of the failure is the innermost error and the library
    function it was raised in; the user's line follows after " | at " as context, which
    the finding's signature leaves out (else every expression is its own class)."""
    where = _quoted_line(err)
    chain: list[BaseException] = []
    cur: BaseException | None = err
    while cur is not None and len(chain) < 16:
        chain.append(cur)
        cur = cur.__cause__ or (cur.__context__ if not cur.__suppress_context__ else None)
    inner_ce = [e for e in chain if type(e).__name__ == "CompilationError"][-1]
    root = chain[-1]
    message = getattr(inner_ce, "error_message", None)
    if root is not inner_ce:
        first = (str(root).strip().splitlines() or [""])[0]
        message = f"{type(root).__name__}: {first}"
    fn = re.search(r"^def (\w+)\(", getattr(inner_ce, "src", "") or "", re.M)
    place = f" in {fn.group(1)}" if fn and inner_ce is not err else ""
    return f"CompilationError{place}: {message or '(no message)'} | at {where}"[:400]


def _quoted_line(err: BaseException) -> str:
    """`L:C: <the user's source line>` from the first lines of a CompilationError."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    pos = lines[0].removeprefix("at ").rstrip(":") if lines else "?"
    node = getattr(err, "node", None)
    src = getattr(err, "src", None)
    if node is not None and isinstance(src, str) and getattr(node, "lineno", None):
        src_lines = src.splitlines()
        if 0 < node.lineno <= len(src_lines):
            return f"{pos}: {src_lines[node.lineno - 1].strip()}"
    return pos


GUARD = 4096  # elements of red zone on each side of every array (> any block size)


class Guarded:
    """An array placed in the middle of a larger buffer whose red zones hold a canary:
    a kernel's out-of-bounds write lands in the red zone (so it cannot corrupt the
    worker's heap and poison later cases) and is reported with its offset."""

    def __init__(self, a, device: str, ordinal: int):
        import numpy as np
        import torch

        n = a.size
        buf = np.empty(n + 2 * GUARD, dtype=a.dtype)
        # One canary per array: an out-of-bounds read of one array's red zone stored
        # out of bounds into another's must still differ from that one's canary.
        self.canary = self._canary(a.dtype, ordinal)
        buf[:GUARD] = self.canary
        buf[GUARD + n:] = self.canary
        buf[GUARD:GUARD + n] = a.ravel()
        self.n = n
        self.buf = torch.from_numpy(buf).to(device)
        self.view = self.buf[GUARD:GUARD + n].view(a.shape)

    @staticmethod
    def _canary(dtype, ordinal: int):
        return canary(dtype, ordinal)

    def breach(self) -> str:
        import numpy as np

        host = self.buf.cpu().numpy()
        before = np.flatnonzero(host[:GUARD] != self.canary)
        after = np.flatnonzero(host[GUARD + self.n:] != self.canary)
        if after.size:
            return (f"out-of-bounds write: {after.size} element(s) past the end "
                    f"(first at index {self.n + int(after[0])})")
        if before.size:
            return (f"out-of-bounds write: {before.size} element(s) before the start "
                    f"(first at index {int(before[-1]) - GUARD})")
        return ""


def canary(dtype, ordinal: int):
    """The red-zone value of the `ordinal`-th array. Floats: one exponent (2^-20) and a
    full pseudo-random mantissa with its last bit set, so no two arrays' canaries are a
    power of two or a small integer apart (their ratio lies in (1/2, 2) and is not 1),
    and no value a program computes from quarter-integer data by a few operations has
    that many mantissa bits; a stray store of `k * A[v]` for any small k, A[v] a
    canary or data, cannot rewrite a canary unseen. Integers: distinct odd values near
    -1.9e9 (int32) or -7.7e18 (int64), whose small multiples wrap far from each other."""
    import hashlib

    import numpy as np

    dtype = np.dtype(dtype)
    h = int.from_bytes(hashlib.sha256(f"gpusem-canary:{ordinal}".encode()).digest()[:8],
                       "little")
    if dtype == np.float32:
        bits = (1 << 31) | ((127 - 20) << 23) | (h & ((1 << 23) - 1)) | 1
        return np.asarray(bits, dtype=np.uint32).view(np.float32)
    if dtype == np.float64:
        bits = (1 << 63) | ((1023 - 20) << 52) | (h & ((1 << 52) - 1)) | 1
        return np.asarray(bits, dtype=np.uint64).view(np.float64)
    if np.issubdtype(dtype, np.floating):  # float16 and others: not generated
        return np.asarray(-1.2345e-3 - 1e-6 * (h & 0xFF), dtype=dtype)
    info = np.iinfo(dtype)
    base = info.min + info.min // -8  # 7/8 of the way down: -1.88e9 for int32
    return np.asarray(base + 2 * (h & 0xFFFF) + 1, dtype=dtype)


def numpy_index_shim() -> bool:
    """Make Triton's interpreter convert a 1-element array index as NumPy < 2.4 did
    (`int(a)` of a size-1 array); True when installed. A no-op where NumPy still
    allows it or where Triton's interpreter has no such hook."""
    import numpy as np

    try:
        int(np.zeros(1, dtype=np.int32))
        return False  # NumPy < 2.4: nothing to adapt
    except TypeError:
        pass
    try:
        import triton.runtime.interpreter as ti
    except ImportError:
        return False
    orig = getattr(ti, "_patch_lang_tensor", None)
    if orig is None:
        return False

    def index(self):
        data = self.handle.data
        return int(data.reshape(-1)[0]) if getattr(data, "size", 0) == 1 else int(data)

    def patched(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", index)

    ti._patch_lang_tensor = patched
    return True


ADAPTED: list[str] = []  # what the stand-in adapts in this process (see the docstring)
_ENV_ERRORS = ("only 0-dimensional arrays can be converted to Python scalars",
               "only length-1 arrays can be converted to Python scalars")


_LIBDEVICE_CALL = re.compile(r"\blibdevice\.(\w+)\s*\(")


def environmental(err_text: str, module: str) -> str:
    """Why an error is the stand-in's, not the compiler's ("" when it is not)."""
    if any(e in err_text for e in _ENV_ERRORS):
        return (f"environment: NumPy {_np_version()} and Triton's interpreter: "
                f"{err_text[:160]}")
    # Triton's interpreter (TRITON_INTERPRET=1) has no libdevice: every
    # `libdevice.f(x)` evaluates to None, and the first use of it fails with a
    # NoneType error. The module is right on a GPU; the stand-in cannot run it.
    calls = sorted(set(_LIBDEVICE_CALL.findall(module)))
    if (calls and os.environ.get("TRITON_INTERPRET") == "1"
            and ("NoneType" in err_text or "None of type" in err_text)):
        return ("environment: Triton's interpreter does not implement libdevice "
                f"({', '.join(calls)}): {err_text[:120]}")
    return ""


def _np_version() -> str:
    import numpy as np

    return np.__version__


def _to_cpu(module_text: str) -> str:
    """device-cpu: the host code's hard-coded CUDA device is the CPU here."""
    return re.sub(r"""(device\s*=\s*|\.to\()(["'])cuda\2""", r"\1\2cpu\2", module_text)


def run_case(case: dict, backend: str, counter: list[int]) -> dict:
    import appy
    import numpy as np
    import torch

    out: dict = {"id": case["id"], "module": "", "adapted": list(ADAPTED)}
    name = case["func"]
    if case.get("module"):
        module_text = case["module"]
    else:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                module_text = appy.compile_from_src(case["source"],
                                                    **case.get("options", {}))
        except BaseException as err:  # appyc asserts, raises ValueError, or exit()
            if isinstance(err, KeyboardInterrupt):
                raise
            return out | {"stage": "generation", "error": _short(err)}
    out["module"] = module_text
    run_text = module_text
    if backend == "cpu" and _to_cpu(module_text) != module_text:
        run_text = _to_cpu(module_text)
        out["adapted"] = out["adapted"] + ["device-cpu"]
    counter[0] += 1
    path = os.path.abspath(f".appy_kernels/{name}_{counter[0]}.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(run_text)
    try:
        spec = importlib.util.spec_from_file_location(f"appy_case_{counter[0]}", path)
        assert spec is not None and spec.loader is not None  # a .py file has both
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for k, v in {"appy": appy, "np": np, "torch": torch}.items():
            mod.__dict__.setdefault(k, v)
        fn = getattr(mod, name)
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt):
            raise
        return out | {"stage": "host", "error": _short(err)}
    device = "cuda" if backend == "cuda" else "cpu"
    host = set(case.get("host_arrays", ()))  # to(..) arrays: NumPy, as appyc expects
    guarded = {k: Guarded(decode(v), device, j)
               for j, (k, v) in enumerate(case["arrays"].items()) if k not in host}
    tensors: dict = {k: g.view for k, g in guarded.items()}
    tensors |= {k: decode(v) for k, v in case["arrays"].items() if k in host}
    args = [tensors[p] if p in tensors else case["scalars"][p] for p in case["params"]]
    if case.get("sm90") or backend == "sm90":
        out["sm90"] = compile_sm90(mod, fn, args)
        return out | {"stage": "ok", "outputs": {}}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            returned = fn(*args)
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt):
            raise
        stage = "triton" if _is_triton_error(err) else "host"
        msg = _short(err)
        env = environmental(msg, module_text)
        if env:
            return out | {"stage": "environment", "error": env}
        # A CUDA error at launch may leave the context broken: restart to be safe.
        return out | {"stage": stage, "error": msg,
                      "fatal": device == "cuda" and "cuda" in msg.lower()}
    if device == "cuda":
        try:  # a kernel fault (illegal address, trap) surfaces here, asynchronously
            torch.cuda.synchronize()
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt):
                raise
            # The CUDA context is unusable after a fault: answer, then exit.
            return out | {"stage": "runtime", "error": _short(err), "fatal": True}
    for k, g in guarded.items():
        oob = g.breach()
        if oob:  # a write outside the array: memory corruption on a real GPU
            return out | {"stage": "oob", "error": f"{k}: {oob}", "array": k}
    outputs = {k: encode(t.cpu().numpy() if hasattr(t, "cpu") else t)
               for k, t in tensors.items()}
    ret = case.get("returns")
    if ret:  # `return C`: the caller sees the returned array (data clauses rebind C)
        try:
            outputs[ret] = encode(returned.cpu().numpy() if hasattr(returned, "cpu")
                                  else np.asarray(returned))
        except BaseException as err:  # noqa: BLE001 - not an array: a host failure
            if isinstance(err, KeyboardInterrupt):
                raise
            return out | {"stage": "host", "error": f"return value: {_short(err)}"}
    return out | {"stage": "ok", "outputs": outputs}


def compile_sm90(mod, fn, args) -> dict:
    """Compile every kernel the host code launches for sm_90 (no GPU needed): the
    launches are intercepted, their argument types become a Triton signature."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    results: dict = {"kernels": 0, "errors": []}

    class Intercept:
        def __init__(self, jit_fn):
            self.jit_fn = jit_fn

        def __getitem__(self, grid):
            def launch(*a, **kw):
                sig, consts = _signature(self.jit_fn, a)
                try:
                    triton.compile(ASTSource(self.jit_fn, sig, consts),
                                   target=GPUTarget("cuda", 90, 32),
                                   options={"num_warps": kw.get("num_warps", 4)})
                    results["kernels"] += 1
                except BaseException as err:
                    if isinstance(err, KeyboardInterrupt):
                        raise
                    results["errors"].append(_short(err))
            return launch

    for k, v in list(vars(mod).items()):
        if isinstance(v, triton.runtime.jit.JITFunction):
            setattr(mod, k, Intercept(v))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            fn(*args)
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt):
            raise
        results["errors"].append("host: " + _short(err))
    return results


def _signature(jit_fn, args) -> tuple[dict, dict]:
    import torch

    sig, consts = {}, {}
    names = jit_fn.arg_names
    for i, (n, a) in enumerate(zip(names, args)):
        if i in jit_fn.constexprs:
            sig[n], consts[n] = "constexpr", a
        elif isinstance(a, torch.Tensor):
            sig[n] = "*" + {torch.float32: "fp32", torch.float64: "fp64",
                            torch.int32: "i32", torch.int64: "i64"}[a.dtype]
        elif isinstance(a, bool):
            sig[n] = "i1"
        elif isinstance(a, int):
            sig[n] = "i32" if -2**31 <= a < 2**31 else "i64"
        else:
            sig[n] = "fp32"
    return sig, consts


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    # A killed campaign (or pytest) leaves no worker spinning in a hung kernel. The
    # watch thread alone: which of the driver's threads started us is unknown here.
    if os.environ.get("GPUSEM_PARENT_PID", "").isdigit():
        from gpusem.compiler.backends.lifetime import die_with_parent

        die_with_parent(int(os.environ["GPUSEM_PARENT_PID"]), pdeathsig=False)
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # appyc's prints and black's chatter must not reach the protocol
    import appy  # noqa: F401 - import once, before the first case's clock starts
    import torch  # noqa: F401

    if backend == "cpu" and numpy_index_shim():
        ADAPTED.append("numpy-index")

    proto.write(json.dumps({"ready": True}) + "\n")
    counter = [0]
    for line in sys.stdin:
        case = json.loads(line)
        try:
            answer = run_case(case, backend, counter)
        except Exception as err:  # noqa: BLE001 - a bug of ours must not lose the batch
            answer = {"id": case.get("id"), "stage": "runtime", "error": _short(err),
                      "module": ""}
        proto.write(json.dumps(answer) + "\n")
        if answer.get("fatal"):
            break  # the driver starts a fresh worker (and CUDA context) for the next


if __name__ == "__main__":
    main()
