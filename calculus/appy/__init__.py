"""gpusem.calculus.appy"""
