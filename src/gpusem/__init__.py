"""gpusem: executable reference semantics and differential fuzzer for GPU calculi.

The package lives in `src/gpusem/` (the PyPA src layout): the checkout has the shape
it installs in. Stages run down `calculus/ -> typing_rules/ -> interpreter/ ->
compiler/ -> fuzz/ -> api -> cli/` (ARCHITECTURE.md).
"""

__version__ = "0.1.0"
