"""Worked examples of each family's conventions: a call, what it returns, and what it shows.

Each family's protocol page (and ``specformer protocol FAMILY``) shows these under its
conventions, so that a convention is read from a value and not only from prose: the
end-of-word marker of character-level BPE is a symbol of its own until a merge joins it,
``bpe_encode('low', []) == ['l', 'o', 'w', '</w>']``. An :class:`Example` is Python
text, evaluated by :func:`run_example` with the operations of an implementation as plain
names (``bpe_encode``, ``attention``, ...), ``torch``, ``inf``, :class:`ModelConfig` and
:class:`MultiHeadParams`. ``tests/test_protocol_examples.py`` runs every example on the
reference implementation, so they hold for it; the other implementations are checked by
the properties, not here.

This module does not check an implementation's conformance, and it is not imported by
:mod:`specformer.protocol` (the suite never needs it).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple

import torch

from specformer.protocol import OPERATIONS
from specformer.protocol.attention import MultiHeadParams
from specformer.protocol.blocks import ModelConfig

__all__ = ["EXAMPLES", "Example", "agrees", "namespace", "run_example"]


class Example(NamedTuple):
    """A call of one operation and its result, as Python text, and the convention it shows.

    A tensor result is compared entry by entry within ``atol`` (its digits are rounded);
    any other result must be equal.
    """

    call: str
    result: str
    shows: str
    atol: float = 1e-4


_T = "torch.tensor"

#: The worked examples of each family, by family name.
EXAMPLES: Mapping[str, tuple[Example, ...]] = {
    "tokenization": (
        Example("bpe_encode('low', [])", "['l', 'o', 'w', '</w>']",
                "The end-of-word marker is a symbol of its own: without merges a word is its characters "
                "and then `'</w>'`."),
        Example("bpe_encode('low', [('w', '</w>')])", "['l', 'o', 'w</w>']",
                "The marker joins the last character only through a learned merge."),
        Example("bpe_train({'low': 5, 'lower': 2}, 3)", "[('l', 'o'), ('lo', 'w'), ('low', '</w>')]",
                "Merges come back in the order learned; a pair's count is weighted by its word's count "
                "(`('l', 'o')` is seen 5 + 2 times)."),
        Example("bpe_encode('lower', [('l', 'o'), ('lo', 'w'), ('low', '</w>')])", "['low', 'e', 'r', '</w>']",
                "Encoding applies the merges in the order learned; a merge that never applies leaves the "
                "marker alone."),
        Example("byte_bpe_encode('hé', [])", "[b'h', b'\\xc3', b'\\xa9']",
                "Byte-level BPE starts from UTF-8 bytes: `'é'` is two byte tokens until a merge joins them."),
        Example("byte_bpe_decode([b'h', b'\\xc3', b'\\xa9'])", "'hé'",
                "Decoding joins the bytes and reads them as UTF-8."),
        Example("wordpiece('unaffable', ['un', '##aff', '##able'])", "['un', '##aff', '##able']",
                "Pieces after the first carry the continuation prefix `'##'`."),
        Example("wordpiece('xyz', ['un'])", "['[UNK]']",
                "A word the vocabulary cannot cover is the unknown token alone."),
        Example("unigram_segment('ab', {'a': -1.0, 'b': -1.0, 'ab': -1.5})", "['ab']",
                "The segmentation of largest total log-probability: -1.5 beats -1.0 - 1.0."),
    ),
    "embeddings": (
        Example(f"embedding_lookup({_T}([1, 0]), {_T}([[1.0, 2.0], [3.0, 4.0]]))",
                f"{_T}([[3.0, 4.0], [1.0, 2.0]])", "A table is (V, d), one row per id; vectors are rows."),
        Example(f"cosine_similarity({_T}([[1.0, 0.0]]), {_T}([[1.0, 1.0]]))", f"{_T}([0.7071])",
                "Row-wise cosine of two (n, d) tensors: shape (n,)."),
        Example("skipgram_pairs([1, 2, 3], 1)", "[(1, 2), (2, 1), (2, 3), (3, 2)]",
                "Skip-gram pairs (centre, context) with a fixed window, by centre position, then offset."),
        Example("cbow_examples([10, 11, 12, 13], 2)",
                "[([11, 12], 10), ([10, 12, 13], 11), ([10, 11, 13], 12), ([11, 12], 13)]",
                "CBOW's context is the words at most `window` positions away, in text order, the centre left "
                "out; near the start of the text it has fewer words on the left."),
        Example("char_ngrams('where', 3, 3)", "['<wh', 'whe', 'her', 'ere', 're>']",
                "FastText's n-grams are taken of the word inside the boundary markers `'<'` and `'>'`."),
        Example(f"noise_distribution({_T}([1.0, 16.0]), 0.75)", f"{_T}([0.1111, 0.8889])",
                "`P(w)` is proportional to `count(w)^0.75`: 1 and `16^0.75 = 8`, normalised."),
        Example(f"glove_weight({_T}([0.0, 50.0, 100.0, 200.0]), 100.0, 0.75)", f"{_T}([0.0, 0.5946, 1.0, 1.0])",
                "GloVe's weight `min(1, (x / x_max)^alpha)`: 0 for pairs never seen, 1 from x_max on."),
        Example("glove_cooccurrence([0, 1, 0], 2, 2)", f"{_T}([[1.0, 2.0], [2.0, 0.0]])",
                "Two positions `d` apart add `1/d` to `X[a, b]` and to `X[b, a]`: the pairs (0, 1) and (1, 0) at "
                "distance 1, and word 0 with itself at distance 2 (1/2 twice)."),
        Example(f"lookup_gradient({_T}([0, 0]), torch.zeros(2, 1), {_T}([[1.0], [2.0]]))",
                f"{_T}([[3.0], [0.0]])",
                "The gradient of a lookup: repeated ids accumulate, rows never looked up get zero."),
        Example(f"fasttext_vector('ab', ['ab'], {_T}([[1.0, 0.0]]), ['<ab', 'ab>'], "
                f"{_T}([[0.0, 2.0], [0.0, 4.0]]), 3, 3)", f"{_T}([0.3333, 2.0])",
                "The composition is a convention; the reference's is `'mean'`: the word's row and its two n-gram "
                "rows averaged (`'sum'` would give `[1, 6]`, `'word_plus_mean'` `[1, 3]`)."),
    ),
    "positions": (
        Example(f"positional_encoding('sinusoidal', {_T}([0, 1]), 4, dtype=torch.float64)",
                f"{_T}([[0.0, 1.0, 0.0, 1.0], [0.8415, 0.5403, 0.0100, 1.0000]])",
                "Feature `2i` is the sine and `2i + 1` the cosine of frequency `i`: 1 and `1/10000^(2/4) = 0.01`."),
        Example(f"positional_encoding('binary', {_T}([5]), 4, dtype=torch.float64)", f"{_T}([[1.0, 0.0, 1.0, 0.0]])",
                "Binary encodings give the bits of the position, least significant first: 5 is 1, 0, 1, 0."),
        Example(f"rotary({_T}([[[1.0, 0.0, 0.0, 0.0]]]), {_T}([1]), pairing='interleaved')",
                f"{_T}([[[0.5403, 0.8415, 0.0, 0.0]]])",
                "`pairing='interleaved'` rotates features (0, 1) together, by angle 1 at position 1."),
        Example(f"rotary({_T}([[[1.0, 0.0, 0.0, 0.0]]]), {_T}([1]), pairing='half')",
                f"{_T}([[[0.5403, 0.0, 0.8415, 0.0]]])",
                "`pairing='half'` rotates features `(i, i + d/2)` together: here 0 and 2."),
        Example("alibi_bias(2, 2, 2, causal=True, dtype=torch.float64, device='cpu')",
                f"{_T}([[[0.0, -inf], [-0.0625, 0.0]], [[0.0, -inf], [-0.0039, 0.0]]])",
                "ALiBi's bias `-m_h |i - j|` with the slopes 2^-4 and 2^-8 of two heads; -inf above the "
                "diagonal under the causal mask."),
        Example(f"input_embedding({_T}([[1]]), {_T}([[0.0, 0.0], [1.0, 2.0]]), {_T}([[10.0, 20.0]]), scale=True)",
                f"{_T}([[[11.4142, 22.8284]]])",
                "`scale=True` multiplies the token row by `sqrt(d_model) = sqrt(2)` before the position row is "
                "added."),
    ),
    "attention": (
        Example(f"attention({_T}([[[1.0]]]), {_T}([[[1.0], [1.0]]]), {_T}([[[1.0], [3.0]]]), "
                f"{_T}([[[True, False]]])).output", f"{_T}([[[1.0]]])",
                "A mask is True where a query may attend: the second key is masked, the output is the first "
                "value."),
        Example(f"attention({_T}([[[1.0]]]), {_T}([[[1.0], [1.0]]]), {_T}([[[1.0], [3.0]]])).output",
                f"{_T}([[[2.0]]])", "Equal scores give equal weights: the mean of the values."),
        Example(f"attention(torch.zeros(1, 2, 1), torch.zeros(1, 2, 1), {_T}([[[1.0], [3.0]]]), causal=True).output",
                f"{_T}([[[1.0], [2.0]]])",
                "`causal=True`: query `i` attends to keys `j <= i` only; shapes are batch first, `(B, t, d)`."),
        Example(f"score('dot', {_T}([[[1.0, 2.0]]]), {_T}([[[3.0, 4.0]]]))", f"{_T}([[[11.0]]])",
                "A score function gives `(B, t_q, t_k)` scores: here `q . k = 1 * 3 + 2 * 4`."),
        Example(f"multihead_attention({_T}([[[1.0, 2.0]]]), {_T}([[[1.0, 2.0]]]), {_T}([[[1.0, 2.0]]]), "
                f"MultiHeadParams(w_q=torch.zeros(2, 2), w_k=torch.zeros(2, 2), "
                f"w_v={_T}([[1.0, 1.0], [0.0, 1.0]]), w_o=torch.eye(2), h=1))", f"{_T}([[[1.0, 3.0]]])",
                "Projections multiply on the right: `x W^V = [1, 1 + 2]`, not `W^V x = [3, 2]`."),
    ),
    "blocks": (
        Example(f"layer_norm({_T}([[[1.0, 3.0]]]), {_T}([2.0, 2.0]), {_T}([0.0, 1.0]), eps=1e-12)",
                f"{_T}([[[-2.0, 3.0]]])",
                "LayerNorm over the last axis with the biased variance (here 1), then gamma and beta."),
        Example(f"feed_forward({_T}([[[1.0, -1.0]]]), torch.eye(2), torch.zeros(2), torch.eye(2), torch.zeros(2))",
                f"{_T}([[[1.0, 0.0]]])", "`activation='relu'` by default: `max(0, x W_1 + b_1) W_2 + b_2`."),
        Example(f"feed_forward({_T}([[[1.0, -1.0]]]), torch.eye(2), torch.zeros(2), torch.eye(2), torch.zeros(2), "
                f"activation='gelu')", f"{_T}([[[0.84134, -0.15866]]])",
                "`activation='gelu'` is the exact, erf-based GELU.", 1e-5),
        Example(f"feed_forward({_T}([[[1.0, -1.0]]]), torch.eye(2), torch.zeros(2), torch.eye(2), torch.zeros(2), "
                f"activation='gelu_tanh')", f"{_T}([[[0.84119, -0.15881]]])",
                "`activation='gelu_tanh'` is its tanh approximation: close, not equal.", 1e-5),
        Example("count_parameters(ModelConfig(vocab_size=10, d_model=4, heads=2, d_ff=8, encoder_layers=1))", "212",
                "One layer: attention 4 (4 x 4 + 4) = 80, feed-forward 4 x 8 + 8 + 8 x 4 + 4 = 76, two "
                "LayerNorms 16; the token table 10 x 4 = 40; sinusoidal positions and a tied output layer add "
                "nothing."),
        Example("count_parameters(ModelConfig(vocab_size=10, d_model=4, heads=2, d_ff=8, encoder_layers=1, "
                "tied_output=False))", "252",
                "An untied output layer adds its own d_model x vocab_size matrix, without bias: 40 more."),
    ),
}


def namespace(impl: Any) -> dict[str, Any]:
    """The names an example may use: ``impl``'s operations, ``torch``, ``inf``, :class:`ModelConfig`
    and :class:`MultiHeadParams`."""
    names: dict[str, Any] = {"torch": torch, "inf": math.inf, "ModelConfig": ModelConfig,
                             "MultiHeadParams": MultiHeadParams}
    names.update({op: getattr(impl, op) for op in OPERATIONS if callable(getattr(impl, op, None))})
    return names


def agrees(got: Any, expected: Any, atol: float) -> bool:
    """Whether ``got`` is ``expected``: tensors of one shape within ``atol`` (infinities equal), else ``==``."""
    if isinstance(expected, torch.Tensor):
        return (isinstance(got, torch.Tensor) and got.shape == expected.shape
                and torch.allclose(got.detach().cpu().double(), expected.double(), rtol=0.0, atol=atol))
    return type(got) is type(expected) and got == expected


def run_example(example: Example, impl: Any) -> tuple[Any, Any]:
    """``(what the call returns on impl, the expected result)``, both evaluated from the example's text."""
    names = namespace(impl)
    return eval(example.call, names), eval(example.result, names)  # noqa: S307 - our own text
