"""Fusion of lambda-cu kernel invocations (seed 002, Sections 8-9; issue 29)."""
