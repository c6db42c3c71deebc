"""The reference implementation (:mod:`specformer.reference`) behind the protocol.

No conversion is needed: the reference defines the protocol's conventions.
"""

from __future__ import annotations

from typing import Any

import torch

from specformer.protocol.blocks import ModelConfig
from specformer.protocol.capabilities import Capabilities
from specformer.reference.attention.attention import AttentionOutput, scaled_dot_product_attention
from specformer.reference.attention.multihead import MultiHeadParams, multi_head_attention
from specformer.reference.attention.scores import SCORE_FUNCTIONS

#: The text tokenizers the reference runs (:data:`specformer.reference.tokenization.text.KINDS`, repeated here so
#: that loading the adapter does not build a tokenizer).
REFERENCE_KINDS = ("words", "characters", "bpe", "byte-bpe", "unigram")


class ReferenceImplementation:
    """Attention, multi-head attention, the score functions and the positional encodings of the reference."""

    name = "reference"
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset(REFERENCE_KINDS)})

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                  *, causal: bool = False, need_weights: bool = True) -> AttentionOutput:
        """:func:`specformer.reference.attention.attention.scaled_dot_product_attention` (weights always)."""
        return scaled_dot_product_attention(q, k, v, mask, causal=causal)

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None) -> torch.Tensor:
        """:func:`specformer.reference.attention.multihead.multi_head_attention`."""
        return multi_head_attention(query, key, value, params, mask)

    def score(self, kind: str, q: torch.Tensor, k: torch.Tensor, **params: Any) -> torch.Tensor:
        """A score function of :mod:`specformer.reference.attention.scores` by name."""
        try:
            fn = SCORE_FUNCTIONS[kind]
        except KeyError:
            raise ValueError(f"unknown score function {kind!r}; known: {sorted(SCORE_FUNCTIONS)}") from None
        return fn(q, k, **params)


    # -- the positions family ----------------------------------------------------------
    def positional_encoding(self, kind: str, positions: torch.Tensor, d_model: int, *, dtype: torch.dtype,
                            **params: Any) -> torch.Tensor:
        """:mod:`specformer.reference.positions.sinusoidal` or :mod:`~specformer.reference.positions.bits` by ``kind``."""
        from specformer.reference.positions.bits import binary_encoding
        from specformer.reference.positions.sinusoidal import sinusoidal_encoding

        if kind == "sinusoidal":
            return sinusoidal_encoding(positions, d_model, dtype=dtype, **params)
        if kind == "binary":
            return binary_encoding(positions, d_model, dtype=dtype, **params)
        raise ValueError(f"unknown positional encoding {kind!r}; known: sinusoidal, binary")

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """:func:`specformer.reference.positions.rope.rotary_embedding`."""
        from specformer.reference.positions.rope import rotary_embedding

        return rotary_embedding(x, positions, pairing=pairing, base=base)

    def alibi_bias(self, h: int, t_q: int, t_k: int, *, causal: bool = False, dtype: torch.dtype,
                   device: str) -> torch.Tensor:
        """:func:`specformer.reference.positions.alibi.alibi_bias`, the paper's slopes."""
        from specformer.reference.positions.alibi import alibi_bias

        return alibi_bias(h, t_q, t_k, causal=causal, dtype=dtype, device=device)

    def alibi_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                        causal: bool = False) -> torch.Tensor:
        """:func:`specformer.reference.positions.alibi.alibi_attention`."""
        from specformer.reference.positions.alibi import alibi_attention

        return alibi_attention(q, k, v, causal=causal)

    def learned_positions(self, positions: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.positions.learned.learned_positions`."""
        from specformer.reference.positions.learned import learned_positions

        return learned_positions(positions, table)

    def input_embedding(self, tokens: torch.Tensor, token_table: torch.Tensor, position_table: torch.Tensor, *,
                        scale: bool = False) -> torch.Tensor:
        """:func:`specformer.reference.positions.learned.input_embedding`."""
        from specformer.reference.positions.learned import input_embedding

        return input_embedding(tokens, token_table, position_table, scale=scale)

    # -- the blocks family -------------------------------------------------------------
    def layer_norm(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
        """:func:`specformer.reference.blocks.layernorm.layer_norm`."""
        from specformer.reference.blocks.layernorm import layer_norm

        return layer_norm(x, gamma, beta, eps)

    def feed_forward(self, x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor,
                     b_2: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
        """:func:`specformer.reference.blocks.ffn.feed_forward`."""
        from specformer.reference.blocks.ffn import feed_forward

        return feed_forward(x, w_1, b_1, w_2, b_2, activation)

    def encoder_layer(self, x: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int, norm_first: bool,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """:func:`specformer.reference.blocks.encoder_layer.encoder_layer`."""
        from specformer.reference.blocks.encoder_layer import encoder_layer

        return encoder_layer(x, weights, heads=heads, norm_first=norm_first, activation=activation, eps=eps,
                             causal=causal)

    def decoder_layer(self, x: torch.Tensor, memory: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
                      norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
        """:func:`specformer.reference.blocks.decoder_layer.decoder_layer`."""
        from specformer.reference.blocks.decoder_layer import decoder_layer

        return decoder_layer(x, memory, weights, heads=heads, norm_first=norm_first, activation=activation, eps=eps)

    def encoder_stack(self, x: torch.Tensor, layers: list[dict[str, torch.Tensor]], *, heads: int,
                      norm_first: bool, final_norm: tuple[torch.Tensor, torch.Tensor] | None = None,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """:func:`specformer.reference.blocks.stack.encoder_stack`."""
        from specformer.reference.blocks.stack import encoder_stack

        return encoder_stack(x, layers, heads=heads, norm_first=norm_first, final_norm=final_norm,
                             activation=activation, eps=eps, causal=causal)

    def count_parameters(self, config: ModelConfig) -> int:
        """:func:`specformer.reference.blocks.size.count_parameters`."""
        from specformer.reference.blocks.size import count_parameters

        return count_parameters(config)

    # -- the tokenization family -------------------------------------------------------
    def bpe_train(self, words: dict[str, int], num_merges: int, *, end_of_word: str = "</w>") -> list[tuple[str, str]]:
        """:func:`specformer.reference.tokenization.bpe.train_bpe` (the incremental trainer)."""
        from specformer.reference.tokenization.bpe import train_bpe

        return train_bpe(words, num_merges, end_of_word=end_of_word)

    def bpe_encode(self, word: str, merges: list[tuple[str, str]], *, end_of_word: str = "</w>") -> list[str]:
        """:func:`specformer.reference.tokenization.bpe.encode`: merges in rank order."""
        from specformer.reference.tokenization.bpe import encode

        return encode(word, merges, end_of_word=end_of_word)

    def byte_bpe_train(self, words: dict[bytes, int], num_merges: int) -> list[tuple[bytes, bytes]]:
        """:func:`specformer.reference.tokenization.bpe.train_byte_bpe`."""
        from specformer.reference.tokenization.bpe import train_byte_bpe

        return train_byte_bpe(words, num_merges)

    def byte_bpe_encode(self, text: str, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
        """:func:`specformer.reference.tokenization.bpe.encode_bytes`."""
        from specformer.reference.tokenization.bpe import encode_bytes

        return encode_bytes(text, merges)

    def byte_bpe_decode(self, tokens: list[bytes]) -> str:
        """:func:`specformer.reference.tokenization.bpe.decode_bytes`."""
        from specformer.reference.tokenization.bpe import decode_bytes

        return decode_bytes(tokens)

    def wordpiece(self, word: str, vocab: list[str], *, unk: str = "[UNK]", prefix: str = "##",
                  max_chars: int = 100) -> list[str]:
        """:func:`specformer.reference.tokenization.wordpiece.wordpiece`: greedy longest match first."""
        from specformer.reference.tokenization.wordpiece import wordpiece

        return wordpiece(word, vocab, unk=unk, prefix=prefix, max_chars=max_chars)

    def unigram_segment(self, word: str, pieces: dict[str, float]) -> list[str]:
        """:func:`specformer.reference.tokenization.unigram.viterbi`."""
        from specformer.reference.tokenization.unigram import viterbi

        return viterbi(word, pieces)

    def unigram_em_step(self, words: dict[str, int], pieces: dict[str, float]) -> dict[str, float]:
        """:func:`specformer.reference.tokenization.unigram.em_step`."""
        from specformer.reference.tokenization.unigram import em_step

        return em_step(words, pieces)

    def unigram_prune(self, words: dict[str, int], pieces: dict[str, float], size: int) -> dict[str, float]:
        """:func:`specformer.reference.tokenization.unigram.prune`."""
        from specformer.reference.tokenization.unigram import prune

        return prune(words, pieces, size)

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """:func:`specformer.reference.tokenization.text.tokenize_text` (words, characters, bpe, byte-bpe, unigram)."""
        from specformer.reference.tokenization.text import tokenize_text

        return tokenize_text(kind, text)

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """:func:`specformer.reference.tokenization.text.detokenize_text`."""
        from specformer.reference.tokenization.text import detokenize_text

        return detokenize_text(kind, tokens)

    # -- the embeddings family ---------------------------------------------------------
    def embedding_lookup(self, ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.onehot.lookup`."""
        from specformer.reference.embeddings.onehot import lookup

        return lookup(ids, table)

    def cosine_similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.similarity.cosine_similarity` (a zero row raises)."""
        from specformer.reference.embeddings.similarity import cosine_similarity

        return cosine_similarity(a, b)

    def cbow_hidden(self, context_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.word2vec.cbow_context_mean`."""
        from specformer.reference.embeddings.word2vec import cbow_context_mean

        return cbow_context_mean(context_ids, table)

    def noise_distribution(self, counts: torch.Tensor, exponent: float = 0.75) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.word2vec.noise_distribution`."""
        from specformer.reference.embeddings.word2vec import noise_distribution

        return noise_distribution(counts, exponent)

    def glove_weight(self, x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.glove.glove_weight`."""
        from specformer.reference.embeddings.glove import glove_weight

        return glove_weight(x, x_max, alpha)

    def char_ngrams(self, word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
        """:func:`specformer.reference.embeddings.fasttext.char_ngrams`."""
        from specformer.reference.embeddings.fasttext import char_ngrams

        return char_ngrams(word, min_n, max_n)

    def euclidean_distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.similarity.euclidean_distance`."""
        from specformer.reference.embeddings.similarity import euclidean_distance

        return euclidean_distance(a, b)

    def lookup_gradient(self, ids: torch.Tensor, table: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.onehot.lookup_gradient`."""
        from specformer.reference.embeddings.onehot import lookup_gradient

        return lookup_gradient(ids, table, upstream)

    def embedding_init(self, vocab_size: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.onehot.initial_table` (standard normal entries)."""
        from specformer.reference.embeddings.onehot import initial_table

        return initial_table(vocab_size, dim, seed, dtype=dtype)

    def tied_logits(self, hidden: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.onehot.tied_logits`."""
        from specformer.reference.embeddings.onehot import tied_logits

        return tied_logits(hidden, table)

    def skipgram_pairs(self, ids: list[int], window: int) -> list[tuple[int, int]]:
        """:func:`specformer.reference.embeddings.word2vec.skipgram_pairs` (a fixed window)."""
        from specformer.reference.embeddings.word2vec import skipgram_pairs

        return skipgram_pairs(ids, window)

    def cbow_examples(self, ids: list[int], window: int) -> list[tuple[list[int], int]]:
        """:func:`specformer.reference.embeddings.word2vec.cbow_examples` (the centre word left out)."""
        from specformer.reference.embeddings.word2vec import cbow_examples

        return cbow_examples(ids, window)

    def skipgram_softmax(self, centre_ids: torch.Tensor, in_table: torch.Tensor, out_table: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.word2vec.skipgram_probabilities`."""
        from specformer.reference.embeddings.word2vec import skipgram_probabilities

        return skipgram_probabilities(centre_ids, in_table, out_table)

    def negative_sampling_loss(self, centre_ids: torch.Tensor, context_ids: torch.Tensor, negative_ids: torch.Tensor,
                               in_table: torch.Tensor, out_table: torch.Tensor) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.word2vec.negative_sampling_loss` on the looked-up rows."""
        from specformer.reference.embeddings.onehot import check_ids
        from specformer.reference.embeddings.word2vec import negative_sampling_loss

        for ids in (centre_ids, context_ids, negative_ids):
            check_ids(ids, in_table.shape[0])
        return negative_sampling_loss(in_table[centre_ids], out_table[context_ids], out_table[negative_ids])

    def glove_cooccurrence(self, ids: list[int], vocab_size: int, window: int, *,
                           dtype: torch.dtype = torch.float64, device: str = "cpu") -> torch.Tensor:
        """:func:`specformer.reference.embeddings.glove.cooccurrence_counts` (``1/d`` weighting)."""
        from specformer.reference.embeddings.glove import cooccurrence_counts

        return cooccurrence_counts([ids], vocab_size, window, dtype=dtype, device=device)

    def glove_loss(self, x: torch.Tensor, w: torch.Tensor, w_tilde: torch.Tensor, b: torch.Tensor,
                   b_tilde: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.glove.glove_loss`."""
        from specformer.reference.embeddings.glove import glove_loss

        return glove_loss(x, w, w_tilde, b, b_tilde, x_max, alpha)

    def fasttext_vector(self, word: str, words: list[str], word_table: torch.Tensor, ngrams: list[str],
                        ngram_table: torch.Tensor, min_n: int = 3, max_n: int = 6) -> torch.Tensor:
        """:func:`specformer.reference.embeddings.fasttext.word_vector` with ``combine="mean"`` (fastText's)."""
        from specformer.reference.embeddings.fasttext import word_vector

        return word_vector(word, {g: i for i, g in enumerate(ngrams)}, ngram_table,
                           word_index={w: i for i, w in enumerate(words)}, word_table=word_table,
                           min_n=min_n, max_n=max_n, combine="mean")

    def train_skipgram(self, sentences: list[list[str]], dim: int, window: int, negative: int, epochs: int,
                       seed: int, min_count: int = 1, *, device: str = "cpu",
                       initial: dict[str, list[float]] | None = None,
                       initial_output: dict[str, list[float]] | None = None) -> tuple[list[str], torch.Tensor]:
        """:func:`specformer.reference.embeddings.word2vec.train_word2vec` (skip-gram, negative sampling, float32),
        starting from the ``initial`` input and ``initial_output`` output vectors (laid out in its vocabulary's
        order) when given."""
        from specformer.reference.embeddings.word2vec import build_vocab, train_word2vec

        words = build_vocab(sentences, min_count).words
        tables = [None if given is None else torch.tensor([list(given[w]) for w in words], dtype=torch.float64)
                  for given in (initial, initial_output)]  # (V, dim) each, in the vocabulary's order
        model = train_word2vec(sentences, architecture="skipgram", loss="negative", dim=dim, window=window,
                               negative=negative, epochs=epochs, min_count=min_count, seed=seed, dtype=torch.float32,
                               initial=tables[0], initial_output=tables[1])
        return list(model.vocab.words), model.input_vectors.to(device)

    def train_fasttext(self, sentences: list[list[str]], queries: list[str], dim: int, window: int, negative: int,
                       epochs: int, seed: int, min_n: int = 3, max_n: int = 6, *, device: str = "cpu") -> torch.Tensor:
        """:func:`specformer.reference.embeddings.fasttext_training.train_fasttext`, then each query's mean of
        its own row (if known) and its trained n-grams' rows."""
        from specformer.reference.embeddings.fasttext_training import train_fasttext

        model = train_fasttext(sentences, dim=dim, window=window, negative=negative, epochs=epochs, min_n=min_n,
                               max_n=max_n, seed=seed)
        return torch.stack([model.vector(word) for word in queries]).to(device)  # (Q, d)

    def train_glove(self, sentences: list[list[str]], dim: int, window: int, epochs: int, seed: int,
                    x_max: float = 100.0, alpha: float = 0.75, min_count: int = 1, *,
                    device: str = "cpu") -> tuple[list[str], torch.Tensor]:
        """:func:`specformer.reference.embeddings.glove_training.train_glove` (AdaGrad, float64), returning
        ``w + w~``."""
        from specformer.reference.embeddings.glove_training import train_glove

        model = train_glove(sentences, dim=dim, window=window, epochs=epochs, x_max=x_max, alpha=alpha,
                            min_count=min_count, seed=seed)
        return list(model.vocab.words), model.vectors.to(device)

    def token_vectors(self, text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
        """:func:`specformer.reference.embeddings.contextual.token_vectors` (float64, on the CPU)."""
        from specformer.reference.embeddings.contextual import token_vectors

        return token_vectors(text, layer)


implementation = ReferenceImplementation()
