"""GloVe (Pennington, Socher and Manning, 2014): weighted least squares on log co-occurrences.

The loss (000, "Word Embeddings Techniques") is

    J = sum_{i, j : X_ij > 0} f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2

with word vectors ``w``, separate context vectors ``w~`` and biases ``b``, ``b~``. The
paper's sum runs over all ``i, j``; pairs with ``X_ij = 0`` contribute nothing because
``f(0) = 0`` (and ``log 0`` is undefined), so they are skipped here, as 002's code
skips them. 002's ``glove_loss`` uses *one* table and *one* bias vector for both roles
(``embeddings[i] . embeddings[j] + biases[i] + biases[j]``): that is this loss with
``w~ = w`` and ``b~ = b`` (:func:`glove_loss_as_002_codes`). As printed, 002's loop
``for i, j in cooccurrence_matrix`` does not enumerate index pairs and its ``x_max`` is
never defined; the paper's values are ``x_max = 100`` and ``alpha = 3/4``, and 002's
exponent is ``0.75``.

The weighting ``f(x) = min(1, (x / x_max)^alpha)`` is 0 at 0, increasing, and capped at
1 from ``x_max`` on: rare pairs (noisy) count little, very frequent pairs no more than
``x_max``-frequent ones.

Co-occurrence counts here follow the reference implementation's choice (``cooccur.c``
and the paper, section 4.2): a pair of words ``d`` positions apart adds ``1/d``
(``weighting="harmonic"``; ``"uniform"`` adds 1), windows do not cross sentence
boundaries, and the count is symmetric: each pair adds to ``X[a, b]`` and ``X[b, a]``.
A word that meets itself inside the window therefore adds ``2/d`` to its diagonal entry.

This module does not hold the AdaGrad training loop, the vocabulary cut-offs or the
sum ``w + w~`` the paper uses as final vectors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .onehot import check_ids, check_table

__all__ = ["cooccurrence_counts", "glove_loss", "glove_loss_as_002_codes", "glove_weight"]


def glove_weight(x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """``f(x) = min(1, (x / x_max)^alpha)`` elementwise, for counts ``x >= 0``."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"x must be a tensor, got {type(x).__name__}")
    x = x if x.dtype.is_floating_point else x.to(torch.float64)
    if not torch.isfinite(x).all() or (x < 0).any():
        raise ValueError("co-occurrence counts must be finite and non-negative")
    if not x_max > 0:
        raise ValueError(f"x_max must be positive, got {x_max}")
    if not alpha > 0:
        raise ValueError(f"alpha must be positive (f(0) = 0 needs it), got {alpha}")
    return (x / x_max).pow(alpha).clamp(max=1.0)


def cooccurrence_counts(sentences: Sequence[Sequence[int]], vocab_size: int, window: int,
                        weighting: str = "harmonic", dtype: torch.dtype = torch.float64,
                        device: torch.device | str = "cpu") -> torch.Tensor:
    """The symmetric ``(V, V)`` co-occurrence matrix of id ``sentences`` within ``window`` positions.

    ``weighting="harmonic"``: a pair ``d`` apart adds ``1/d``; ``"uniform"``: it adds 1.
    The ids are Python integers: they are checked and counted on the CPU in float64, and the
    counts rounded once to ``dtype`` on ``device`` (a float16 sum of many ``1/d`` would round
    at every step).
    """
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")
    if weighting not in ("harmonic", "uniform"):
        raise ValueError(f"weighting must be 'harmonic' or 'uniform', got {weighting!r}")
    if not any(len(s) for s in sentences):
        raise ValueError("the corpus is empty: it has no words")
    rows, cols, values = [], [], []
    for sentence in sentences:
        for t in range(len(sentence)):
            for d in range(1, min(window, len(sentence) - 1 - t) + 1):
                weight = 1.0 / d if weighting == "harmonic" else 1.0
                a, b = int(sentence[t]), int(sentence[t + d])
                rows += [a, b]
                cols += [b, a]
                values += [weight, weight]
    index = torch.tensor([rows, cols], dtype=torch.int64).reshape(2, -1)  # (2, pairs); (2, 0) when none
    check_ids(index, vocab_size)
    counts = torch.zeros(vocab_size * vocab_size, dtype=torch.float64)
    counts.index_add_(0, index[0] * vocab_size + index[1], torch.tensor(values, dtype=torch.float64))
    return counts.reshape(vocab_size, vocab_size).to(device=device, dtype=dtype)  # (V * V,) -> (V, V)


def _check_glove_parameters(x: torch.Tensor, w: torch.Tensor, w_tilde: torch.Tensor, b: torch.Tensor,
                            b_tilde: torch.Tensor) -> None:
    check_table(w)
    check_table(w_tilde)
    vocab_size, dim = w.shape
    if w_tilde.shape != (vocab_size, dim):
        raise ValueError(f"mismatched dimensions: w is {tuple(w.shape)} but w_tilde is {tuple(w_tilde.shape)}")
    if x.shape != (vocab_size, vocab_size):
        raise ValueError(f"mismatched dimensions: X must be ({vocab_size}, {vocab_size}), got {tuple(x.shape)}")
    if b.shape != (vocab_size,) or b_tilde.shape != (vocab_size,):
        raise ValueError(f"the biases must have shape ({vocab_size},), got {tuple(b.shape)} and {tuple(b_tilde.shape)}")


def glove_loss(x: torch.Tensor, w: torch.Tensor, w_tilde: torch.Tensor, b: torch.Tensor, b_tilde: torch.Tensor,
               x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """``sum_{X_ij > 0} f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2`` as a 0-d tensor.

    ``x (V, V)`` counts, ``w``, ``w_tilde (V, d)``, ``b``, ``b_tilde (V,)``.
    """
    _check_glove_parameters(x, w, w_tilde, b, b_tilde)
    weights = glove_weight(x, x_max, alpha)  # (V, V); also checks x >= 0
    present = x > 0  # (V, V)
    log_x = torch.log(torch.where(present, x, torch.ones_like(x)))  # (V, V); 0 where absent, never -inf
    predicted = w @ w_tilde.T + b[:, None] + b_tilde[None, :]  # (V, d) @ (d, V) + (V, 1) + (1, V) -> (V, V)
    return (weights * (predicted - log_x).square())[present].sum()


def glove_loss_as_002_codes(embeddings: torch.Tensor, biases: torch.Tensor, cooccurrence: torch.Tensor,
                            x_max: float = 100.0) -> torch.Tensor:
    """002's ``glove_loss`` loop, with the pairs enumerated as intended: one table and one bias for both roles."""
    _check_glove_parameters(cooccurrence, embeddings, embeddings, biases, biases)
    loss = torch.zeros((), dtype=embeddings.dtype, device=embeddings.device)
    for i, j in torch.nonzero(cooccurrence).tolist():
        x_ij = float(cooccurrence[i, j])
        pred = torch.dot(embeddings[i], embeddings[j]) + biases[i] + biases[j]
        target = math.log(x_ij)
        weight = min(1.0, (x_ij / x_max) ** 0.75)
        loss = loss + weight * (pred - target) ** 2
    return loss
