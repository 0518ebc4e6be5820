"""gpusem.interpreter"""
