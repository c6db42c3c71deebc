"""Properties of the embeddings family, one module per topic."""
