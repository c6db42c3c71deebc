"""A plain embeddings implementation, written as a user would from `specformer protocol embeddings`.

Started from `specformer new embeddings`; every operation is the documents' formula written
out with torch, or a Python loop where the documents describe one (skip-gram pairs, CBOW
examples, GloVe's co-occurrence counts, the gradient of a lookup, FastText's n-grams).

Not provided: `token_vectors` (it needs a trained contextual model, which a textbook
implementation does not have).

Conventions: the documents' own (a fixed skip-gram window, CBOW contexts without the centre
word); FastText composes by the sum (Bojanowski et al.), which the properties accept
without a declaration.

Check it:  specformer run --impl benchmarks/simple/embeddings.py
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from specformer.protocol import Capabilities


class SimpleEmbeddings:
    """The documents' formulas, written plainly."""

    name = "simple-embeddings"

    capabilities = Capabilities(
        operations=None,
        dtypes=frozenset({"float32", "float64"}),
        devices=frozenset({"cpu"}),
    )

    # -- tables and similarity

    def embedding_lookup(self, ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        return table[ids]

    def cosine_similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        norms = a.norm(dim=-1) * b.norm(dim=-1)
        if (norms == 0).any():
            raise ValueError("the cosine of a zero vector is undefined")
        return (a * b).sum(dim=-1) / norms

    def euclidean_distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return ((a - b) ** 2).sum(dim=-1).sqrt()

    def lookup_gradient(self, ids: torch.Tensor, table: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
        grad = torch.zeros_like(table)
        flat_ids = ids.reshape(-1).tolist()
        flat_upstream = upstream.reshape(-1, table.shape[1])
        for position, word in enumerate(flat_ids):
            grad[word] += flat_upstream[position]
        return grad

    def embedding_init(self, vocab_size: int, dim: int, seed: int, *,
                       dtype: torch.dtype = torch.float32) -> torch.Tensor:
        generator = torch.Generator().manual_seed(seed)
        return torch.randn(vocab_size, dim, generator=generator, dtype=dtype)

    def tied_logits(self, hidden: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        return hidden @ table.T

    # -- word2vec

    def cbow_hidden(self, context_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        return table[context_ids].mean(dim=1)

    def noise_distribution(self, counts: torch.Tensor, exponent: float = 0.75) -> torch.Tensor:
        weights = counts ** exponent
        return weights / weights.sum()

    def skipgram_pairs(self, ids: list[int], window: int) -> list[tuple[int, int]]:
        pairs = []
        for t in range(len(ids)):
            for j in range(-window, window + 1):
                if j != 0 and 0 <= t + j < len(ids):
                    pairs.append((ids[t], ids[t + j]))
        return pairs

    def cbow_examples(self, ids: list[int], window: int) -> list[tuple[list[int], int]]:
        examples = []
        for t in range(len(ids)):
            context = []
            for j in range(t - window, t + window + 1):
                if j != t and 0 <= j < len(ids):
                    context.append(ids[j])
            if context:
                examples.append((context, ids[t]))
        return examples

    def skipgram_softmax(self, centre_ids: torch.Tensor, in_table: torch.Tensor,
                         out_table: torch.Tensor) -> torch.Tensor:
        scores = in_table[centre_ids] @ out_table.T
        return torch.softmax(scores, dim=-1)

    def negative_sampling_loss(self, centre_ids: torch.Tensor, context_ids: torch.Tensor,
                               negative_ids: torch.Tensor, in_table: torch.Tensor,
                               out_table: torch.Tensor) -> torch.Tensor:
        centre = in_table[centre_ids]  # (B, d)
        positive = (out_table[context_ids] * centre).sum(dim=-1)  # (B,)
        negative = (out_table[negative_ids] * centre[:, None, :]).sum(dim=-1)  # (B, k)
        return -F.logsigmoid(positive) - F.logsigmoid(-negative).sum(dim=-1)

    # -- GloVe

    def glove_weight(self, x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        return torch.clamp((x / x_max) ** alpha, max=1.0)

    def glove_cooccurrence(self, ids: list[int], vocab_size: int, window: int, *,
                           dtype: torch.dtype = torch.float64, device: str = "cpu") -> torch.Tensor:
        counts = [[0.0] * vocab_size for _ in range(vocab_size)]
        for t in range(len(ids)):
            for d in range(1, window + 1):
                if t + d < len(ids):
                    counts[ids[t]][ids[t + d]] += 1.0 / d
                    counts[ids[t + d]][ids[t]] += 1.0 / d
        return torch.tensor(counts, dtype=dtype, device=device)

    def glove_loss(self, x: torch.Tensor, w: torch.Tensor, w_tilde: torch.Tensor, b: torch.Tensor,
                   b_tilde: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        seen = x > 0
        log_x = torch.log(torch.where(seen, x, torch.ones_like(x)))
        error = w @ w_tilde.T + b[:, None] + b_tilde[None, :] - log_x
        terms = self.glove_weight(x, x_max, alpha) * error ** 2
        return torch.where(seen, terms, torch.zeros_like(terms)).sum()

    # -- FastText

    def char_ngrams(self, word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
        marked = "<" + word + ">"
        grams = []
        for n in range(min_n, max_n + 1):
            for i in range(len(marked) - n + 1):
                grams.append(marked[i:i + n])
        return grams

    def fasttext_vector(self, word: str, words: list[str], word_table: torch.Tensor, ngrams: list[str],
                        ngram_table: torch.Tensor, min_n: int = 3, max_n: int = 6) -> torch.Tensor:
        vector = torch.zeros(word_table.shape[1], dtype=word_table.dtype, device=word_table.device)
        if word in words:
            vector = vector + word_table[words.index(word)]
        for gram in self.char_ngrams(word, min_n, max_n):
            if gram in ngrams:
                vector = vector + ngram_table[ngrams.index(gram)]
        return vector


#: What `specformer run --impl benchmarks/simple/embeddings.py` loads.
implementation = SimpleEmbeddings
