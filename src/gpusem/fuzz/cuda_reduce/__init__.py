"""A reducer of CUDA reproducers (issue 23): shrink a standalone `repro.cu` to the few
lines a compiler engineer reads in a minute, keeping it interesting to a test.

`tokens` (a tiny C++ tokenizer and bracket matcher), `sites` (what a pass proposes),
`passes` and `passes_expr` (the passes, named as verbs), `oracles` (interestingness
tests and guards), `reducer` (the fixpoint under a budget), `cvise` (C-Vise as an
optional engine, when installed).
"""
