"""gpusem.typing_rules"""
