"""The positions family of the reference implementation.

* :mod:`.sinusoidal` -- the sinusoidal encoding of the original transformer;
* :mod:`.bits`       -- positions written in binary, one bit per feature;
* :mod:`.rope`       -- rotary position embeddings, both pairing conventions;
* :mod:`.alibi`      -- ALiBi's per-head linear score biases, their slopes, and attention with them;
* :mod:`.learned`    -- a learned position table and the input sum (token plus position).

This package does not hold the transformer block (its own family).
"""
