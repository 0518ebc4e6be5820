"""Bundl, the core calculus of Prism: syntax, perspectives, parser and printer."""
