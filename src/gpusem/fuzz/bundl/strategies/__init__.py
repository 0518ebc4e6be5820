"""Hypothesis strategies of Bundl programs: well-typed by construction (programs), kernel-
shaped and race-free by construction (kernels, barriers), any canonical syntax tree
(anything), and well-typed expressions (expressions)."""

from gpusem.fuzz.bundl.pretty import register

register()  # a failing example prints as Bundl text (fuzz/bundl/pretty.py)
