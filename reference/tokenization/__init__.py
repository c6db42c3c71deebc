"""The tokenization family of the reference implementation: plain Python, no PyTorch.

* :mod:`.bpe`    -- byte pair encoding: word counting, the documents' naive trainer and an
  incremental trainer that gives the same merges (character level with an end-of-word
  marker, and byte level), encoding in rank order and exact decoding;
* :mod:`.corpus` -- a real English corpus of at least 10 MB built from installed files
  (Python's help topics, docstrings, licences, READMEs) for benchmarks;
* :mod:`.training` -- the smaller fixed text (Python's help topics) every trained tokenizer
  of the suite learns from;
* :mod:`.words` -- word tokenization (whitespace and punctuation) and character tokenization;
* :mod:`.wordpiece` -- WordPiece encoding, greedy longest match first with ``##``;
* :mod:`.unigram` -- the Unigram language model: Viterbi, enumeration, EM training and pruning;
* :mod:`.sentencepiece` -- SentencePiece's whitespace marker around a trained Unigram model;
* :mod:`.text` -- the tokenizers above run on text by kind (what ``tokenize_text`` runs).

Not here: WordPiece training, special tokens and vocabularies with ids, and embeddings (a
family of their own).
"""
