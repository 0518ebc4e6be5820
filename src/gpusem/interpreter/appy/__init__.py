"""What APPy programs mean (seed 003): the sequential reading, the dynamic legality rules
that watch it, and the multi-vector machine."""
