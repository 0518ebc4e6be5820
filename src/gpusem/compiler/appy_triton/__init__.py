"""gpusem.compiler.appy_triton: appyc (APPy -> Triton) as a compiler under test."""
