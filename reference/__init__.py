"""The reference implementation: readable PyTorch, one building block per module.

* :mod:`.softmax`   -- softmax that tolerates fully masked rows;
* :mod:`.masks`     -- causal, padding, local and arbitrary boolean masks (True = may attend);
* :mod:`.scores`    -- the score functions the slides tabulate;
* :mod:`.attention` -- scaled dot-product attention, returning output and weights;
* :mod:`.multihead` -- multi-head attention (projections, head split, concat, W^O).

Everything is device-agnostic and works in float64. Written to be read, not to be fast:
no fused kernels, no caching, no dropout.
"""
