"""The static directive-legality rules of APPy (seed 003, Sections 3.1-3.4)."""
