"""gpusem.compiler.backends"""
