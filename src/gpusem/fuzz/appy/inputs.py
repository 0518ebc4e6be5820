"""Input specifications in file headers (`# inputs: A=float32[4,8] N=8`): the reader is
`calculus/appy/inputs.py`; this name is kept for the fuzzer's and tests' imports."""

from __future__ import annotations

from gpusem.calculus.appy.inputs import header_inputs, make_inputs

__all__ = ["header_inputs", "make_inputs"]
