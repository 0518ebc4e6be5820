"""The appyc worker: one process serves a batch of cases, one JSON line in, one out.

Run by `driver.py` as `python -m gpusem.compiler.appy_triton.worker BACKEND` in a scratch
directory (appyc writes `.appy_kernels/` where it runs). appyc may call `exit()`, print
to stdout, hang or abort the process; so the protocol runs on a private duplicate of the
original stdout while fd 1 goes to stderr, and the driver owns time limits and restarts.

Each answer names the stage reached: `generation` (appyc raised), `host` (the generated
module or its host code failed), `triton` (Triton rejected a kernel: compile or
interpreter type error), `runtime` (another error while running), `ok` (with outputs),
plus the generated module text and, for `--sm90`, the result of compiling every kernel
for sm_90 without running it.
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
    if not lines:
        return type(err).__name__
    tail = [ln for ln in lines[1:] if any(c.isalpha() for c in ln)]
    text = f"{lines[0]} ... {tail[-1]}" if tail else lines[0]
    return text[:400]


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
        import numpy as np

        if np.issubdtype(dtype, np.floating):  # values no generated program computes
            return np.asarray(-1.2345e-7 * (ordinal + 1), dtype=dtype)
        return np.asarray(-123456789 - ordinal, dtype=dtype)

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


def run_case(case: dict, backend: str, counter: list[int]) -> dict:
    import appy
    import numpy as np
    import torch

    out: dict = {"id": case["id"], "module": ""}
    name = case["func"]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            module_text = appy.compile_from_src(case["source"], **case.get("options", {}))
    except BaseException as err:  # appyc asserts, raises ValueError, or calls exit()
        if isinstance(err, KeyboardInterrupt):
            raise
        return out | {"stage": "generation", "error": _short(err)}
    out["module"] = module_text
    counter[0] += 1
    path = os.path.abspath(f".appy_kernels/{name}_{counter[0]}.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(module_text)
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
    guarded = {k: Guarded(decode(v), device, j)
               for j, (k, v) in enumerate(case["arrays"].items())}
    tensors = {k: g.view for k, g in guarded.items()}
    args = [tensors[p] if p in tensors else case["scalars"][p] for p in case["params"]]
    if case.get("sm90") or backend == "sm90":
        out["sm90"] = compile_sm90(mod, fn, args)
        return out | {"stage": "ok", "outputs": {}}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            fn(*args)
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt):
            raise
        stage = "triton" if _is_triton_error(err) else "host"
        msg = _short(err)
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
    outputs = {k: encode(t.cpu().numpy()) for k, t in tensors.items()}
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
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # appyc's prints and black's chatter must not reach the protocol
    import appy  # noqa: F401 - import once, before the first case's clock starts
    import torch  # noqa: F401

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
