"""The positions family of the reference implementation.

* :mod:`.sinusoidal` -- the sinusoidal encoding of the original transformer;
* :mod:`.bits`       -- positions written in binary, one bit per feature;
* :mod:`.rope`       -- rotary position embeddings, both pairing conventions;
* :mod:`.alibi`      -- ALiBi's per-head linear score biases and their slopes.

Learned position tables are ``torch.nn.Embedding``; they are checked as PyTorch's, not
re-implemented. This package does not hold the transformer block (its own family).
"""
