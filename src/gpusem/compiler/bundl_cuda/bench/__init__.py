"""The speed benchmarks of the Bundl -> CUDA compiler (reduction and SGEMM against CuPy)."""
