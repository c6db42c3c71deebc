"""The positions family's operations: positional encodings, rotary embeddings, ALiBi biases.

Conventions (the same for every implementation; adapters convert):

* positions are a 1-D ``int64`` tensor ``(t,)`` of non-negative integers, counted from 0,
  on the device under test; results are on that device, in the ``dtype`` asked for;
* ``positional_encoding`` returns one row per position, ``(t, d_model)``; its feature
  index follows the documents: feature ``2i`` is the sine and ``2i + 1`` the cosine of
  frequency ``i`` (``kind="sinusoidal"``);
* ``rotary`` rotates the last axis of ``x (B, t, d)`` (``d`` even) in pairs:
  ``pairing="interleaved"`` pairs features ``(2i, 2i + 1)`` (the RoFormer paper),
  ``pairing="half"`` pairs ``(i, i + d/2)`` (the "rotate half" layout of GPT-NeoX and
  Llama); the angle of pair ``i`` at position ``m`` is ``m base^(-2i/d)``;
* ``alibi_bias`` returns the additive score biases ``(h, t_q, t_k)`` of ALiBi, one matrix
  per head, ``-m_h |i - j|`` (and ``-inf`` above the diagonal when ``causal``);
* ``alibi_attention`` is attention with that bias added to the scaled scores inside the
  softmax, with the paper's fixed slopes;
* ``learned_positions`` looks positions up in a learned table ``(n_max, d)`` that has no
  row past ``n_max - 1``; ``input_embedding`` is the input of the first layer, the token
  embedding (optionally scaled by ``sqrt(d_model)``) plus the position rows.

This module declares the operations only; :mod:`specformer.checked.positions` calls them
and checks what they return.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from specformer.protocol.base import Family, Operation
from specformer.protocol.capabilities import Convention

__all__ = ["AlibiAttentionImplementation", "CONVENTIONS", "MAX_LENGTHS", "AlibiImplementation", "FAMILY", "InputEmbeddingImplementation",
           "LearnedPositionsImplementation", "PositionalEncodingImplementation", "RotaryImplementation"]


class PositionalEncodingImplementation(Protocol):
    """Absolute positional encodings: a vector per position."""

    name: str

    def positional_encoding(self, kind: str, positions: torch.Tensor, d_model: int, *, dtype: torch.dtype,
                            **params: Any) -> torch.Tensor:
        """Encodings ``(t, d_model)`` of ``positions (t,)``, in ``dtype`` on ``positions.device``.

        ``kind="sinusoidal"`` (``params``: ``base``, default 10000):
        ``PE(pos, 2i) = sin(pos / base^(2i/d_model))``, ``PE(pos, 2i+1) = cos(...)``;
        ``kind="binary"``: feature ``i`` is bit ``i`` of ``pos`` (least significant first); a
        position of ``2^d_model`` or more has no encoding of its own: raise ``ValueError``, or give
        its ``d_model`` lowest bits.
        An implementation of one kind declares it (``encoding_kind`` in its capabilities):
        the suite then never asks for the other. One that computes only the paper's base
        declares ``sinusoidal_base = {"paper"}`` (it is then never passed a ``base``); one
        that reads a precomputed table of ``n`` rows declares ``encoding_max_length = {n}``
        (it is then asked only for sinusoidal positions below ``n``).
        """
        ...


class RotaryImplementation(Protocol):
    """Rotary position embeddings (RoPE) applied to queries or keys."""

    name: str

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """``x (B, t, d)`` with each feature pair rotated by its position's angle; same shape.

        One that computes only the RoFormer paper's base declares ``rope_base = {"paper"}``: the
        properties that draw another base (10, 500000, ...) then pass ``base=10000.0``.
        """
        ...


class AlibiImplementation(Protocol):
    """Attention with linear biases (ALiBi)."""

    name: str

    def alibi_bias(self, h: int, t_q: int, t_k: int, *, causal: bool = False, dtype: torch.dtype,
                   device: str) -> torch.Tensor:
        """Biases ``(h, t_q, t_k)``: ``-m_h |i - j|`` with the implementation's slopes ``m_h > 0``,
        ``-inf`` where ``j > i`` when ``causal``; in ``dtype`` on ``device``."""
        ...


class AlibiAttentionImplementation(Protocol):
    """Attention with the ALiBi bias applied inside the softmax."""

    name: str

    def alibi_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                        causal: bool = False) -> torch.Tensor:
        """``softmax(q k^T / sqrt(d_k) + B) v`` per head: ``q (B, h, t_q, d_k)``, ``k (B, h, t_k, d_k)``,
        ``v (B, h, t_k, d_v)``; returns ``(B, h, t_q, d_v)`` in the dtype of ``q``.

        ``B[head] = -m_head |i - j|`` with the paper's fixed slopes (``2^(-8 k / h)``, ``k = 1..h``,
        for ``h`` a power of two; for other ``h`` the ``n = 2^floor(log2 h)`` slopes of ``n``
        heads followed by the odd-placed slopes of ``2n`` heads); ``causal=True`` also masks
        keys ``j > i`` (rows and columns counted from the first query and key, also when
        ``t_q != t_k``; one that answers ``t_q = t_k`` only declares ``alibi_lengths = {"equal"}``). A form that
        differs by a constant per row (BLOOM's ``+m j``) gives the same weights under the
        causal mask only.
        """
        ...


class LearnedPositionsImplementation(Protocol):
    """A learned position table: one trainable row per position, up to its length."""

    name: str

    def learned_positions(self, positions: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """Rows ``table[positions]``: ``positions (t,)`` int64, ``table (n_max, d)``; returns ``(t, d)``
        in the table's dtype.

        The table has rows for positions ``0 .. n_max - 1`` only: a position ``>= n_max``
        or a negative one must raise an exception (``IndexError`` or ``ValueError`` are
        usual; any exception is a refusal), never wrap around (Python's ``table[-1]`` is the
        last row), clamp or return zeros.
        """
        ...


class InputEmbeddingImplementation(Protocol):
    """The input of the first layer: token embedding plus position encoding."""

    name: str

    def input_embedding(self, tokens: torch.Tensor, token_table: torch.Tensor, position_table: torch.Tensor, *,
                        scale: bool = False) -> torch.Tensor:
        """``x[b, i] = E[tokens[b, i]] * s + P[i]``: ``tokens (B, t)`` int64 below ``V``,
        ``token_table E (V, d_model)``, ``position_table P (n_max, d_model)`` with ``t <= n_max``;
        returns ``(B, t, d_model)``.

        ``s = sqrt(d_model)`` when ``scale`` (the original paper's convention, its section
        3.4; 000's section "Adding Positional Information" writes the plain sum), ``s = 1``
        otherwise (BERT, GPT-2). Positions count from 0.
        """
        ...


#: The table lengths ``encoding_max_length`` may declare: powers of two from 512 and the round lengths
#: in use (5000, the Annotated Transformer's ``max_len``), or ``"unlimited"`` (the default: no table).
MAX_LENGTHS: tuple[Any, ...] = ("unlimited", *sorted({*(2**k for k in range(9, 31)), 5000, 10**4, 10**5, 10**6,
                                                      10**7, 10**8, 10**9}))


#: The conventions an implementation of the positions family may declare (``Capabilities.conventions``).
CONVENTIONS: dict[str, Convention] = {
    "encoding_kind": Convention(("sinusoidal", "binary"), "the fixed encodings positional_encoding computes: "
                                "sinusoidal (sin and cos at geometric wavelengths) and binary (the bits of the position)"),
    "pairing": Convention(("interleaved", "half"), "which features rotary pairs: (2i, 2i + 1) as in the RoFormer "
                          "paper, or (i, i + d/2) as in GPT-NeoX and Llama's rotate_half"),
    "alibi_causal": Convention((False, True), "whether ALiBi (alibi_bias, alibi_attention) is used without (False) "
                               "or with (True) the causal mask; BLOOM's +m j bias is ALiBi's under the mask only"),
    "embedding_scale": Convention((False, True), "whether input_embedding multiplies the token rows by "
                                  "sqrt(d_model) (True, the original paper) or not (False, BERT and GPT-2)"),
    "alibi_lengths": Convention(("equal", "unequal"), "which query and key counts alibi_attention answers: "
                                "t_q = t_k only ('equal', self-attention without a cache, as BloomAttention "
                                "takes it) or also t_q != t_k ('unequal', aligned top-left as the protocol "
                                "says)"),
    "sinusoidal_base": Convention(("any", "paper"), "which bases positional_encoding(kind='sinusoidal') takes: "
                                  "any base > 0 passed as params['base'] ('any'), or only the paper's 10000, "
                                  "computed without a base parameter ('paper'); properties that draw another "
                                  "base then ask for 10000"),
    "rope_base": Convention(("any", "paper"), "which bases rotary takes: any base > 0 passed as base ('any'), "
                            "or only the RoFormer paper's 10000 ('paper'); properties that draw another base "
                            "then pass 10000"),
    "encoding_max_length": Convention(MAX_LENGTHS, "the positions positional_encoding(kind='sinusoidal') "
                                      "answers: every position ('unlimited', computed from the formula), or "
                                      "only positions below n for a precomputed table of n rows (declare the "
                                      "largest listed n not above the table's length); the properties then "
                                      "ask only for positions below n"),
}


#: The positions family, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family(
    "positions",
    (
        Operation("positional_encoding", PositionalEncodingImplementation),
        Operation("rotary", RotaryImplementation),
        Operation("alibi_bias", AlibiImplementation),
        Operation("alibi_attention", AlibiAttentionImplementation),
        Operation("learned_positions", LearnedPositionsImplementation),
        Operation("input_embedding", InputEmbeddingImplementation),
    ),
    CONVENTIONS,
)
