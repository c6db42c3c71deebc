"""The literate specification: one folder per family, one Markdown file per topic,
claims in ``yaml claim`` blocks (``spec/<family>/<topic>.md``).

This package holds data only; :mod:`specformer.claims` reads and validates it.
"""
