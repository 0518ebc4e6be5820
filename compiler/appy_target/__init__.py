"""gpusem.compiler.appy_target: appyc (APPy -> Triton) as a compiler under test."""
