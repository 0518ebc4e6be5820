"""Hypothesis strategies for the calculi (`bundl`: well-typed Bundl programs)."""
