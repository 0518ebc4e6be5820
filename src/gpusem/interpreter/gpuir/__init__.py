"""The sequential reading of GPU IR (Exo-GPU, seed 000, Section 2.3)."""
