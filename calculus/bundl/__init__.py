"""gpusem.calculus.bundl"""
