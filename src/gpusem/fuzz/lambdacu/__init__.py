"""lambda-cu (seed 002) under test: the generator of well-formed programs."""
