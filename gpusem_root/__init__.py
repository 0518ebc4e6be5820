"""gpusem: executable reference semantics and differential fuzzer for GPU calculi.

The subpackages live in the repository's top-level folders (`calculus/`,
`typing_rules/`, `interpreter/`, `compiler/`, `fuzz/`, `cli/`) and are mapped into
this namespace by `setup.py`.
"""

__version__ = "0.1.0"
