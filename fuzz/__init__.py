"""gpusem.fuzz"""
