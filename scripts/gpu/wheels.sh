#!/usr/bin/env bash
# The wheels a GPU machine needs beyond its image, for every part of scripts/gpu.sh:
# gpusem's own pinned dependencies the image lacks or holds at another version (lark,
# z3-solver, hypothesis: the image's hypothesis 6.168.3 drew our programs at half the
# speed of the pinned 6.170.17, results/scale/hypothesis_pin/), jsonschema for the
# report schemas, and Dask's (scale_wheels.sh). Run here, in the repository root,
# before the device call; the call carries .whl (ignored by git). Versions come from
# pyproject.toml, so the GPU runs what CI runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl
pin() {  # pin NAME: the version pyproject.toml pins NAME to
  python3 -c "import re,sys; print(re.search(r'\"$1==([^\"]+)\"', open('pyproject.toml').read()).group(1))"
}
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any -d .whl \
  "hypothesis==$(pin hypothesis)" "lark==$(pin lark)" "z3-solver==$(pin z3-solver)" \
  "jsonschema==$(pin jsonschema)" jsonschema-specifications==2025.9.1 referencing==0.37.0 \
  rpds-py==2026.9.1 pexpect==4.9.0 ptyprocess==0.7.0
# one version of each: two of one name stop the whole install there
dups=$(ls .whl/*.whl | xargs -n1 basename | sed 's/-[0-9].*//' | sort | uniq -d)
[ -z "$dups" ] || { echo "wheels.sh: two versions of: $dups (remove the old)" >&2; exit 2; }
bash scripts/gpu/scale_wheels.sh >/dev/null
ls .whl
