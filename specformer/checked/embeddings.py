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

    def cosine_similarity_refusal(self, a: torch.Tensor, b: torch.Tensor) -> str | None:
        """The message of the ValueError the implementation raises for ``a``, ``b``, or None if it answers
        (:meth:`answer_or_refusal`)."""
        answer = self.answer_or_refusal("cosine_similarity", lambda: self.cosine_similarity(a, b))
        return answer if isinstance(answer, str) else None

    def euclidean_distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """The implementation's row-wise Euclidean distances, as float64."""
        result = self.call("euclidean_distance", self.cast(a), self.cast(b), names=("a", "b"))
        return self._returned("euclidean_distance", result, (a.shape[0],), "Euclidean distances")

    def lookup_gradient(self, ids: torch.Tensor, table: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
        """The implementation's gradient of ``sum(table[ids] * upstream)`` with respect to ``table``, as float64."""
        result = self.call("lookup_gradient", ids.to(torch.int64), self.cast(table), self.cast(upstream),
                           names=("ids", "table", "upstream"))
        return self._returned("lookup_gradient", result, tuple(table.shape), "the table's gradient")

    def embedding_init(self, vocab_size: int, dim: int, seed: int, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The implementation's freshly initialised ``(V, d)`` table for ``seed`` in ``dtype`` (by default the
        row's), as float64. The operation is not told the device: the table is made on the CPU."""
        asked = self.dtype if dtype is None else dtype
        result = self.call("embedding_init", vocab_size, dim, seed, names=("vocab_size", "dim", "seed"), dtype=asked)
        return self._returned("embedding_init", result, (vocab_size, dim), f"the initial table in {asked}", asked)

    def tied_logits(self, hidden: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """The implementation's scores of an output layer tied to ``table``, ``(B, V)``, as float64."""
        result = self.call("tied_logits", self.cast(hidden), self.cast(table), names=("hidden", "table"))
        return self._returned("tied_logits", result, (hidden.shape[0], table.shape[0]), "tied output scores")

    def skipgram_pairs(self, ids: list[int], window: int) -> list[tuple[int, int]]:
        """The implementation's skip-gram ``(centre, context)`` pairs of ``ids``."""
        from specformer.checked.tokenization import _pairs

        result = self.call("skipgram_pairs", list(ids), window, names=("ids", "window"))
        return _pairs("skipgram_pairs", result, int, f"the skip-gram pairs of {len(ids)} words")

    def cbow_examples(self, ids: list[int], window: int) -> list[tuple[list[int], int]]:
        """The implementation's CBOW ``(context, centre)`` examples of ``ids``."""
        from specformer.checked.tokenization import _items
        from specformer.context import ImplementationError

        result = self.call("cbow_examples", list(ids), window, names=("ids", "window"))
        if not isinstance(result, (list, tuple)):
            _items("cbow_examples", result, tuple, f"the CBOW examples of {len(ids)} words")  # raises
        examples = list(result)
        checked = []
        for i, example in enumerate(examples):
            if not isinstance(example, (tuple, list)) or len(example) != 2 or type(example[1]) is not int:
                raise ImplementationError(f"cbow_examples returned {example!r:.200} at index {i}, "
                                          "expected (context ids, centre id)")
            context = _items("cbow_examples", example[0], int, f"the context of example {i}")
            checked.append((context, example[1]))
        return checked

    def skipgram_softmax(self, centre_ids: torch.Tensor, in_table: torch.Tensor, out_table: torch.Tensor) -> torch.Tensor:
        """The implementation's ``p(w | centre)`` ``(B, V)``, as float64."""
        result = self.call("skipgram_softmax", centre_ids.to(torch.int64), self.cast(in_table), self.cast(out_table),
                           names=("centre_ids", "in_table", "out_table"))
        return self._returned("skipgram_softmax", result, (centre_ids.shape[0], out_table.shape[0]),
                              "skip-gram probabilities")

    def negative_sampling_loss(self, centre_ids: torch.Tensor, context_ids: torch.Tensor, negative_ids: torch.Tensor,
                               in_table: torch.Tensor, out_table: torch.Tensor) -> torch.Tensor:
        """The implementation's negative-sampling loss per pair ``(B,)``, as float64."""
        result = self.call("negative_sampling_loss", centre_ids.to(torch.int64), context_ids.to(torch.int64),
                           negative_ids.to(torch.int64), self.cast(in_table), self.cast(out_table),
                           names=("centre_ids", "context_ids", "negative_ids", "in_table", "out_table"))
        return self._returned("negative_sampling_loss", result, (centre_ids.shape[0],), "negative-sampling losses")

    def glove_cooccurrence(self, ids: list[int], vocab_size: int, window: int) -> torch.Tensor:
        """The implementation's co-occurrence counts ``(V, V)``, as float64."""
        result = self.call("glove_cooccurrence", list(ids), vocab_size, window,
                           names=("ids", "vocab_size", "window"), dtype=self.dtype, device=str(self.device))
        return self._returned("glove_cooccurrence", result, (vocab_size, vocab_size), "co-occurrence counts")

    def glove_loss(self, x: torch.Tensor, w: torch.Tensor, w_tilde: torch.Tensor, b: torch.Tensor,
                   b_tilde: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        """The implementation's GloVe loss (0-d), as float64."""
        result = self.call("glove_loss", self.cast(x), self.cast(w), self.cast(w_tilde), self.cast(b),
                           self.cast(b_tilde), names=("x", "w", "w_tilde", "b", "b_tilde"), x_max=x_max, alpha=alpha)
        return self._returned("glove_loss", result, (), "the GloVe loss")

    def fasttext_vector(self, word: str, words: list[str], word_table: torch.Tensor, ngrams: list[str],
                        ngram_table: torch.Tensor, min_n: int = 3, max_n: int = 6) -> torch.Tensor:
        """The implementation's composed FastText vector of ``word`` ``(d,)``, as float64."""
        result = self.call("fasttext_vector", word, list(words), self.cast(word_table), list(ngrams),
                           self.cast(ngram_table), min_n, max_n,
                           names=("word", "words", "word_table", "ngrams", "ngram_table", "min_n", "max_n"))
        return self._returned("fasttext_vector", result, (ngram_table.shape[1],), f"the vector of {word!r:.60}")

    def train_skipgram(self, sentences: list[list[str]], dim: int, window: int, negative: int, epochs: int,
                       seed: int, min_count: int = 1,
                       initial: dict[str, list[float]] | None = None,
                       initial_output: dict[str, list[float]] | None = None) -> tuple[list[str], torch.Tensor]:
        """The implementation's trained vocabulary and input vectors ``(V, dim)`` (its own floating dtype, on the
        device under test), as float64; the vocabulary must be distinct strings.

        ``initial`` and ``initial_output`` (the starting input and output vectors of each word) go as the
        optional keywords of those names; a trainer that does not take one it is given makes the row not
        applicable (:class:`NotApplicable`), after the call.
        """
        from specformer.protocol import NotApplicable

        optional = {name: {w: [float(x) for x in v] for w, v in table.items()}
                    for name, table in (("initial", initial), ("initial_output", initial_output)) if table is not None}
        result = self.call("train_skipgram", [list(s) for s in sentences], dim, window, negative, epochs, seed,
                           min_count, names=("sentences", "dim", "window", "negative", "epochs", "seed", "min_count"),
                           device=str(self.device), optional=optional)
        for name, what in (("initial", "input"), ("initial_output", "output")):
            if name in optional and name not in self.last_applied:
                raise NotApplicable(f"{self.impl_name}.train_skipgram does not take the keyword {name} (the {what} "
                                    "vectors training starts from)")
        return self._vocabulary_and_vectors("train_skipgram", result, dim)

    def train_fasttext(self, sentences: list[list[str]], queries: list[str], dim: int, window: int, negative: int,
                       epochs: int, seed: int, min_n: int = 3, max_n: int = 6) -> torch.Tensor:
        """The implementation's trained vectors of ``queries`` ``(len(queries), dim)``, as float64."""
        result = self.call("train_fasttext", [list(s) for s in sentences], list(queries), dim, window, negative,
                           epochs, seed, min_n, max_n, device=str(self.device),
                           names=("sentences", "queries", "dim", "window", "negative", "epochs", "seed", "min_n",
                                  "max_n"))
        return self._trained("train_fasttext", result, (len(queries), dim), "the vectors of the queried words")

    def train_glove(self, sentences: list[list[str]], dim: int, window: int, epochs: int, seed: int,
                    x_max: float = 100.0, alpha: float = 0.75, min_count: int = 1) -> tuple[list[str], torch.Tensor]:
        """The implementation's trained GloVe vocabulary and vectors ``(V, dim)`` (its own floating dtype, on the
        device under test), as float64; the vocabulary must be distinct strings."""
        result = self.call("train_glove", [list(s) for s in sentences], dim, window, epochs, seed, x_max, alpha,
                           min_count, names=("sentences", "dim", "window", "epochs", "seed", "x_max", "alpha",
                                             "min_count"), device=str(self.device))
        return self._vocabulary_and_vectors("train_glove", result, dim)

    def _vocabulary_and_vectors(self, op: str, result: object, dim: int) -> tuple[list[str], torch.Tensor]:
        """A trainer's ``(words, vectors)``: distinct strings and a trained ``(len(words), dim)`` tensor
        (:meth:`_trained`), the vectors as float64."""
        from specformer.checked.tokenization import _items
        from specformer.runner.wire import describe

        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise ImplementationError(f"{op} returned {describe(result)}, expected (words, vectors)")
        words = _items(op, result[0], str, "the trained vocabulary")
        if len(set(words)) != len(words):
            raise ImplementationError(f"{op} returned a vocabulary that lists a word twice")
        return words, self._trained(op, result[1], (len(words), dim), "the trained vectors")

    def _trained(self, op: str, value: object, shape: tuple[int, int], what: str) -> torch.Tensor:
        """A trained ``shape`` tensor in any floating dtype, on the device under test, finite; as float64."""
        vectors = _own_vectors(op, value, shape[0], what)
        if tuple(vectors.shape) != shape:
            raise ImplementationError(f"{op} returned {what} of shape {tuple(vectors.shape)}, expected {shape}")
        if value.device.split(":")[0] != self.device.type:  # type: ignore[attr-defined]
            raise ImplementationError(f"{op} returned {what} on {value.device}, "  # type: ignore[attr-defined]
                                      f"expected {self.device.type}")
        if not bool(torch.isfinite(vectors).all()):
            raise ImplementationError(f"{op} returned {what} with NaN or infinite entries")
        return vectors

    def token_vectors(self, text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
        """The implementation's tokens of ``text`` and their vectors after ``layer``, as float64."""
        from specformer.checked.tokenization import _items
        from specformer.runner.wire import describe

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
    from specformer.runner.wire import WireTensor, describe

    if not isinstance(value, WireTensor) or len(value.shape) != 2 or value.shape[1] < 1:
        raise ImplementationError(f"{op} returned {describe(value)} for {what}, expected a tensor ({rows}, d)")
    if value.shape[0] != rows:
        raise ImplementationError(f"{op} returned {what} of shape {tuple(value.shape)}, expected ({rows}, d)")
    if not value.dtype.startswith(("float", "bfloat")):
        raise ImplementationError(f"{op} returned {what} of dtype torch.{value.dtype}, expected a floating dtype")
    if value.data is None:
        raise ImplementationError(f"{op} returned {what} whose values cannot be read: {value.problem}")
    return value.data.to(dtype=torch.float64)
