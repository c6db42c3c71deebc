"""The literate specification: one Markdown file per topic, claims in ``yaml claim`` blocks.

This package holds data only; :mod:`specformer.claims` reads and validates it.
"""
