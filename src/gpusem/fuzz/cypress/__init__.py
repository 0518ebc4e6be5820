"""The `cypress` target of `gpusem fuzz`: seed 001's claim as a property."""
