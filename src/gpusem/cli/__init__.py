"""gpusem.cli"""
