"""The Bundl target of `gpusem fuzz`: our Bundl -> CUDA compiler against the Bundl semantics
(Prism, Appendix A), and the properties of the semantics themselves (soundness, teeth,
determinism, big/small agreement)."""
