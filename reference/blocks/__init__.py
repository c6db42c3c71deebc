"""The blocks family of the reference implementation.

* :mod:`.layernorm` -- layer normalisation over the features of each token;
* :mod:`.ffn` -- the position-wise feed-forward network;
* :mod:`.sublayer` -- residual sublayers, post-norm and pre-norm;
* :mod:`.attention_sublayer` -- multi-head self- and cross-attention with biased projections;
* :mod:`.encoder_layer` -- an encoder layer (and, causal, a decoder-only layer);
* :mod:`.decoder_layer` -- a decoder layer with cross-attention;
* :mod:`.stack` -- a stack of encoder layers; a decoder-only language model, its output layer and a parameter counter;
* :mod:`.size` -- the parameter count of a model built from a configuration.
"""
