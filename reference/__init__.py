"""The reference implementation: readable PyTorch, one folder per family, one building block per module.

* :mod:`.attention` -- softmax, masks, score functions, scaled dot-product and
  multi-head attention;
* :mod:`.positions` -- sinusoidal and binary encodings, rotary embeddings, ALiBi;
* :mod:`.blocks`    -- the parts of the transformer block (layer normalisation so far).

Everything is device-agnostic and works in float64. Written to be read, not to be fast:
no fused kernels, no caching, no dropout.
"""
