"""The static analyses of GPU IR (Exo-GPU, seed 000, Sections 3-4): well-formedness,
the collective analysis and the distributed memory analysis."""
