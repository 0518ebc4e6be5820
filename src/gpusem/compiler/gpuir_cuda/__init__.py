"""GPU IR -> CUDA C++ (Exo-GPU Section 4.2): see `pipeline.py` for the passes."""
