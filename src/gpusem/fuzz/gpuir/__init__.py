"""The GPU IR target of `gpusem fuzz`: the seq = par property of AMIR (Exo-GPU Section 5)
against our GPU IR -> CUDA compiler."""
