"""The blocks family of the reference implementation.

* :mod:`.layernorm` -- layer normalisation over the features of each token.

The feed-forward network, residual sublayers and the encoder and decoder layers follow.
"""
