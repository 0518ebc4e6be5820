"""gpusem.calculus.gpuir"""
