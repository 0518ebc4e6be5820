"""CKernel: see gpusem.calculus.ckernel."""
