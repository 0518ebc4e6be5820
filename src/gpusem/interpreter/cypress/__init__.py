"""Cypress (seed 001): the sequential reading seq(program, mapping) of l.163."""
