import os, sys, subprocess, json, tempfile
sys.path.insert(0, "scripts")
if sys.argv[1] == "child":
    from gpusem.compiler.backends import nvrtc_lib
    spec = json.load(open(sys.argv[2]))
    lib = [n for n in nvrtc_lib.find_nvrtc() if n.path == spec["lib"]][0]
    for i, (unit, exprs, opts) in enumerate(spec["calls"]):
        b, _, log = nvrtc_lib.compile_unit(lib, unit, {int(k): v for k, v in exprs.items()}, opts, nvrtc_cache=True)
        errs = [l for l in log.splitlines() if "error" in l.lower() or "nvrtc" in l.lower()][:6]
        print(f"  call {i}: {'built' if b else 'REJECTED'} {errs}", flush=True)
    sys.exit(0)
import nvrtc_probe
from gpusem.compiler.backends import cpu_source, nvrtc_lib
from gpusem.compiler.backends.cuda_worker import BUILD_SPEEDUPS, NVRTC_OPTIONS
lib = [n for n in nvrtc_lib.find_nvrtc() if n.version == tuple(map(int, os.environ.get("V", "13.0").split(".")))][0]
rounds = nvrtc_probe.kernels(0, 2, 100)
def u(batch):
    return (cpu_source.namespaced_unit([(i, f"k{i}_src", s, "") for i, (_, s) in enumerate(batch)], for_cpu=False),
            {i: f"gs_k{i}::{n}" for i, (n, _) in enumerate(batch)})
triv = [("k", 'extern "C" __global__ void k(int* a) { a[threadIdx.x] = 1; }\n')]
def call(batch, trace, extra=()):
    unit, exprs = u(batch)
    opts = [*NVRTC_OPTIONS, *BUILD_SPEEDUPS, *extra]
    if trace:
        opts.append(f"-fdevice-time-trace={tempfile.mkdtemp()}/trace.json")
    return [unit, exprs, opts]
cases = {
 "r0 traced, triv traced": [call(rounds[0], True), call(triv, True)],
 "r0 traced, triv untraced": [call(rounds[0], True), call(triv, False)],
 "r0 traced, triv traced, triv traced": [call(rounds[0], True), call(triv, True), call(triv, True)],
 "r0 traced x1 via -minimal off, triv traced": [[*call(rounds[0], True)[:2], [o for o in call(rounds[0], True)[2] if o != "-minimal"]], call(triv, True)],
}
for name, calls in cases.items():
    spec = tempfile.mktemp(suffix=".json")
    json.dump({"lib": lib.path, "calls": calls}, open(spec, "w"))
    d = subprocess.run([sys.executable, __file__, "child", spec], capture_output=True, text=True, timeout=300)
    sig = f"signal {-d.returncode}" if d.returncode < 0 else f"exit {d.returncode}"
    print(f"{name}: {sig}\n{d.stdout}{d.stderr[-300:]}", flush=True)
