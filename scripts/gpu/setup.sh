# Sourced by the device scripts: install the carried wheels (.whl, no network on the GPU
# machine) into /tmp/site and gpusem itself (editable), and record the device line.
export PYTHONUNBUFFERED=1 CUPY_TF32=0
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
# Installed once per set of carried wheels: the machine stays warm between calls, and
# a call carrying fewer wheels (the Exo census carries only lark) must not leave the
# next call, carrying all of .whl, without z3 (stop 30: a toolchain call ran 13,235
# programs into ModuleNotFoundError: z3 because the marker said "installed").
WHEELS=$(ls .whl/*.whl 2>/dev/null | xargs -n1 basename 2>/dev/null | sort | tr '\n' ' ')
if [ -f /tmp/gpusem-setup.done ] && [ "$(cat /tmp/gpusem-setup.done)" = "$WHEELS" ]; then
  export PYTHONPATH=/tmp/site  # a script run by another one, or the same wheels again
  return 0 2>/dev/null || exit 0
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl >/tmp/pip-wheels.log 2>&1 && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/pip.log 2>&1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  python3 -c "import cupy, sys; print('cupy', cupy.__version__, 'python', sys.version.split()[0])"
  nproc
  # the generators' cost and the programs a seed draws follow hypothesis's version: the
  # image's own (6.168.3 on 2026-11-29) drew at half the speed of the pinned one, so a
  # measurement without the pinned wheel says so here (scripts/gpu/wheels.sh carries it)
  python3 - <<'PY'
import re, hypothesis
pin = re.search(r'"hypothesis==([^"]+)"', open("pyproject.toml").read())
want = pin.group(1) if pin else "?"
mark = "" if hypothesis.__version__ == want else "  NOT THE PINNED VERSION: carry it"
print(f"hypothesis {hypothesis.__version__} (pyproject pins {want}){mark}")
PY
} >"$OUT/device.txt" 2>&1
grep -q "NOT THE PINNED" "$OUT/device.txt" && grep hypothesis "$OUT/device.txt" >&2
echo "$WHEELS" >/tmp/gpusem-setup.done
