"""Properties of the tokenization family, one module per topic."""
