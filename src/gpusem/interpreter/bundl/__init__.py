"""What Bundl programs mean (Prism, seed 004, Appendix A.3): the thread and machine
judgments (small-step), schedulers, exhaustive exploration, the vectorised big-step
evaluator and the debugger's model."""
