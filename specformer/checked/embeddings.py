"""Checked calls of the embeddings family.

Mixed into :class:`specformer.context.Context`: casts float inputs to the dtype under test
(ids stay ``int64``; word counts travel as whole numbers in the dtype under test), calls the operation in the implementation's
worker, checks the result's shape, dtype and device (or, for n-grams, that it is a list
of strings), and returns float64 CPU tensors. Contextual vectors keep the dtype and
device of the model that computes them: only their shape and floating kind are checked.
"""

from __future__ import annotations


import torch

from specformer.checked import register
from specformer.checked.base import ContextBase as _Base
from specformer.checked.base import ImplementationError


@register
class EmbeddingCalls(_Base):
    """The embeddings family's operations, as a property calls them."""

    def embedding_lookup(self, ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """The implementation's rows ``table[ids]``, as float64."""
        result = self.call("embedding_lookup", ids.to(torch.int64), self.cast(table), names=("ids", "table"))
        return self._returned("embedding_lookup", result, (*ids.shape, table.shape[-1]), "looked-up rows")

    def cosine_similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """The implementation's row-wise cosine similarities, as float64."""
        result = self.call("cosine_similarity", self.cast(a), self.cast(b), names=("a", "b"))
        return self._returned("cosine_similarity", result, (a.shape[0],), "cosine similarities")

    def cbow_hidden(self, context_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """The implementation's CBOW hidden vectors ``(B, d)``, as float64."""
        result = self.call("cbow_hidden", context_ids.to(torch.int64), self.cast(table),
                           names=("context_ids", "table"))
        return self._returned("cbow_hidden", result, (context_ids.shape[0], table.shape[-1]), "CBOW hidden vectors")

    def noise_distribution(self, counts: torch.Tensor, exponent: float = 0.75) -> torch.Tensor:
        """The implementation's noise distribution ``(V,)``, as float64."""
        result = self.call("noise_distribution", self.cast(counts.to(torch.float64)), names=("counts",),
                           exponent=exponent)
        return self._returned("noise_distribution", result, (counts.shape[0],), "noise probabilities")

    def glove_weight(self, x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        """The implementation's GloVe weights, as float64."""
        result = self.call("glove_weight", self.cast(x), names=("x",), x_max=x_max, alpha=alpha)
        return self._returned("glove_weight", result, tuple(x.shape), "GloVe weights")

    def char_ngrams(self, word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
        """The implementation's character n-grams of ``word``."""
        from specformer.checked.tokenization import _items

        result = self.call("char_ngrams", word, min_n, max_n, names=("word", "min_n", "max_n"))
        return _items("char_ngrams", result, str, f"the n-grams of {word!r:.100}")

    def token_vectors(self, text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
        """The implementation's tokens of ``text`` and their vectors after ``layer``, as float64."""
        from specformer.checked.tokenization import _items
        from specformer.wire import describe

        result = self.call("token_vectors", text, names=("text",), layer=layer)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise ImplementationError(f"token_vectors returned {describe(result)}, expected (tokens, vectors)")
        tokens = _items("token_vectors", result[0], str, f"the tokens of {text!r:.100}")
        return tokens, _own_vectors("token_vectors", result[1], len(tokens), "token vectors")


def _own_vectors(op: str, value: object, rows: int, what: str) -> torch.Tensor:
    """A returned ``(rows, d)`` tensor of the implementation's own vectors, as float64 on the CPU.

    A model's vectors keep the dtype and device the model holds (float32 for most), so
    unlike :meth:`Context._returned` any floating dtype and any device is taken;
    the shape, the dtype's kind and the values are checked.
    """
    from specformer.wire import WireTensor, describe

    if not isinstance(value, WireTensor) or len(value.shape) != 2 or value.shape[1] < 1:
        raise ImplementationError(f"{op} returned {describe(value)} for {what}, expected a tensor ({rows}, d)")
    if value.shape[0] != rows:
        raise ImplementationError(f"{op} returned {what} of shape {tuple(value.shape)}, expected ({rows}, d)")
    if not value.dtype.startswith(("float", "bfloat")):
        raise ImplementationError(f"{op} returned {what} of dtype torch.{value.dtype}, expected a floating dtype")
    if value.data is None:
        raise ImplementationError(f"{op} returned {what} whose values cannot be read: {value.problem}")
    return value.data.to(dtype=torch.float64)
