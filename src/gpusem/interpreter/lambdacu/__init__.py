"""lambda-cu (seed 002, Section 6): what programs mean."""
