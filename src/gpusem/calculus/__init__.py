"""gpusem.calculus"""
