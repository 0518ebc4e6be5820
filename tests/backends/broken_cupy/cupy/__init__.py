"""A CuPy that cannot load (tests only): as on a machine without a CUDA driver."""

raise ImportError("simulated: libcuda.so.1 not found")
