"""Bundl -> CUDA C++ (Prism paper, Section 5): a pipeline of small passes over KIR."""
