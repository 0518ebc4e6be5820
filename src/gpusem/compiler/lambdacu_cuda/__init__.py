"""lambda-cu -> CUDA C++ (seed 002, Sec 10; issue 29 item 5)."""
