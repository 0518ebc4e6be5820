"""Tests of gpusem.compiler.backends (cpu harness, nvcc check, cuda backend)."""
