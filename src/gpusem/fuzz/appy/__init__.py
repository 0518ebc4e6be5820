"""gpusem.fuzz.appy: generators and mutators of APPy programs."""
