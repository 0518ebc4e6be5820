"""Cypress (seed 001): the task language of Fig. 5 and Sec. 3, its machine model
(Fig. 2, l.168-174) and mappings (Fig. 3/5b, l.393). docs/cypress.md is the grammar."""
