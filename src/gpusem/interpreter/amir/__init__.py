"""AMIR, the abstract machine of Exo-GPU (seed 000, Section 5 and Appendix B): the
conversion from GPU IR (Figure 5), the machine (Figures 21-22) and its checks (Figure 7)."""
