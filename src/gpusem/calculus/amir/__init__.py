"""gpusem.calculus.amir: the Abstract Machine IR of Exo-GPU (seed 000, Section 5)."""
