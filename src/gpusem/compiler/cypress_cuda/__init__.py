"""Our Cypress compiler after seed 001 Sec. 4.2 (issue 30 item 5). So far its first
pass: dependence analysis (4.2.1, Fig. 8), task tree -> event IR."""
