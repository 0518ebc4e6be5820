"""lambda-cu, the IR of Nessie (seed 002, Sections 5-6): syntax."""
