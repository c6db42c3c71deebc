"""The embeddings family of the reference implementation: static word embeddings.

* :mod:`.onehot`     -- one-hot vectors, and the embedding lookup as one-hot times the table;
* :mod:`.similarity` -- dot product, cosine similarity, Euclidean distance, nearest
  neighbours and the 3CosAdd analogy rule;
* :mod:`.word2vec`   -- skip-gram pairs, the full-softmax and negative-sampling losses (as
  001 writes them and as 002 codes them), the ``f^(3/4)`` noise distribution, CBOW's
  context average and a tiny seeded trainer (SGNS and CBOW);
* :mod:`.glove`      -- GloVe's weighting function, its loss and a symmetric co-occurrence
  count with ``1/distance`` weighting;
* :mod:`.fasttext`   -- character n-grams with boundary markers and the composition of a
  word's vector from its n-gram vectors (mean, as gensim and fastText do; sum, as the
  paper and 000 write it; and 002's code).

Documents are cited by the number of their file in the shared seeds (``000_...txt`` to
``004_...txt``).

This package does not hold contextual embeddings (ELMo, BERT), subword tokenizers,
positional encodings or hashing of n-grams into buckets. Everything takes tensors on
any device and works in float64; randomness comes from explicit seeds.
"""
