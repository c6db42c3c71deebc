"""word2vec and GloVe written plainly against earlier versions of the protocol, kept as they were written.

``v1`` follows protocol version 1: ``glove_cooccurrence(ids, vocab_size, window, *, dtype)`` takes
no ``device`` (version 2 added it). ``v2`` follows version 2: the same with ``device``, and
without ``train_glove`` (version 3 added it). tests/test_protocol_versions.py runs both against the
current protocol: their rows must pass, with the harness doing the later versions' parts.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class Version1:
    """The documents' word2vec and GloVe formulas, as a user wrote them for protocol version 1."""

    name = "word2vec-glove-v1"

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
            context = [ids[j] for j in range(t - window, t + window + 1) if j != t and 0 <= j < len(ids)]
            if context:
                examples.append((context, ids[t]))
        return examples

    def cbow_hidden(self, context_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        return table[context_ids].mean(dim=1)

    def noise_distribution(self, counts: torch.Tensor, exponent: float = 0.75) -> torch.Tensor:
        weights = counts ** exponent
        return weights / weights.sum()

    def skipgram_softmax(self, centre_ids: torch.Tensor, in_table: torch.Tensor,
                         out_table: torch.Tensor) -> torch.Tensor:
        return torch.softmax(in_table[centre_ids] @ out_table.T, dim=-1)

    def negative_sampling_loss(self, centre_ids: torch.Tensor, context_ids: torch.Tensor,
                               negative_ids: torch.Tensor, in_table: torch.Tensor,
                               out_table: torch.Tensor) -> torch.Tensor:
        centre = in_table[centre_ids]  # (B, d)
        positive = (out_table[context_ids] * centre).sum(dim=-1)  # (B,)
        negative = (out_table[negative_ids] * centre[:, None, :]).sum(dim=-1)  # (B, k)
        return -F.logsigmoid(positive) - F.logsigmoid(-negative).sum(dim=-1)

    def glove_weight(self, x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        return torch.clamp((x / x_max) ** alpha, max=1.0)

    def glove_cooccurrence(self, ids: list[int], vocab_size: int, window: int, *,
                           dtype: torch.dtype = torch.float64) -> torch.Tensor:
        counts = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)
        for t in range(len(ids)):
            for d in range(1, window + 1):
                if t + d < len(ids):
                    counts[ids[t], ids[t + d]] += 1.0 / d
                    counts[ids[t + d], ids[t]] += 1.0 / d
        return counts.to(dtype)

    def glove_loss(self, x: torch.Tensor, w: torch.Tensor, w_tilde: torch.Tensor, b: torch.Tensor,
                   b_tilde: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        seen = x > 0
        log_x = torch.log(torch.where(seen, x, torch.ones_like(x)))
        error = w @ w_tilde.T + b[:, None] + b_tilde[None, :] - log_x
        terms = self.glove_weight(x, x_max, alpha) * error ** 2
        return torch.where(seen, terms, torch.zeros_like(terms)).sum()


class Version2(Version1):
    """The same for protocol version 2: ``glove_cooccurrence`` takes the device under test."""

    name = "word2vec-glove-v2"

    def glove_cooccurrence(self, ids: list[int], vocab_size: int, window: int, *,
                           dtype: torch.dtype = torch.float64, device: str = "cpu") -> torch.Tensor:
        return super().glove_cooccurrence(ids, vocab_size, window, dtype=dtype).to(device)


v1 = Version1()
v2 = Version2()
