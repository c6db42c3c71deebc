"""The attention family of the reference implementation.

* :mod:`.softmax`   -- softmax that tolerates fully masked rows;
* :mod:`.masks`     -- causal, padding, local and arbitrary boolean masks (True = may attend);
* :mod:`.scores`    -- the score functions the slides tabulate;
* :mod:`.attention` -- scaled dot-product attention, returning output and weights;
* :mod:`.multihead` -- multi-head attention (projections, head split, concat, W^O).

This package does not hold positional encodings, blocks, tokenizers or embeddings: each
family has its own folder beside this one.
"""
