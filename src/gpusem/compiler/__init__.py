"""gpusem.compiler"""
