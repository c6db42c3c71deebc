"""Scaling laws: the published fits of loss against model size, and compute-optimal training.

Everything here is arithmetic on published constants, in Python floats (float64):

* Kaplan et al. (2020), "Scaling Laws for Neural Language Models", eq. (1.1) and (1.2)
  (also Table 5): the test loss, in nats per token, of a model with ``N`` non-embedding
  parameters trained to convergence on enough data, ``L(N) = (N_c / N)^alpha_N`` with
  ``N_c = 8.8e13`` and ``alpha_N = 0.076``; of a large model trained with early stopping on
  ``D`` tokens, ``L(D) = (D_c / D)^alpha_D`` with ``D_c = 5.4e13`` and ``alpha_D = 0.095``.
  ``N`` there counts **non-embedding** parameters, ``N ~ 12 n_layer d_model^2`` (eq. 2.1,
  with ``d_attn = d_model`` and ``d_ff = 4 d_model``); the embedding table ``n_vocab x
  d_model`` and the learned positions ``n_ctx x d_model`` are left out. Kaplan's own
  compute-optimal allocation (section 6.1, eq. 6.6) grows ``N ~ C^0.73`` and the data
  ``D ~ C^0.27``, which the later paper contradicts.
* Training compute ``C ~ 6 N D`` floating-point operations: 2 per parameter and token
  for the forward pass, 4 for the backward pass (Kaplan et al. 2020, section 2.1;
  Hoffmann et al. 2022 use the same approximation with the total parameter count).
* Hoffmann et al. (2022), "Training Compute-Optimal Large Language Models"
  ("Chinchilla"), Table 2: compute-optimal ``N_opt ~ C^a`` and ``D_opt ~ C^b`` with
  ``a = 0.50, b = 0.50`` (approach 1, minimum over training curves), ``a = 0.49,
  b = 0.51`` (approach 2, IsoFLOP profiles), ``a = 0.46, b = 0.54`` (approach 3, the
  parametric fit); the rule of thumb of about 20 training tokens per parameter (their
  Table 3's approach-1 projections hold 20 to 22 tokens per parameter, 67B parameters and
  1.5T tokens for Gopher's budget of 5.76e23 FLOPs; Chinchilla itself, section 4, has 70B
  parameters trained on 1.4T tokens, 20 per parameter, for that budget); and the
  parametric fit of section 3.3, ``L(N, D) = E + A / N^alpha + B / D^beta`` with
  ``E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28`` (rounded as published).

The two papers measure losses on different data with different tokenizers (WebText2 with
GPT-2's BPE; MassiveText with SentencePiece), so their loss values are not comparable
with each other, only their shapes.

This module does not fit anything, does not model learning-rate schedules, batch sizes
or the critical batch size, ``L(N, D)`` of Kaplan's eq. (1.5), inference-time compute
beyond ``2 N`` FLOPs per token, or sparse (mixture-of-experts) models.
"""

from __future__ import annotations

import math

__all__ = [
    "CHINCHILLA_ANCHOR", "CHINCHILLA_EXPONENTS", "CHINCHILLA_FIT", "FLOPS_PER_PARAMETER_TOKEN", "KAPLAN_ALLOCATION",
    "KAPLAN_ALPHA_D", "KAPLAN_ALPHA_N", "KAPLAN_D_C", "KAPLAN_N_C", "TOKENS_PER_PARAMETER", "allocate",
    "chinchilla_loss", "compute_optimal", "embedding_parameters", "inference_flops_per_token", "kaplan_loss",
    "kaplan_loss_data", "non_embedding_parameters", "parameters_for_loss", "tokens_per_parameter",
    "training_compute", "training_regime",
]

#: Kaplan et al. (2020), eq. (1.1): L(N) = (N_c / N)^alpha_N, N non-embedding parameters, L in nats/token.
KAPLAN_N_C, KAPLAN_ALPHA_N = 8.8e13, 0.076
#: Kaplan et al. (2020), eq. (1.2): L(D) = (D_c / D)^alpha_D, D training tokens.
KAPLAN_D_C, KAPLAN_ALPHA_D = 5.4e13, 0.095
#: Kaplan et al. (2020), section 6.1: their compute-optimal exponents, N ~ C^0.73 and D ~ C^0.27.
KAPLAN_ALLOCATION = (0.73, 0.27)

#: FLOPs per parameter per training token: 2 forward, 4 backward (C ~ 6 N D).
FLOPS_PER_PARAMETER_TOKEN = 6
#: Hoffmann et al. (2022), Table 2: (a, b) in N_opt ~ C^a, D_opt ~ C^b, by estimation approach.
CHINCHILLA_EXPONENTS: dict[str, tuple[float, float]] = {
    "approach 1": (0.50, 0.50),
    "approach 2": (0.49, 0.51),
    "approach 3": (0.46, 0.54),
}
#: Hoffmann et al. (2022), Table 3 and section 4: about 20 training tokens per parameter.
TOKENS_PER_PARAMETER = 20.0
#: Chinchilla itself: 70B parameters trained on 1.4T tokens; the point allocations are scaled from.
CHINCHILLA_ANCHOR = (70e9, 1.4e12)
#: Hoffmann et al. (2022), section 3.3: E, A, B, alpha, beta of L(N, D) = E + A / N^alpha + B / D^beta.
CHINCHILLA_FIT = (1.69, 406.4, 410.7, 0.34, 0.28)


def _positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0 or math.isinf(value):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")


# --- Kaplan et al. (2020) ------------------------------------------------------------------


def kaplan_loss(n: float) -> float:
    """``L(N) = (N_c / N)^alpha_N``: the loss (nats/token) of ``n`` non-embedding parameters, data unlimited."""
    _positive(n=n)
    return (KAPLAN_N_C / n) ** KAPLAN_ALPHA_N


def kaplan_loss_data(d: float) -> float:
    """``L(D) = (D_c / D)^alpha_D``: the loss (nats/token) of a large model stopped early on ``d`` tokens."""
    _positive(d=d)
    return (KAPLAN_D_C / d) ** KAPLAN_ALPHA_D


def parameters_for_loss(loss: float) -> float:
    """The inverse of :func:`kaplan_loss`: ``N = N_c / L^(1 / alpha_N)`` non-embedding parameters."""
    _positive(loss=loss)
    return KAPLAN_N_C / loss ** (1 / KAPLAN_ALPHA_N)


def non_embedding_parameters(n_layer: int, d_model: int) -> int:
    """Kaplan's ``N = 12 n_layer d_model^2``: per layer ``4 d^2`` in the attention projections
    (``W_Q, W_K, W_V, W_O``) and ``8 d^2`` in the feed-forward network (``d_ff = 4 d``); biases and
    LayerNorm gains are left out, as in Kaplan's eq. (2.1)."""
    if n_layer < 1 or d_model < 1:
        raise ValueError(f"n_layer and d_model must be at least 1, got {n_layer} and {d_model}")
    return 12 * n_layer * d_model * d_model


def embedding_parameters(n_vocab: int, n_ctx: int, d_model: int) -> int:
    """The parameters Kaplan's ``N`` leaves out: the token table ``n_vocab x d_model`` and learned
    positions ``n_ctx x d_model`` (``n_ctx = 0`` for a model without learned positions)."""
    if n_vocab < 1 or n_ctx < 0 or d_model < 1:
        raise ValueError(f"need n_vocab >= 1, n_ctx >= 0, d_model >= 1, got {n_vocab}, {n_ctx}, {d_model}")
    return (n_vocab + n_ctx) * d_model


# --- compute and its allocation ------------------------------------------------------------


def training_compute(n: float, d: float) -> float:
    """``C = 6 N D``: training FLOPs of ``n`` parameters on ``d`` tokens."""
    _positive(n=n, d=d)
    return FLOPS_PER_PARAMETER_TOKEN * n * d


def tokens_per_parameter(n: float, d: float) -> float:
    """``D / N``: training tokens per parameter."""
    _positive(n=n, d=d)
    return d / n


def compute_optimal(c: float, ratio: float = TOKENS_PER_PARAMETER) -> tuple[float, float]:
    """``(N, D)`` with ``6 N D = c`` and ``D = ratio N``: ``N = sqrt(c / (6 ratio))``.

    With the default ``ratio = 20`` this is Hoffmann et al.'s rule of thumb; any other ratio
    gives the model that spends the same compute with that many tokens per parameter.
    """
    _positive(c=c, ratio=ratio)
    n = math.sqrt(c / (FLOPS_PER_PARAMETER_TOKEN * ratio))
    return n, ratio * n


def allocate(c: float, a: float, b: float, anchor: tuple[float, float] = CHINCHILLA_ANCHOR) -> tuple[float, float]:
    """``N(C) = N_0 (C / C_0)^a``, ``D(C) = D_0 (C / C_0)^b``: a power-law allocation through ``anchor = (N_0, D_0)``,
    ``C_0 = 6 N_0 D_0``. It stays on ``C = 6 N D`` for every ``C`` exactly when ``a + b = 1``."""
    _positive(c=c)
    n0, d0 = anchor
    growth = c / training_compute(n0, d0)
    return n0 * growth**a, d0 * growth**b


def inference_flops_per_token(n: float) -> float:
    """``2 N``: forward-pass FLOPs per generated token (one multiply-add per parameter)."""
    _positive(n=n)
    return 2 * n


def training_regime(n: float, d: float, tolerance: float = 1.25, heavy: float = 5.0) -> str:
    """Where ``D / N`` lies against :data:`TOKENS_PER_PARAMETER`: ``"compute-optimal"`` within a factor
    ``tolerance`` of it, ``"under-trained"`` below, ``"over-trained"`` above, ``"heavily over-trained"`` at
    ``heavy`` times it or more."""
    if not 1 <= tolerance < heavy:
        raise ValueError(f"need 1 <= tolerance < heavy, got {tolerance} and {heavy}")
    excess = tokens_per_parameter(n, d) / TOKENS_PER_PARAMETER
    if excess < 1 / tolerance:
        return "under-trained"
    if excess <= tolerance:
        return "compute-optimal"
    return "heavily over-trained" if excess >= heavy else "over-trained"


# --- Hoffmann et al. (2022) ----------------------------------------------------------------


def chinchilla_loss(n: float, d: float) -> float:
    """``L(N, D) = E + A / N^alpha + B / D^beta`` with Hoffmann et al.'s published constants (nats/token)."""
    _positive(n=n, d=d)
    e, a, b, alpha, beta = CHINCHILLA_FIT
    return e + a / n**alpha + b / d**beta
