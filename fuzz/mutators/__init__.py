"""Mutators: programs that break exactly one rule (the type-system-teeth property)."""
