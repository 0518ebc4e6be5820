"""The Bundl type system (Prism, seed 004, Appendix A.2): statements, expressions,
perspectives on data, contexts and rule sets, derivations."""
