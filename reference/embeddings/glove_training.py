"""GloVe (Pennington, Socher and Manning, 2014) trained on a small corpus with AdaGrad.

The trainer does what the paper (section 4.2) and its reference tool (``glove.c``) do, at
the size of the harness's corpora:

1. the vocabulary: the words seen at least ``min_count`` times, most frequent first
   (:func:`.word2vec.build_vocab`); the other words are dropped from the sentences before
   the windows are laid, as ``cooccur.c`` drops them;
2. the counts: :func:`.glove.cooccurrence_counts`, a pair ``d`` positions apart inside a
   sentence adding ``1/d`` to both ``X[a, b]`` and ``X[b, a]``;
3. the fit: every epoch visits the non-zero entries of ``X`` once, in an order drawn from
   the seed, and lowers ``1/2 f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2`` (the cost
   ``glove.c`` computes, half of :func:`.glove.glove_loss`'s term: the same minimum) with
   AdaGrad: each parameter moves by ``lr * g / sqrt(G)``, ``G`` the sum of its squared
   gradients so far, started at 1 as in ``glove.c``; the paper's initial rate is 0.05;
4. the vectors: the paper's ``w + w~`` (the sum of each word's word and context vectors).

The parameters start uniform in ``[-0.5/d, 0.5/d]`` (``glove.c``), drawn from a
``torch.Generator`` seeded with ``seed``; the same seed gives the same vectors. Entries are
taken in mini-batches of :data:`BATCH` (``glove.c`` updates after each entry, in parallel
threads without locks); a batch's gradients on one row are summed before the step. Zero
counts are never visited: ``f(0) = 0`` and ``log 0`` is undefined.

This module does not hold the loss or the weighting (:mod:`.glove`), the Mittens
extension, or the vocabulary cut-off by size that ``glove.c`` also offers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .glove import cooccurrence_counts, glove_weight
from .word2vec import Vocabulary, build_vocab

__all__ = ["BATCH", "GloVeModel", "train_glove"]

#: Non-zero entries per AdaGrad step.
BATCH = 16


@dataclass
class GloVeModel:
    """What :func:`train_glove` returns: the vocabulary, the counts and the trained parameters."""

    vocab: Vocabulary
    counts: torch.Tensor  # (V, V): X
    w: torch.Tensor  # (V, d): word vectors
    w_tilde: torch.Tensor  # (V, d): context vectors
    b: torch.Tensor  # (V,)
    b_tilde: torch.Tensor  # (V,)
    losses: list[float]  # per epoch: the sum of the half-costs of the visited entries, before their steps

    @property
    def vectors(self) -> torch.Tensor:
        """The paper's final vectors ``w + w~``, ``(V, d)``."""
        return self.w + self.w_tilde


def _adagrad(param: torch.Tensor, squares: torch.Tensor, rows: torch.Tensor, grad: torch.Tensor, lr: float) -> None:
    """One AdaGrad step on ``param[rows]``: the gradient ``grad`` (one row per entry, repeated rows summed)."""
    summed = torch.zeros_like(param).index_add_(0, rows, grad)  # (V, ...) the batch's gradient per row
    touched = torch.unique(rows)  # (r,)
    param[touched] -= lr * summed[touched] / squares[touched].sqrt()
    squares[touched] += summed[touched].square()


def train_glove(sentences: Sequence[Sequence[str]], *, dim: int = 16, window: int = 2, epochs: int = 50,
                x_max: float = 100.0, alpha: float = 0.75, lr: float = 0.05, min_count: int = 1, seed: int = 0,
                dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> GloVeModel:
    """Train GloVe on ``sentences`` (lists of words): AdaGrad on the non-zero counts, deterministic for ``seed``."""
    for name, value in (("dim", dim), ("epochs", epochs)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr}")
    vocab = build_vocab(sentences, min_count)
    encoded = [vocab.encode(sentence, skip_unknown=True) for sentence in sentences]
    counts = cooccurrence_counts(encoded, len(vocab), window, dtype=torch.float64)  # (V, V)
    if not bool((counts > 0).any()):
        raise ValueError("no two words of the vocabulary meet inside a window: there is nothing to fit")
    pairs = torch.nonzero(counts)  # (P, 2): the non-zero entries (i, j)
    log_x = torch.log(counts[pairs[:, 0], pairs[:, 1]]).to(dtype)  # (P,)
    weight = glove_weight(counts[pairs[:, 0], pairs[:, 1]], x_max, alpha).to(dtype)  # (P,)

    generator = torch.Generator().manual_seed(seed)
    size = len(vocab)
    start = (torch.rand(2, size, dim + 1, generator=generator, dtype=torch.float64) - 0.5) / dim  # (2, V, d + 1)
    w, w_tilde = start[0, :, :dim].to(dtype).clone(), start[1, :, :dim].to(dtype).clone()  # (V, d) each
    b, b_tilde = start[0, :, dim].to(dtype).clone(), start[1, :, dim].to(dtype).clone()  # (V,) each
    squares = [torch.ones_like(p) for p in (w, w_tilde, b, b_tilde)]

    losses = []
    for _ in range(epochs):
        order = torch.randperm(len(pairs), generator=generator)  # (P,)
        total = 0.0
        for begin in range(0, len(order), BATCH):
            batch = order[begin:begin + BATCH]  # (n,)
            i, j = pairs[batch, 0], pairs[batch, 1]  # (n,) each
            error = (w[i] * w_tilde[j]).sum(dim=1) + b[i] + b_tilde[j] - log_x[batch]  # (n,)
            scaled = weight[batch] * error  # (n,): f(X_ij) times the error, the half-cost's derivative
            total += float(0.5 * (scaled * error).sum())
            grad_w, grad_w_tilde = scaled[:, None] * w_tilde[j], scaled[:, None] * w[i]  # (n, d) each
            _adagrad(w, squares[0], i, grad_w, lr)
            _adagrad(w_tilde, squares[1], j, grad_w_tilde, lr)
            _adagrad(b, squares[2], i, scaled, lr)
            _adagrad(b_tilde, squares[3], j, scaled, lr)
        losses.append(total)
    return GloVeModel(vocab, counts.to(device), w.to(device), w_tilde.to(device), b.to(device), b_tilde.to(device),
                      losses)
