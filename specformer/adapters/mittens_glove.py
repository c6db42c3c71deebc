"""The ``mittens`` package's NumPy GloVe (Dingwall and Potts) behind the embeddings family's ``train_glove``.

``mittens.np_mittens.GloVe(n=dim, xmax=x_max, alpha=alpha, max_iter=epochs)`` fits vectors to a
co-occurrence matrix it is given; it does not read a corpus. The adapter therefore builds the
matrix itself, as the protocol defines it: the vocabulary is the words seen at least
``min_count`` times, most frequent first (ties: first appearance first); the other words are
dropped from the sentences; a pair ``d <= window`` positions apart inside a sentence adds ``1/d``
to ``X[a, b]`` and ``X[b, a]`` (float64, NumPy). What mittens does with the matrix is its own:
each of the ``epochs`` iterations is one full-batch AdaGrad step (rate 0.05, accumulators
started at 0.1) on ``1/2 sum f(X_ij) (w_i . c_j + b_i + b~_j - log X_ij)^2`` over all entries
(a zero count has weight 0), with ``f(x) = (min(x, x_max) / x_max)^alpha``; it returns
``W + C`` (the paper's ``w + w~``), which the adapter returns as float64.

mittens draws its initial parameters with ``np.random.seed(None)`` followed by uniform draws
(``randmatrix``), so it reseeds NumPy's global generator from the operating system on every fit
and no outside seed reaches it. The adapter draws the same law itself, from
``numpy.random.default_rng(seed)``: ``W`` and ``C`` uniform in ``±sqrt(6 / (V + dim))`` and the
biases uniform in ``±sqrt(6 / (V + 1))`` (mittens' Xavier bounds for a ``(V, dim)`` and a
``(V, 1)`` matrix), and hands them to ``fit`` as ``fixed_initialization`` (which mittens takes in
its ``test_mode``; that mode only keeps copies of the starting values). The same seed then gives
the same vectors. mittens' TensorFlow variant, which ``mittens.GloVe`` prefers when TensorFlow is
installed, is not used.

Two more operations call the code mittens trains with, on the inputs given: ``glove_weight`` is
``GloVe(xmax=x_max, alpha=alpha)._initialize(x)``'s weights, ``(min(x, x_max) / x_max)^alpha``; ``glove_loss``
sets ``W``, ``C``, ``bw``, ``bc`` to the given ``w``, ``w~``, ``b``, ``b~`` and returns the error
``_get_gradients_and_error`` computes from ``_make_prediction()`` and ``_initialize``'s weights and logs (a zero
count's log is left at 0 and its weight is 0): ``1/2 sum f(X_ij) (...)^2``, declared as ``glove_loss_factor`` 0.5.
Both work in float64 NumPy and come back in the input's dtype, on its device.

mittens is imported on first use; without it the operation raises an ``ImportError`` that
names the package. Vectors come back on the device asked for.
"""

from __future__ import annotations

from collections import Counter
from types import ModuleType

import torch

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities

#: The release the adapter is written against.
MITTENS_VERSION = "0.2"


def _np_mittens() -> ModuleType:
    return import_library("mittens.np_mittens", "mittens", "mittens")


def _vocabulary(sentences: list[list[str]], min_count: int) -> list[str]:
    """The words seen at least ``min_count`` times, most frequent first, ties in first-appearance order."""
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}")
    counts = Counter(word for sentence in sentences for word in sentence)
    kept = [word for word, n in counts.items() if n >= min_count]
    if not kept:
        raise ValueError(f"no word of the corpus is seen {min_count} times or more")
    return sorted(kept, key=lambda word: -counts[word])  # stable: ties keep their first appearance


def _numpy(x: torch.Tensor):
    """``x`` as a float64 NumPy array (a copy on the CPU)."""
    import numpy as np

    return np.array(x.detach().to("cpu", torch.float64).numpy(), dtype=np.float64)


class MittensGloVe:
    """mittens 0.2's NumPy GloVe fitted to the counts the adapter builds from the corpus; its weighting; its cost."""

    name = "mittens"
    capabilities = Capabilities(dtypes=frozenset({"float32", "float64"}),
                                conventions={"glove_loss_factor": frozenset({0.5})})

    def glove_weight(self, x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        """The weights mittens' ``GloVe._initialize`` computes for the counts ``x``."""
        model = _np_mittens().GloVe(xmax=x_max, alpha=alpha, display_progress=0)
        weights, _ = model._initialize(_numpy(x))
        return torch.from_numpy(weights).to(dtype=x.dtype, device=x.device)

    def glove_loss(self, x: torch.Tensor, w: torch.Tensor, w_tilde: torch.Tensor, b: torch.Tensor,
                   b_tilde: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        """The error mittens' ``GloVe._get_gradients_and_error`` computes for the given parameters (``1/2 J``)."""
        if x.dim() != 2 or x.shape[0] != x.shape[1] or w.shape != w_tilde.shape or w.shape[0] != x.shape[0] \
                or b.shape != (x.shape[0],) or b_tilde.shape != (x.shape[0],):
            raise ValueError(f"mismatched shapes: X {tuple(x.shape)}, w {tuple(w.shape)}, w~ {tuple(w_tilde.shape)}, "
                             f"b {tuple(b.shape)}, b~ {tuple(b_tilde.shape)}")
        model = _np_mittens().GloVe(n=w.shape[1], xmax=x_max, alpha=alpha, display_progress=0)
        weights, log_coincidence = model._initialize(_numpy(x))
        model.W, model.C = _numpy(w), _numpy(w_tilde)
        model.bw, model.bc = _numpy(b)[:, None], _numpy(b_tilde)[:, None]  # (V,) -> (V, 1), mittens' bias shape
        _, error = model._get_gradients_and_error(model._make_prediction(), log_coincidence, weights)
        return torch.tensor(float(error), dtype=x.dtype, device=x.device)

    def train_glove(self, sentences: list[list[str]], dim: int, window: int, epochs: int, seed: int,
                    x_max: float = 100.0, alpha: float = 0.75, min_count: int = 1, *,
                    device: str = "cpu") -> tuple[list[str], torch.Tensor]:
        """mittens' ``GloVe(n=dim, xmax=x_max, alpha=alpha, max_iter=epochs).fit(X)`` from a seeded start."""
        import numpy as np

        if not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive integer, got {window!r}")
        words = _vocabulary(sentences, min_count)
        index = {word: i for i, word in enumerate(words)}
        counts = np.zeros((len(words), len(words)))
        for sentence in sentences:
            ids = [index[word] for word in sentence if word in index]
            for t in range(len(ids)):
                for d in range(1, min(window, len(ids) - 1 - t) + 1):
                    counts[ids[t], ids[t + d]] += 1.0 / d
                    counts[ids[t + d], ids[t]] += 1.0 / d
        if not (counts > 0).any():
            raise ValueError("no two words of the vocabulary meet inside a window: there is nothing to fit")
        rng = np.random.default_rng(seed)
        size = len(words)
        bound, bias_bound = np.sqrt(6.0 / (size + dim)), np.sqrt(6.0 / (size + 1))
        start = {"W": rng.uniform(-bound, bound, size=(size, dim)), "C": rng.uniform(-bound, bound, size=(size, dim)),
                 "bw": rng.uniform(-bias_bound, bias_bound, size=(size, 1)),
                 "bc": rng.uniform(-bias_bound, bias_bound, size=(size, 1))}
        model = _np_mittens().GloVe(n=dim, xmax=x_max, alpha=alpha, max_iter=epochs, display_progress=0,
                                    test_mode=True)
        vectors = model.fit(counts, fixed_initialization=start)  # (V, dim): W + C
        return words, torch.from_numpy(np.asarray(vectors, dtype=np.float64)).to(device)


implementation = MittensGloVe()
