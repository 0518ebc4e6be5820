#!/usr/bin/env bash
# The wheels scripts/gpu.sh scale needs on the GPU machine beyond its image (issue 19):
# Dask and the few dependencies the image lacks (its image has cloudpickle, msgpack,
# psutil, toolz, pyyaml, jinja2, sortedcontainers, fsspec, packaging, click). Run here,
# in the repository root, before the device call; the device call carries .whl.
# (gpusem's own needs, lark and z3-solver, are the lead's usual .whl.)
set -euo pipefail
mkdir -p .whl  # ignored (.gitignore)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d .whl \
  dask==2026.8.0 distributed==2026.8.0 partd==1.4.2 locket==1.0.0 tblib==3.2.2 \
  tornado==6.6.1 zict==3.0.0
ls .whl
