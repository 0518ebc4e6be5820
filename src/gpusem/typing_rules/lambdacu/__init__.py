"""lambda-cu (seed 002): the well-formedness the rules of Section 6.2 presuppose."""
