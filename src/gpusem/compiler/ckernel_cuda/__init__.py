"""CKernel -> CUDA C++: see gpusem.calculus.ckernel."""
